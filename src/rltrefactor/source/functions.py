"""The functions of one file as the execution stage (``execution``) reads them: their
definitions, parameters, and the calls in their bodies to the file's own functions.
"""

from __future__ import annotations

import collections
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from . import treesitter
from .syntax import DefinitionMap, DefinitionSite, parameter_names

if TYPE_CHECKING:

    from tree_sitter import Node, Tree

ExecutionKind = Literal["per-step", "per-request", "one-time", "offline", "unknown"]


@dataclass
class FileFunction:
    """One function of a file as the execution stage works on it: what the definition walk
    and the calls in its body say, and the verdict found so far (mutable while the map is made)."""

    name: str
    qualname: str
    owner: str | None  # the class a method belongs to
    parent: "FileFunction | None"  # the function a nested function is defined in
    decorators: str
    start_line: int
    end_line: int
    calls: set[str]  # callee keys: "Class.m" for self.m(), "f" for f()
    node: Node | None = None  # the function_definition
    parameters: tuple[str, ...] = ()
    # One entry per ``self.m()``/``cls.m()`` call in the body: (callee key, whether the
    # result is kept: assigned or returned rather than dropped).
    method_calls: list[tuple[str, bool]] = field(default_factory=list)
    # Calls anywhere in the file by this function's name (``f()``, ``obj.f()``), so that a
    # name mentioned more often than defined and called is known to be handed on.
    call_sites: int = 0
    # Module-level tables (dicts, lists, tuples of functions) this function calls an entry of: ``TABLE[key](...)``.
    dispatched: set[str] = field(default_factory=set)
    # Callee keys of ``calls`` whose every call here sits under a diagnostics gate or a
    # one-time guard (``under_gate``).
    gated: set[str] = field(default_factory=set)
    kind: ExecutionKind = "unknown"
    evidence: str = ""
    basis: str = ""  # what the verdict rests on (``context.execution.FunctionExecution.basis``)
    declared: bool = False  # the configuration names its verdict; nothing overrides it
    on_host: str = ""  # why its tensors live in host memory (a CPU backend's method), "" if not known


def code_text(tree: Tree) -> str:
    """The file's text with every comment blanked (lengths kept): a name mentioned only
    in a comment (a call commented out) is mentioned nowhere."""
    source = bytearray(tree.root_node.text or b"")
    for _, captures in treesitter.matches("(comment) @comment", tree.root_node):
        for node in captures["comment"]:
            source[node.start_byte:node.end_byte] = b" " * (node.end_byte - node.start_byte)
    return source.decode("utf-8", "replace")




_WORD = re.compile(r"\w+")


class Mentions:
    """How often each name occurs as a whole word in a file's code (``code_text``):
    definitions, calls, references and strings alike, comments not. Counted once, when
    first asked, so that a file whose functions raise no such question never pays for it."""

    def __init__(self, tree: Tree) -> None:
        self._tree = tree
        self._counts: collections.Counter[str] | None = None

    def __call__(self, name: str) -> int:
        if self._counts is None:
            self._counts = collections.Counter(_WORD.findall(code_text(self._tree)))
        return self._counts[name]


def text_of(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def file_functions(defs: DefinitionMap) -> list[FileFunction]:
    """Every function of the definition walk, parents before the functions nested in them."""
    made: dict[DefinitionSite, FileFunction] = {}
    for site in defs.functions:  # sorted: a parent comes before what it holds
        made[site] = FileFunction(
            name=site.name, qualname=site.definition.qualname, owner=site.owner,
            parent=made.get(site.parent) if site.parent is not None else None, decorators=site.decorators,
            start_line=site.definition.start_line, end_line=site.definition.end_line, calls=set(), node=site.node,
            parameters=parameter_names(site.node.child_by_field_name("parameters")) if site.node is not None else (),
        )
    return list(made.values())


_CALLS_QUERY = """
(call function: (identifier) @name)
(call function: (attribute object: (identifier) @object attribute: (identifier) @attribute)) @method_call
(call function: (subscript value: (identifier) @table))
(class_definition) @class
"""
# A module-level table of functions: ``ATTENTION = {"sdpa": sdpa_attention, "eager": eager_attention}``.
_TABLES_QUERY = """
(module (expression_statement (assignment left: (identifier) @table right: [(dictionary) (list) (tuple)] @entries)))
"""


def function_tables(root: Node) -> dict[str, frozenset[str]]:
    """Module-level dicts, lists and tuples by name, each with the bare names it holds as
    values (``{"a": f}`` holds ``f``; keys are not values)."""
    tables: dict[str, frozenset[str]] = {}
    for _, captures in treesitter.matches(_TABLES_QUERY, root):
        entries = captures["entries"][0]
        values = [pair.child_by_field_name("value") if pair.type == "pair" else pair for pair in entries.named_children]
        names = frozenset(text_of(value) for value in values if value is not None and value.type == "identifier")
        if names:
            tables[text_of(captures["table"][0])] = names
    return tables




_REGISTRATIONS_QUERY = "(call function: (attribute attribute: (identifier) @method) arguments: (argument_list . (_) @hook))"




def registered_names(root: Node, registrations: re.Pattern[str]) -> set[str]:
    """Names of the functions passed first to a method whose whole name ``registrations``
    matches: ``f`` in ``m.register_hook(f)``, ``m.register_hook(self.f)`` and
    ``m.register_hook(partial(f, ...))``."""
    found: set[str] = set()
    for _, captures in treesitter.matches(_REGISTRATIONS_QUERY, root):
        if not registrations.fullmatch(text_of(captures["method"][0])):
            continue
        hook: Node | None = captures["hook"][0]
        if hook is not None and hook.type == "call" and text_of(hook.child_by_field_name("function")).rpartition(".")[2] == "partial":
            arguments = hook.child_by_field_name("arguments")
            hook = arguments.named_children[0] if arguments is not None and arguments.named_children else None
        if hook is not None and hook.type == "identifier":
            found.add(text_of(hook))
        elif hook is not None and hook.type == "attribute":
            found.add(text_of(hook.child_by_field_name("attribute")))
    return found


def collect_calls(root: Node, functions: list[FileFunction], gates: re.Pattern[str] | None = None) -> None:
    """Fill each function's callee keys ("f" for ``f()``, "Class.m" for ``self.m()``)
    from the calls in its body. A call inside a nested function or class belongs to that
    definition (a class body's calls to none), a call in a definition's header
    (defaults, annotations) to none. ``gates``: names of diagnostics conditions; a key
    whose every call sits under one, or under a one-time guard (``under_gate``), is also
    in ``FileFunction.gated``."""
    # Scopes nest: (first byte, end byte, the function whose body it is, or None).
    scopes: list[tuple[int, int, FileFunction | None]] = []
    for function in functions:
        body = function.node.child_by_field_name("body") if function.node is not None else None
        if function.node is not None and body is not None:
            scopes.append((function.node.start_byte, body.start_byte, None))
            scopes.append((body.start_byte, body.end_byte, function))
    calls: list[tuple[int, str | None, str, bool, Node]] = []  # (byte, callee name or None for self.m(), name, result kept, node)
    dispatches: list[tuple[int, str]] = []  # (byte, table name)
    sites: collections.Counter[str] = collections.Counter()
    for _, captures in treesitter.matches(_CALLS_QUERY, root):
        if "class" in captures:
            scopes.extend((node.start_byte, node.end_byte, None) for node in captures["class"])
        elif "name" in captures:
            callee = captures["name"][0]
            calls.append((callee.start_byte, text_of(callee), "", False, callee))
            sites[text_of(callee)] += 1
        elif "table" in captures:
            dispatches.append((captures["table"][0].start_byte, text_of(captures["table"][0])))
        else:
            sites[text_of(captures["attribute"][0])] += 1
            if text_of(captures["object"][0]) in ("self", "cls"):
                kept = _result_kept(captures["method_call"][0])
                calls.append((captures["object"][0].start_byte, None, text_of(captures["attribute"][0]), kept,
                              captures["method_call"][0]))
    for function in functions:
        function.call_sites = sites[function.name]
    scopes.sort(key=lambda scope: (scope[0], -scope[1]))
    for position, table in dispatches:
        owner = _innermost_scope(scopes, position)
        if owner is not None:
            owner.dispatched.add(table)
    calls.sort(key=lambda call: call[0])
    open_scopes: list[tuple[int, int, FileFunction | None]] = []
    next_scope = 0
    ungated: set[tuple[int, str]] = set()  # (id of the function, key) called outside any gate
    for position, name, method, kept, node in calls:
        while next_scope < len(scopes) and scopes[next_scope][0] <= position:
            open_scopes.append(scopes[next_scope])
            next_scope += 1
        open_scopes = [scope for scope in open_scopes if scope[1] > position]
        if not open_scopes:
            continue
        owner = open_scopes[-1][2]  # the innermost: scopes open in nesting order
        if owner is None:
            continue
        if name is not None:
            key = name
        elif owner.owner is not None:
            key = f"{owner.owner}.{method}"
            owner.method_calls.append((key, kept))
        else:
            continue
        owner.calls.add(key)
        if gates is not None and owner.node is not None and under_gate(node, owner.node, gates):
            owner.gated.add(key)
        else:
            ungated.add((id(owner), key))
    for function in functions:
        function.gated -= {key for key in function.gated if (id(function), key) in ungated}


def under_gate(node: Node, function: Node, gates: re.Pattern[str]) -> bool:
    """``node`` sits in the body of an ``if``/``elif`` of ``function``, or the chosen value of
    a conditional expression, whose test names a gate affirmatively (``if self.debug:``;
    not ``if not debug:`` nor ``if x is None:``),
    or in code that runs once per instance: the body of a guard that its own body closes
    (``if not self._warmed_up: self._warmed_up = True; ...``, ``if self._buf is None:
    self._buf = ...``), the body of ``if not self.x:`` where the function's own body sets
    ``self.x = True`` after the statement holding it (a first call's set-up), the body of
    ``if key not in self.kv:`` that stores ``self.kv[key]``, itself or through a method of
    its class (once per key), after
    ``if self._warmed_up: return`` where the function's own body sets ``self._warmed_up =
    True``, after a return while a gate is off (``if not self.debug: return``), after a
    one-shot path's guard (``_after_flag_return``), or after a return on a cache hit of a
    cache the function's own body then fills (``if self._ctx is not None: return
    self._ctx``; ``self._ctx = ...``)."""
    child, parent = node, node.parent
    while parent is not None and parent != function:
        if parent.type == "conditional_expression" and parent.named_children[:1] == [child] \
                and len(parent.named_children) > 1 and _gated_condition(parent.named_children[1], gates):
            return True  # ``A if self.debug else B``: ``A`` is chosen only with the gate on
        if parent.type in ("if_statement", "elif_clause") and child == parent.child_by_field_name("consequence"):
            test = parent.child_by_field_name("condition")
            if test is not None and (_gated_condition(test, gates) or _closes_itself(test, child)
                                     or _fills_what_it_missed(test, child) or _closed_later(test, parent, function)):
                return True
        if parent.type == "block" and parent.parent == function and _after_flag_return(child, parent, gates):
            return True
        child, parent = parent, parent.parent
    return False


def in_allowing_with(node: Node, function: Node, allowing: re.Pattern[str]) -> bool:
    """``node`` sits, within ``function``, in the body of a ``with`` one of whose items
    calls a context manager ``allowing`` names (``with gpu_sync_allowed():``, also chosen
    by a conditional expression: ``with (nullcontext() if gloo else gpu_sync_allowed()):``)."""
    child, parent = node, node.parent
    while parent is not None and parent != function:
        if parent.type == "with_statement" and child == parent.child_by_field_name("body"):
            clause = next((c for c in parent.named_children if c.type == "with_clause"), None)
            callees = treesitter.captures("(call function: (_) @callee)", clause).get("callee", []) if clause else []
            if any(allowing.search(text_of(callee)) for callee in callees):
                return True
        child, parent = parent, parent.parent
    return False


_SELF_ATTRIBUTE = re.compile(r"self\.(\w+)")
_UNSET_FLAG = re.compile(r"not\s+self\.(\w+)|self\.(\w+)\s+is\s+None|not\s+hasattr\(\s*self\s*,\s*[\"'](\w+)[\"']\s*\)")
_SET_FLAG = re.compile(r"self\.(\w+)|getattr\(\s*self\s*,\s*[\"'](\w+)[\"']\s*(?:,[^)]*)?\)")


def _closes_itself(test: Node, body: Node) -> bool:
    """An ``if`` whose test, or one operand of an ``and`` of it, finds ``self.x`` unset, and
    whose body assigns ``self.x`` as one of its own statements: it runs once."""
    unset: set[str] = set()
    for operand in and_operands(test):
        found = _UNSET_FLAG.fullmatch(text_of(operand).strip())
        if found:
            unset.add(next(group for group in found.groups() if group))
    return bool(unset) and bool(unset & _assigned_here(body.named_children))


_MISSED = re.compile(r"(.+?)\s+not\s+in\s+self\.(\w+)")
_STORED = re.compile(r"self\.(\w+)\[(.+)\]")


def _fills_what_it_missed(test: Node, body: Node) -> bool:
    """``if key not in self.kv:`` (or an ``or`` of such misses) whose body stores
    ``self.kv[key] = ...`` for each, as its own statements: it runs once per key."""
    missed = [_MISSED.fullmatch(text_of(operand).strip()) for operand in _or_operands(test)]
    if not missed or not all(missed):
        return False
    stored: set[tuple[str, str]] = set()
    for statement in body.named_children:
        assignment = statement.named_children[0] if statement.type == "expression_statement" and statement.named_children else None
        left = assignment.child_by_field_name("left") if assignment is not None and assignment.type == "assignment" else None
        found = _STORED.fullmatch(text_of(left).strip()) if left is not None else None
        if found:
            stored.add((found.group(1), found.group(2).strip()))
    through_methods = filled_by_methods(body.named_children)
    return all((m.group(2), m.group(1).strip()) in stored or f"self.{m.group(2)}" in through_methods for m in missed if m)


_METHOD_CALL = re.compile(rb"(?<![\w.])self\.(\w+)\s*\(")
_ITEM_STORE = re.compile(rb"(?<![\w.])self\.(\w+)\[[^\]\n]*\]\s*=(?!=)")
_METHOD_DEPTH = 2  # ``run`` -> ``create_graph`` -> ``_capture_graph``


def filled_by_methods(statements: list[Node], depth: int = 0) -> frozenset[str]:
    """Containers (``self.graphs``) whose items a method of the statements' own class,
    called on ``self`` among the statements, assigns in its body, or in a method it calls
    on ``self`` in turn: ``if key not in self.graphs: self.create_graph(x)`` where
    ``create_graph`` ends with ``self.graphs[key] = graph`` fills what it missed, once per key.
    Methods are looked up by name in the class body that holds the statements; a name the
    class does not define (inherited, assigned) fills nothing."""
    if not statements or depth >= _METHOD_DEPTH:
        return frozenset()
    methods = _class_methods(statements[0])
    if not methods:
        return frozenset()
    called = {m.group(1).decode() for s in statements for m in _METHOD_CALL.finditer(s.text or b"")}
    filled: set[str] = set()
    for name in called:
        method = methods.get(name)
        body = method.child_by_field_name("body") if method is not None else None
        if body is None:
            continue
        filled.update("self." + m.group(1).decode() for m in _ITEM_STORE.finditer(body.text or b""))
        filled.update(filled_by_methods(body.named_children, depth + 1))
    return frozenset(filled)


def _class_methods(node: Node) -> dict[str, Node]:
    """The methods, by name, of the class whose body holds ``node`` (through its function)."""
    current: Node | None = node
    while current is not None and current.type != "function_definition":
        current = current.parent
    owner = current.parent if current is not None else None
    while owner is not None and owner.type in ("decorated_definition", "block"):
        owner = owner.parent
    if owner is None or owner.type != "class_definition":
        return {}
    block = owner.child_by_field_name("body")
    methods: dict[str, Node] = {}
    for child in block.named_children if block is not None else ():
        definition = child.child_by_field_name("definition") if child.type == "decorated_definition" else child
        if definition is not None and definition.type == "function_definition":
            methods[text_of(definition.child_by_field_name("name"))] = definition
    return methods


def _closed_later(test: Node, branch: Node, function: Node) -> bool:
    """``if not self.x:`` (a branch, however nested) whose function's own body, not a branch
    of it, assigns ``self.x = True`` after the statement that holds the branch."""
    found = re.fullmatch(r"not\s+self\.(\w+)", text_of(test).strip())
    body = function.child_by_field_name("body")
    if found is None or body is None:
        return False
    top = branch
    while top.parent is not None and top.parent != body:
        top = top.parent
    statements = body.named_children
    index = next((i for i, s in enumerate(statements) if s == top), None)
    return index is not None and found.group(1) in _assigned_here(statements[index + 1:], "True")


def _after_flag_return(statement: Node, body: Node, gates: re.Pattern[str] | None = None) -> bool:
    """``statement`` of a function's ``body`` follows ``if self.x: return ...`` (no
    ``else``), and the body itself, not a branch of it, assigns ``self.x = True`` after it;
    or it follows a return on a cache hit (``if self.x is not None: return self.x``, or
    through a local: ``x = self.x; if x is not None: return x``) and the body then fills
    the cache (``self.x = ...``), or on a key found (``if key in self.graphs: return``)
    that the body, or a method of the class it calls, then stores; or it follows ``if
    _save_path is None: return`` and reaches ``_save_path = None`` with no exit on the way;
    or it follows a return while a gate is off (``if not envs.DEBUG_METRICS: return``)."""
    statements = body.named_children
    index = next((i for i, s in enumerate(statements) if s == statement), None)
    for position, earlier in enumerate(statements[:index] if index is not None else ()):
        if earlier.type != "if_statement" or earlier.child_by_field_name("alternative") is not None:
            continue
        test, consequence = earlier.child_by_field_name("condition"), earlier.child_by_field_name("consequence")
        exits = consequence is not None and any(s.type == "return_statement" for s in consequence.named_children)
        if not exits or test is None:
            continue
        while test.type == "parenthesized_expression" and test.named_children:
            test = test.named_children[0]
        negated = test.child_by_field_name("argument") if test.type == "not_operator" else None
        if gates is not None and negated is not None and _gated_condition(negated, gates):
            return True  # ``if not envs.DEBUG_METRICS: return``: what follows runs with the gate on only
        later = statements[position + 1:]
        flag = _SET_FLAG.fullmatch(text_of(test).strip())
        if flag and next(g for g in flag.groups() if g) in _assigned_here(later, "True"):
            return True
        cached = _cache_hit(text_of(test).strip(), statements[:position])
        if cached is not None and cached in _assigned_here(later):
            return True
        pending = _PENDING.fullmatch(text_of(test).strip())
        if pending and body.parent is not None and cleared_once(statements[index:], pending.group(1) or pending.group(2), body.parent):
            return True  # ``if _save_path is None: return`` ... ``_save_path = None``: the one call that clears it
        member = _MEMBER.fullmatch(text_of(test).strip())
        if member and f"self.{member.group(1)}" in _stored_items(later) | filled_by_methods(later):
            return True  # ``if key in self.graphs: return key`` ... ``self._capture(key)`` filling it: once per key
    return False


_HIT = re.compile(r"(self\.)?(\w+)\s+is\s+not\s+None")
_MEMBER = re.compile(r".+?(?<!\bnot)\s+in\s+self\.(\w+)")  # ``key in self.graphs``, not ``key not in ...``
_PENDING = re.compile(r"((?:self\.)?\w+)\s+is\s+None|not\s+((?:self\.)?\w+)")
_LEAVES = frozenset({"return_statement", "raise_statement", "continue_statement", "break_statement"})


def cleared_once(statements: list[Node], pending: str, function: Node) -> bool:
    """``statements`` of ``function``'s body reach ``<pending> = None`` (or ``False``), one
    of them, with no return, raise, ``continue`` or ``break`` on the way, where ``pending``
    is ``self.x`` or a name the function declares ``global``, and nothing but construction
    (an ``__init__``, module level) ever sets it otherwise: after ``if _save_path is None:
    return`` they run on the one call that clears it. A value some other method sets again
    (a pending result each step hands on) is no such path."""
    body = function.child_by_field_name("body")
    if body is None or not pending.startswith("self.") and not any(
            s.type == "global_statement" and pending in {text_of(n) for n in s.named_children} for s in body.named_children):
        return False
    for statement in statements:
        assignment = statement.named_children[0] if statement.type == "expression_statement" and statement.named_children else None
        if (assignment is not None and assignment.type == "assignment" and text_of(assignment.child_by_field_name("left")) == pending
                and text_of(assignment.child_by_field_name("right")) in ("None", "False")):
            return _set_only_at_construction(pending, function)
        if statement.type in _LEAVES or _leaves(statement):
            return False
    return False


def _set_only_at_construction(pending: str, function: Node) -> bool:
    """Every assignment of ``pending`` in the file that gives it a value other than
    ``None``/``False`` sits at module level, in an ``__init__`` or in a method an
    ``__init__`` of the file calls on ``self`` (``self._init_fp8_state()``), or is none at all."""
    root = function
    while root.parent is not None:
        root = root.parent
    text = root.text or b""
    construction = {"__init__"} | {m.group(1).decode() for init in re.finditer(rb"def __init__\b", text)
                                    for m in _METHOD_CALL.finditer(_definition_text(root, init.start()))}
    written = re.escape(pending.encode()) if pending.startswith("self.") else rb"(?<![\w.])" + re.escape(pending.encode())
    for match in re.finditer(written + rb"\s*(?::[^=\n]*)?=(?!=)\s*([^\n]*)", text):
        if match.group(1).strip().split(b"#")[0].strip() in (b"None", b"False"):
            continue
        node = root.descendant_for_byte_range(match.start(), match.start())
        while node is not None and node.type != "function_definition":
            node = node.parent
        if node is not None and text_of(node.child_by_field_name("name")) not in construction:
            return False
    return True


def _definition_text(root: Node, start: int) -> bytes:
    """The text of the function whose ``def`` starts at byte ``start``."""
    node = root.descendant_for_byte_range(start, start)
    while node is not None and node.type != "function_definition":
        node = node.parent
    return (node.text or b"") if node is not None else b""


def _leaves(node: Node) -> bool:
    return any(child.type in _LEAVES or (child.type not in ("function_definition", "class_definition", "lambda") and _leaves(child))
               for child in node.named_children)


def _stored_items(statements: list[Node]) -> frozenset[str]:
    """``self.kv`` of each ``self.kv[...] = ...`` written anywhere in ``statements``."""
    return frozenset("self." + m.group(1).decode() for s in statements for m in _ITEM_STORE.finditer(s.text or b""))


def _cache_hit(test: str, before: list[Node]) -> str | None:
    """``x`` of a test that finds ``self.x`` set: ``self.x is not None``, or ``c is not
    None`` where a statement of ``before`` reads ``c = self.x``."""
    found = _HIT.fullmatch(test)
    if found is None:
        return None
    if found.group(1):
        return found.group(2)
    for statement in reversed(before):
        assignment = statement.named_children[0] if statement.type == "expression_statement" and statement.named_children else None
        if assignment is None or assignment.type != "assignment" or text_of(assignment.child_by_field_name("left")) != found.group(2):
            continue
        read = _SELF_ATTRIBUTE.fullmatch(text_of(assignment.child_by_field_name("right")).strip())
        return read.group(1) if read else None
    return None


def and_operands(test: Node) -> list[Node]:
    return _operands(test, "and")


def _or_operands(test: Node) -> list[Node]:
    return _operands(test, "or")


def _operands(test: Node, operator: str) -> list[Node]:
    """The operands of ``test`` joined by ``operator`` (``and`` / ``or``), however nested."""
    while test.type == "parenthesized_expression" and test.named_children:
        test = test.named_children[0]
    found = test.child_by_field_name("operator") if test.type == "boolean_operator" else None
    if found is None or text_of(found) != operator:
        return [test]
    sides = (test.child_by_field_name("left"), test.child_by_field_name("right"))
    return [operand for side in sides if side is not None for operand in _operands(side, operator)]


def _assigned_here(statements: list[Node], value: str | None = None) -> set[str]:
    """``x`` of each ``self.x = ...`` that is itself one of ``statements`` (with ``value``
    as its right side, when given)."""
    found: set[str] = set()
    for statement in statements:
        assignment = statement.named_children[0] if statement.type == "expression_statement" and statement.named_children else None
        if assignment is None or assignment.type != "assignment":
            continue
        left, right = assignment.child_by_field_name("left"), assignment.child_by_field_name("right")
        target = _SELF_ATTRIBUTE.fullmatch(text_of(left)) if left is not None else None
        if target and right is not None and (value is None or text_of(right) == value):
            found.add(target.group(1))
    return found


def _gated_condition(test: Node, gates: re.Pattern[str]) -> bool:
    """The test holds only when a gate is on: one operand of an ``and`` that is, every
    operand of an ``or``; a negation (``not debug``, ``profiler is None``) says nothing."""
    while test.type == "parenthesized_expression" and test.named_children:
        test = test.named_children[0]
    if test.type == "boolean_operator":
        left, right = test.child_by_field_name("left"), test.child_by_field_name("right")
        operands = [o for o in (left, right) if o is not None]
        either = test.child_by_field_name("operator") is not None and text_of(test.child_by_field_name("operator")) == "or"
        return (all if either else any)(_gated_condition(o, gates) for o in operands) and bool(operands)
    if test.type == "not_operator" or (test.type == "comparison_operator" and text_of(test).rstrip().endswith("is None")):
        return False
    # ``obj.__class__.__name__`` names a type, not the script's ``__name__``.
    return any(gates.search(word) for word in _GATE_WORD.findall(text_of(test)) if not (word.startswith("__") and word != "__name__"))


_GATE_WORD = re.compile(r"(?<![\w.])__name__|(?<=\.)(?!__)\w+|(?<![\w.])\w+")


def _innermost_scope(scopes: list[tuple[int, int, FileFunction | None]], position: int) -> FileFunction | None:
    """The function whose body holds ``position`` (None in a header, a class body or at
    module level); ``scopes`` sorted by start, outer before inner."""
    found: FileFunction | None = None
    for start, end, function in scopes:
        if start > position:
            break
        if position < end:
            found = function
    return found


def _result_kept(call: Node) -> bool:
    """The call's value is bound to a name or attribute, or returned; not dropped."""
    parent = call.parent
    if parent is None:
        return False
    if parent.type == "assignment":
        return parent.child_by_field_name("right") == call
    return parent.type == "return_statement"

