"""Device reads that stand in for a missing host mirror.

Engines keep host copies of what the host needs each step (``seq_lens_cpu``,
``extend_seq_lens_cpu``, a length the metadata builder computed) and read the device only
when such a copy is absent::

    seq_lens = forward_batch.extend_seq_lens_cpu
    if seq_lens is None:
        seq_lens = forward_batch.extend_seq_lens.cpu().tolist()

    max_len = int(self._max_seqlen_k) if self._max_seqlen_k else int(seq_lens.max().item())

    if metadata.max_prefill_seq_len >= 0:   # -1: unknown, read the device
        ...

How often the read runs is how often the mirror is missing, which only the code that fills
the field shows: the finding's frequency is unknown, never per step. A mirror is a field
(``obj.name``, or a local last assigned one) the residency questions place on the host.

A parameter defaulting to ``None`` that the branch fills (``if max_q is None: max_q =
int(lens.max().item())``), or stands in for (``if metadata is not None: n = metadata.max_len
else: n = int(lens.max().item())``: both arms assign ``n``, one from the parameter), is the
caller's copy: the read runs where a caller leaves it out. Where every caller passes it,
the branch is dropped (``fallbacks``); where a caller that may run per step is seen
leaving it out (``execution.omitted_params``), the read runs per step; where no caller
shows either (``forward`` called through its module, a function no call names), how
often is unknown.
"""

from __future__ import annotations

import libcst as cst

from ..base import FileContext
from ..fallbacks import literal_value
from ..once import tested_against_none
from ..walk import subtree
from .locations import last_value, on_host, parameter_of


def missing_mirror(node: cst.CSTNode, ctx: FileContext) -> str:
    """Where ``node`` alone runs, as a clause (``the host copy `m` is missing``), for the
    host field whose absence ``node``'s branch is taken on (the body of
    ``if m is None:``, ``if m < 0:``, ``if m <= 0:``, ``if not m:`` that fills ``m``; the
    ``else`` of ``if m is not None:``, ``if m >= 0:``, ``if m:`` whose body reads ``m``, an
    ``elif`` chain after one, also with ``and`` further conditions; the matching value of
    a conditional expression), or for the parameter a caller leaves out; "" where none is."""
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            return ""
        if isinstance(ancestor, (cst.If, cst.IfExp)) and child in (ancestor.body, ancestor.orelse):
            tested = _absent_when(ancestor.test, taken_on_true=child is ancestor.body)
            if tested is not None and _is_mirror(tested, ancestor.test, ctx) and _copied(ancestor, tested, ctx):
                return f"the host copy `{ctx.code(tested).strip()}` is missing"
            if isinstance(tested, cst.Name) and _callers_copy(tested, ancestor, child, ctx):
                return f"a caller leaves out the parameter `{tested.value}`"
        child = ancestor
    return ""


def _callers_copy(tested: cst.Name, branch: cst.If | cst.IfExp, arm: cst.CSTNode, ctx: FileContext) -> bool:
    """``tested`` is a parameter of the enclosing function defaulting to ``None`` that the
    ``arm`` taken in its absence stands in for: the arm assigns the parameter itself, or
    assigns a local that the other arm takes from the parameter (``if out is None: idx =
    alloc(int(n.sum().item())) else: idx = out``); and no caller that may run per step is
    seen leaving it out."""
    found = parameter_of(tested, ctx)
    if found is None or not (isinstance(found[1].default, cst.Name) and found[1].default.value == "None"):
        return False
    if isinstance(branch, cst.IfExp) or not (tested.value in _assigned(arm) or _stands_in(tested.value, branch, arm)):
        return False
    where = ctx.execution.at(ctx.span(found[0].name).line)
    return where is not None and (where.qualname, tested.value) not in ctx.execution.omitted_params


def _assigned(arm: cst.CSTNode) -> set[str]:
    return {n.target.value for n in subtree(arm) if isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Name)}


def _stands_in(parameter: str, branch: cst.If, arm: cst.CSTNode) -> bool:
    """The two arms of ``if``/``else`` assign a same local, the other arm from ``parameter``:
    ``arm`` computes what a caller's argument would have carried."""
    if not isinstance(branch.orelse, cst.Else):
        return False  # an ``elif`` chain: the arms are not alternatives for one value
    other = branch.orelse.body if arm is branch.body else branch.body
    from_parameter = {
        target.target.value
        for node in subtree(other) if isinstance(node, cst.Assign)
        for target in node.targets if isinstance(target.target, cst.Name)
        and any(isinstance(n, cst.Name) and n.value == parameter for n in subtree(node.value))
    }
    return bool(from_parameter & _assigned(arm))


def _copied(branch: cst.If | cst.IfExp, tested: cst.BaseExpression, ctx: FileContext) -> bool:
    """A truth test is a copy's only where the code treats ``m`` as one: ``if m:`` picks an
    arm that reads it (``int(m) if m else ...``), ``if not m:`` fills it (``m = ...``). A
    flag of the configuration (``if not self.use_mla:``) picks a path, not a copy; a
    ``None`` or sentinel test is about a value by itself."""
    value = ctx.code(tested).strip()
    parent = ctx.parent(tested)
    if isinstance(parent, cst.Comparison):
        return True
    if isinstance(parent, cst.UnaryOperation):
        return any(isinstance(n, cst.AssignTarget) and ctx.code(n.target).strip() == value for n in subtree(branch.body))
    return _mentions(branch.body, value, ctx)  # a bare operand: ``if m:``, ``if m and ...:``


def _mentions(arm: cst.CSTNode, value: str, ctx: FileContext) -> bool:
    return any(isinstance(n, (cst.Name, cst.Attribute)) and ctx.code(n).strip() == value for n in subtree(arm))


def _absent_when(test: cst.BaseExpression, *, taken_on_true: bool) -> cst.BaseExpression | None:
    """The value whose absence takes the branch: ``m`` of ``m is None`` / ``not m`` /
    ``m < 0`` when the branch runs on a true test, of ``m is not None`` / ``m`` / ``m >= 0``
    (or an ``and`` holding one) when it runs on a false one."""
    if taken_on_true:
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return test.expression
        return tested_against_none(test, cst.Is) or _sentinel(test, missing=True)
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _absent_when(test.left, taken_on_true=False) or _absent_when(test.right, taken_on_true=False)
    if isinstance(test, (cst.Name, cst.Attribute)):
        return test
    return tested_against_none(test, cst.IsNot) or _sentinel(test, missing=False)


# (operator, bound) of a test that holds when a sentinel marks the mirror unknown (-1, or 0
# for a count), and of one that holds when it is known.
_UNKNOWN_WHEN = frozenset({(cst.LessThan, 0), (cst.LessThanEqual, 0), (cst.Equal, -1), (cst.LessThanEqual, -1)})
_KNOWN_WHEN = frozenset({(cst.GreaterThanEqual, 0), (cst.GreaterThan, -1), (cst.GreaterThan, 0), (cst.NotEqual, -1)})


def _sentinel(test: cst.BaseExpression, *, missing: bool) -> cst.BaseExpression | None:
    """``m`` of ``m < 0``, ``m <= 0``, ``m == -1`` (``missing``) or of ``m >= 0``, ``m > 0``,
    ``m != -1`` (not missing): a negative value, or no count, marks the mirror unknown."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    target = test.comparisons[0]
    bound = literal_value(target.comparator)
    if not isinstance(bound, int) or isinstance(bound, bool):
        return None
    holds = (type(target.operator), bound) in (_UNKNOWN_WHEN if missing else _KNOWN_WHEN)
    return test.left if holds else None


def _is_mirror(tested: cst.BaseExpression, test: cst.BaseExpression, ctx: FileContext) -> bool:
    """A field (``obj.name``), or a local last assigned one, that lives on the host. A field
    compared with a sentinel (``m >= 0``) needs no more: the test itself reads it on the host."""
    field = last_value(tested, ctx) if isinstance(tested, cst.Name) else tested
    if not isinstance(field, cst.Attribute):
        return False
    return _compares_sentinel(test, tested) or on_host(field, ctx)


def _compares_sentinel(test: cst.BaseExpression, tested: cst.BaseExpression) -> bool:
    if isinstance(test, cst.BooleanOperation):
        return _compares_sentinel(test.left, tested) or _compares_sentinel(test.right, tested)
    return any(_sentinel(test, missing=missing) is tested for missing in (True, False))
