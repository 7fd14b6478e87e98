"""Code that runs once, or once per key: behind a guard its own body closes, in the
branch that builds a cached value, or after a return on a cache hit of a cache the
function fills. ``context.runs_cold`` asks these; a finding of a per-step rule there is
dropped."""

from __future__ import annotations

import re
from typing import Callable, Iterator, Sequence

import libcst as cst

from ...library.names import Names
from .base import FileContext
from .guard_bodies import cleared_before_exit, guard_body
from .walk import bound_before, subtree


def is_one_time_guard(branch: cst.If, ctx: FileContext) -> bool:
    """The body runs once, then never again, because it keeps what it builds
    (``guard_bodies``): ``if self._buf is None: self._buf = ...`` (or through a local,
    ``buf = self._buf; if buf is None: ...; self._buf = buf``), ``if not
    self._initialized:`` or ``if not hasattr(self, "_buf"):`` with a body that writes
    state, ``if key not in self._cache: self._cache[key] = ...`` (once per key), ``if
    _MASK is None: _MASK = ...`` of a declared global. A cache rebuilt only when missing
    or stale (``if self._buf is None or self._buf.shape[0] < n: self._buf = ...``) counts
    too: every other operand of the ``or`` reads the cached attribute, so the body runs
    again only when what it caches changes; so does an ``or`` of such tests, each of a
    cached attribute or a local read from one, whose body stores them all. So does ``if
    cond and not self._checked:`` whose body sets ``self._checked``, and ``if x is None:`` after ``x = cache.get(key)``
    whose body stores into ``cache`` (once per key). A guard whose body fills a local or a
    parameter's default (``if alpha is None: alpha = ...``) runs on every call that needs it.
    So does ``if not self.x:``, however nested, where the function's own body (not a branch
    of it) sets ``self.x = True`` after the statement holding it: a first call's set-up."""
    test = branch.test
    if _closed_later(branch, ctx):
        return True
    if not _may_guard_once(test, ctx.names):
        return False
    body = guard_body(branch, ctx)
    if body is None:
        return False
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        # ``if cond and not self._checked: ...; self._checked = True``: the flag the body
        # sets closes the guard for good, whatever the other operands say.
        return any(flag in body.attributes for flag in _unset_flags(test))
    if isinstance(test, cst.BooleanOperation):
        operands = list(_or_operands(test))
        if all(_missed_container(operand, ctx) in body.containers for operand in operands):
            return True  # ``if key not in self.kv or key not in self.rope:`` filling both: once per key
        missing = [_missing_cached(operand, ctx) for operand in operands]
        if all(cached is not None and cached in body.attributes for cached in missing):
            return True  # ``if g is None or l is None:`` of locals read from ``self.g``, ``self.l``, storing both
        for index, operand in enumerate(operands):
            cached = _missing_attribute(operand)
            if cached is None or cached not in body.attributes:
                continue
            others = operands[:index] + operands[index + 1:]
            if all(_reads_attribute(other, cached) for other in others):
                return True
        return False
    emptied = _emptiness_tested(test)
    if emptied is not None:  # ``if len(state) == 0: state["step"] = ...``: once per key
        return emptied.value in body.filled and _kept_per_key(emptied, ctx)
    if isinstance(test, cst.UnaryOperation):  # ``not self.<flag>``, ``not hasattr(...)``
        return body.keeps_state
    missed = _missed_container(test, ctx)
    if missed is not None:
        return missed in body.containers
    if isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name):
        return (test.left.value in body.globals or _memo_lookup(test.left, ctx) in body.containers
                or _kept_attribute(test.left, ctx) in body.attributes)
    return _missing_attribute(test) in body.attributes


def _kept_attribute(name: cst.Name, ctx: FileContext) -> str | None:
    """``A`` where ``name = self.A`` or ``name = getattr(self, "A", default)`` just before:
    the local is the object's cached value, and storing ``self.A`` keeps what it builds."""
    value = bound_before(name, ctx)
    if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self":
        return value.attr.value
    if (isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "getattr"
            and len(value.args) >= 2 and isinstance(value.args[0].value, cst.Name) and value.args[0].value.value == "self"
            and isinstance(value.args[1].value, cst.SimpleString)):
        return value.args[1].value.evaluated_value if isinstance(value.args[1].value.evaluated_value, str) else None
    return None


def _emptiness_tested(test: cst.BaseExpression) -> cst.Name | None:
    """``x`` of ``len(x) == 0`` or ``not x``."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and isinstance(test.expression, cst.Name):
        return test.expression
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    target, call = test.comparisons[0], test.left
    if not (isinstance(target.operator, cst.Equal) and isinstance(target.comparator, cst.Integer)
            and target.comparator.value == "0"):
        return None
    if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "len" and len(call.args) == 1:
        argument = call.args[0].value
        return argument if isinstance(argument, cst.Name) else None
    return None


def _kept_per_key(name: cst.Name, ctx: FileContext) -> bool:
    """``name`` is an entry of a store the object keeps: ``self.state[p]`` or
    ``self.state.setdefault(p, {})`` (an optimizer's per-parameter state), so filling it
    fills it for good."""
    value = bound_before(name, ctx)
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "setdefault":
        value = value.func.value
    elif isinstance(value, cst.Subscript):
        value = value.value
    else:
        return False
    return isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self"


def _unset_flags(test: cst.BooleanOperation) -> Iterator[str]:
    """``x`` of each ``not self.x`` operand of an ``and``."""
    for operand in (test.left, test.right):
        if isinstance(operand, cst.BooleanOperation) and isinstance(operand.operator, cst.And):
            yield from _unset_flags(operand)
        elif (isinstance(operand, cst.UnaryOperation) and isinstance(operand.operator, cst.Not)
              and isinstance(operand.expression, cst.Attribute) and isinstance(operand.expression.value, cst.Name)
              and operand.expression.value.value == "self"):
            yield operand.expression.attr.value


def _memo_lookup(name: cst.Name, ctx: FileContext) -> str | None:
    """``cache`` (as written) where ``name = cache.get(key)`` just before: ``if name is None:``
    then builds the value once per key, when its body stores it back into ``cache``."""
    value = bound_before(name, ctx)
    if (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "get"
            and value.args):
        return ctx.code(value.func.value).strip()
    return None


def _may_guard_once(test: cst.BaseExpression, names: Names) -> bool:
    """``test`` has the shape of a one-time guard's (what its body must then keep aside)."""
    if isinstance(test, cst.BooleanOperation):
        return isinstance(test.operator, cst.Or) or any(True for _ in _unset_flags(test))
    if _emptiness_tested(test) is not None:
        return True
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = test.expression
        if isinstance(inner, cst.Attribute):
            return names.regex("one-time-flags").search(inner.attr.value) is not None
        return isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name) and inner.func.value == "hasattr"
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    operator, comparator = test.comparisons[0].operator, test.comparisons[0].comparator
    if isinstance(operator, cst.NotIn):  # ``key not in cache``: a memoised value
        return True
    missing = isinstance(operator, cst.Is) and isinstance(comparator, cst.Name) and comparator.value == "None"
    return missing and isinstance(test.left, (cst.Attribute, cst.Name))


def in_cached_value(node: cst.CSTNode, ctx: FileContext) -> bool:
    """``self.x = build() if self.x is None else self.x`` (or the ``is not None`` form with
    the branches swapped): ``node`` lies in the branch that builds the cached attribute, which
    runs only while the cache is missing, or stale when every other ``or`` operand of the
    test reads it, as for ``is_one_time_guard``."""
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.IfExp):
            builds = ancestor.body if child is ancestor.body else ancestor.orelse if child is ancestor.orelse else None
            cached = _cached_attribute(ancestor.test, missing=builds is ancestor.body)
            if builds is not None and cached is not None and cached in _assigned_by_value(ancestor, ctx):
                return True
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            return False
        child = ancestor
    return False


def after_cache_hit(node: cst.CSTNode, ctx: FileContext) -> bool:
    """``node`` follows, in its function's body, a return on a cache hit (``if key in
    CACHE: return CACHE[key]``, ``if (v := CACHE.get(key)) is not None: return v``) of a
    cache the function fills (``CACHE[key] = ...``, or a method of its class it then calls
    on ``self``: ``self._capture(key)`` storing ``self.graphs[key]``), or of an attribute it stores (``if
    self._map is not None and self._map.device == device: return self._map`` ... ``self._map
    = ...``): it runs once per key. So does code after ``if self._warmed_up: return`` in a
    function whose own body, not a branch of it, then sets ``self._warmed_up = True``: it
    runs once per instance; and code after ``if _save_path is None: return`` (a declared
    global, or ``self._pending``, that only construction sets) that reaches ``_save_path =
    None`` with no exit on the way: it runs on the one call that clears it. A flag set only
    in a branch (``if done: self._finished = True``) leaves the code running until then."""
    found = statement_of(node, ctx)
    if found is None:
        return False
    function, statements, top = found
    filled = _filled_containers(function, ctx)
    for index, statement in enumerate(statements[: statements.index(top)]):
        if isinstance(statement, cst.If) and statement.orelse is None:
            cache = _cache_hit(statement.test, ctx)
            kept = _kept_hit(statement.test, ctx)
            flag = _self_flag(statement.test)
            hit = (cache is not None and (cache in filled or cache in _filled_after(statement, ctx))) or (
                kept is not None and kept in _stored_attributes(function, ctx) and _hands_back(statement, kept, ctx)) or (
                flag is not None and flag in _flags_set(statements[index + 1:]))
            pending = _pending_state(statement.test, function) if not hit else None
            one_shot = pending is not None and cleared_before_exit(top, pending, ctx)
            body = guard_body(statement, ctx) if hit or one_shot else None
            if body is not None and body.exits:
                return True
    return False


def statement_of(
    node: cst.CSTNode, ctx: FileContext,
) -> tuple[cst.FunctionDef, Sequence[cst.BaseStatement], cst.BaseStatement] | None:
    """The function around ``node``, the statements of its own body, and the one of them
    that holds ``node``; None at module level or in a function written on one line."""
    function = ctx.enclosing_function(node)
    if function is None or not isinstance(function.body, cst.IndentedBlock):
        return None
    statements = function.body.body
    top = next((a for a in (node, *ctx.ancestors(node)) if ctx.parent(a) is function.body), None)
    return (function, statements, top) if isinstance(top, cst.BaseStatement) and top in statements else None


def _pending_state(test: cst.BaseExpression, function: cst.FunctionDef) -> str | None:
    """``G`` (a global the function declares) or ``self.G`` of a test that finds it unset:
    ``G is None``, ``not G``; None for any other test."""
    tested = tested_against_none(test, cst.Is)
    if tested is None and isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        tested = test.expression
    if isinstance(tested, cst.Attribute) and isinstance(tested.value, cst.Name) and tested.value.value == "self":
        return f"self.{tested.attr.value}"
    if not isinstance(tested, cst.Name):
        return None
    declared = {name.name.value for node in subtree(function.body) if isinstance(node, cst.Global) for name in node.names}
    return tested.value if tested.value in declared else None


def _filled_after(statement: cst.If, ctx: FileContext) -> frozenset[str]:
    body = guard_body(statement, ctx)
    return body.filled_after if body is not None else frozenset()


def _closed_later(branch: cst.If, ctx: FileContext) -> bool:
    """``if not self.x:`` whose function's own body sets ``self.x = True`` after the
    statement holding the branch (the tree-sitter twin: ``source.functions._closed_later``)."""
    test = branch.test
    if not (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)):
        return False
    flag = _self_flag(test.expression)
    function = ctx.enclosing_function(branch)
    if flag is None or function is None or not isinstance(function.body, cst.IndentedBlock):
        return False
    statements = function.body.body
    top = next((a for a in (branch, *ctx.ancestors(branch)) if ctx.parent(a) is function.body), None)
    return top in statements and flag in _flags_set(statements[statements.index(top) + 1:])


def _self_flag(test: cst.BaseExpression) -> str | None:
    """``x`` of a test ``self.x`` or ``getattr(self, "x", ...)``: a flag found set."""
    if isinstance(test, cst.Attribute) and isinstance(test.value, cst.Name) and test.value.value == "self":
        return test.attr.value
    if (isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "getattr"
            and len(test.args) >= 2 and isinstance(test.args[0].value, cst.Name) and test.args[0].value.value == "self"
            and isinstance(test.args[1].value, cst.SimpleString)):
        return test.args[1].value.raw_value
    return None


def _flags_set(statements: Sequence[cst.BaseStatement]) -> set[str]:
    """``x`` of each ``self.x = True`` among ``statements`` themselves (not in their branches)."""
    found: set[str] = set()
    for statement in statements:
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Assign) and isinstance(small.value, cst.Name) and small.value.value == "True":
                found.update(target.target.attr.value for target in small.targets
                             if isinstance(target.target, cst.Attribute) and isinstance(target.target.value, cst.Name)
                             and target.target.value.value == "self")
    return found


def _kept_hit(test: cst.BaseExpression, ctx: FileContext) -> str | None:
    """The attribute a test finds a cached value in: ``self.A is not None``, or ``v is not
    None`` after ``v = self.A`` (``_kept_attribute``), first of an ``and`` whose other
    operands check that the value still fits (``and cache.device == device``)."""
    while isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        test = test.left
    left = tested_against_none(test, cst.IsNot)
    if isinstance(left, cst.Attribute) and isinstance(left.value, cst.Name) and left.value.value == "self":
        return left.attr.value
    return _kept_attribute(left, ctx) if isinstance(left, cst.Name) else None


def _hands_back(branch: cst.If, attribute: str, ctx: FileContext) -> bool:
    """The branch returns what it found cached: its code reads ``self.attribute`` or the
    local the test read it through."""
    left = branch.test
    while isinstance(left, cst.BooleanOperation):
        left = left.left
    names = {f"self.{attribute}"} | ({left.left.value} if isinstance(left, cst.Comparison) and isinstance(left.left, cst.Name) else set())
    returned = [n.value for n in subtree(branch.body) if isinstance(n, cst.Return) and n.value is not None]
    return any(re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", ctx.code(value)) for value in returned for name in names)


def _stored_attributes(function: cst.FunctionDef, ctx: FileContext) -> frozenset[str]:
    """Attributes the function assigns (``A`` of ``self.A = ...``)."""
    return _once_per_function("_stored_attributes", function, ctx, lambda: frozenset(
        target.target.attr.value
        for node in subtree(function.body) if isinstance(node, cst.Assign)
        for target in node.targets
        if isinstance(target.target, cst.Attribute) and isinstance(target.target.value, cst.Name)
        and target.target.value.value == "self"
    ))


def _once_per_function(
    key: str, function: cst.FunctionDef, ctx: FileContext, read: Callable[[], frozenset[str]],
) -> frozenset[str]:
    """``read()`` for ``function``, kept in the file context under ``key``: read once."""
    cache: dict[int, frozenset[str]] = ctx.__dict__.setdefault(key, {})
    found = cache.get(id(function))
    if found is None:
        found = cache[id(function)] = read()
    return found


def _cache_hit(test: cst.BaseExpression, ctx: FileContext) -> str | None:
    """The cache (as written) a test finds a value in: ``key in CACHE``, ``CACHE.get(k) is
    not None``, ``(v := CACHE.get(k)) is not None``, or ``v is not None`` after ``v = CACHE.get(k)``."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
    if isinstance(operator, cst.In):
        return ctx.code(right).strip()
    present = tested_against_none(test, cst.IsNot)
    left = present.value if isinstance(present, cst.NamedExpr) else present
    if isinstance(left, cst.Name):
        return _memo_lookup(left, ctx)
    if isinstance(left, cst.Call) and isinstance(left.func, cst.Attribute) and left.func.attr.value == "get":
        return ctx.code(left.func.value).strip()
    return None


def _filled_containers(function: cst.FunctionDef, ctx: FileContext) -> frozenset[str]:
    """Containers (as written) whose items the function assigns: ``CACHE`` of ``CACHE[k] = v``."""
    return _once_per_function("_filled_containers", function, ctx, lambda: _assigned_items(function, ctx))


def _assigned_items(function: cst.FunctionDef, ctx: FileContext) -> frozenset[str]:
    return frozenset(
        ctx.code(target.target.value).strip()
        for node in subtree(function.body) if isinstance(node, cst.Assign)
        for target in node.targets if isinstance(target.target, cst.Subscript)
    )


def _cached_attribute(test: cst.BaseExpression, *, missing: bool) -> str | None:
    """The attribute ``test`` finds missing (``missing``) or present, where the test reads
    nothing but that attribute in its other ``or`` operands."""
    if not missing:
        present = tested_against_none(test, cst.IsNot)
        return present.attr.value if isinstance(present, cst.Attribute) else None
    operands = list(_or_operands(test))
    for index, operand in enumerate(operands):
        cached = _missing_attribute(operand)
        if cached is not None and all(_reads_attribute(o, cached) for o in operands[:index] + operands[index + 1:]):
            return cached
    return None


def _assigned_by_value(value: cst.BaseExpression, ctx: FileContext) -> set[str]:
    """The attributes an assignment whose whole value is ``value`` writes (``self.x = value``)."""
    parent = ctx.parent(value)
    if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is value:
        targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
        return {t.attr.value for t in targets if isinstance(t, cst.Attribute)}
    return set()


def _missed_container(test: cst.BaseExpression, ctx: FileContext) -> str | None:
    """``C`` of ``key not in C``, as written: the test of a cache miss."""
    comparison = test.comparisons[0] if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 else None
    if comparison is None or not isinstance(comparison.operator, cst.NotIn):
        return None
    return ctx.code(comparison.comparator).strip()


def _or_operands(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        yield from _or_operands(test.left)
        yield from _or_operands(test.right)
    else:
        yield test


def tested_against_none(test: cst.BaseExpression, operator: type[cst.Is] | type[cst.IsNot]) -> cst.BaseExpression | None:
    """``x`` of ``x is None`` (``operator`` ``cst.Is``) or ``x is not None`` (``cst.IsNot``)."""
    if (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, operator)
            and isinstance(test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None"):
        return test.left
    return None


def _missing_attribute(test: cst.BaseExpression) -> str | None:
    """``self.x is None``: the attribute found missing."""
    tested = tested_against_none(test, cst.Is)
    return tested.attr.value if isinstance(tested, cst.Attribute) else None


def _missing_cached(test: cst.BaseExpression, ctx: FileContext) -> str | None:
    """``self.x is None``, or ``x is None`` of a local last assigned ``self.x``: the cached
    attribute found missing."""
    tested = tested_against_none(test, cst.Is)
    if isinstance(tested, cst.Attribute):
        return tested.attr.value
    return _kept_attribute(tested, ctx) if isinstance(tested, cst.Name) else None


def _reads_attribute(test: cst.BaseExpression, name: str) -> bool:
    return any(isinstance(node, cst.Attribute) and node.attr.value == name for node in subtree(test))
