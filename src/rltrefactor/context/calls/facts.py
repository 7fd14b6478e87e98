"""What one file tells the call index: its definitions, imports, calls and returns.

Facts depend on the file's text alone (never on its path), so the call index caches
them by blob hash and re-reads only files whose content changed. They are read with a
single tree-sitter query per file (matched in C) and one sweep that gives every call,
assignment and return to the function whose body holds it; definitions and their
qualified names are those of the file's one definition walk (``syntax.walk_definitions``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...source import treesitter
from ...source.functions import in_allowing_with, under_gate
from ...source.syntax import DefinitionMap, parameter_names, walk_definitions
from ...source.tensor_places import DEFAULT_DEVICE_FACTORIES, RESULT_FIELDS, SAME_PLACE_FUNCTIONS, SAME_PLACE_METHODS

if TYPE_CHECKING:
    import tree_sitter
    from tree_sitter import Node

# A call's callee as written: a dotted chain (``self.runner.step``), or ``?.name`` when
# the receiver is an expression (``super().m``, ``items[0].m``) and only the name is known.
_CHAIN = re.compile(r"^[A-Za-z_][\w.]*$")
_HOST_CALL = re.compile(rb"(\.cpu|\.numpy|\.tolist|from_numpy|frombuffer|\.pin_memory)\s*\($|pin_memory\s*=\s*True|device\s*=\s*['\"]cpu['\"]")
_HOST_NAME = re.compile(r"(?i)(?<![a-z])(np|numpy|cpu|host|pinned)(?![a-z])")
_HOST_HINT = re.compile(rb"(?i)(?<![a-z])(np|numpy|cpu|host|pinned)(?![a-z])")
_FACTORY_HINT = re.compile(rb"torch\.(" + b"|".join(sorted(n.encode() for n in DEFAULT_DEVICE_FACTORIES | {"tensor", "as_tensor"})) + rb")\(")
_HOST_DEPTH = 8  # calls, subscripts and operands followed from a value
_WORD = re.compile(rb"[A-Za-z_]\w*")
# A queue's or a connection's read: ``q.get()``, ``q.get(timeout=1)``, ``q.get(True, 0.1)``,
# ``q.get_nowait()``, ``conn.recv()``; not a mapping's ``d.get(key)``, which names a key.
_QUEUE_READ = re.compile(rb"\.get\(\s*(\)|block\s*=|timeout\s*=|True\b|False\b)|\.get_nowait\(|\.recv")
_TYPE_NAME = re.compile(r"[A-Za-z_][\w.]*")
_WRAPPER_TYPES = frozenset("Optional Union typing.Optional typing.Union Final ClassVar Annotated None".split())


@dataclass(frozen=True)
class FunctionFacts:
    qualname: str  # Python-style: ``A.f``, ``f.<locals>.g``
    owner: str  # the class a method belongs to, "" for others
    parent: str  # the function a nested function is defined in, "" for others
    decorators: str
    start_line: int  # 1-based, decorators included
    end_line: int
    calls: tuple[str, ...]  # callees as written, see _CHAIN
    loop_calls: tuple[str, ...]  # the subset made inside a long-running loop
    params: tuple[tuple[str, str], ...]  # (name, annotation)
    locals: tuple[tuple[str, str], ...]  # (name, callee of ``name = C()`` or annotation)
    # "host", "none", "call:<callee>", "made:<callee>" (the module ``C(...).to(d)`` makes),
    # "name:<identifier>", "param:<parameter>" (a value keeping its place: ``_follows``) or "other"
    returns: tuple[str, ...]
    # Every parameter in order ("*" where only keywords follow; ``**kwargs`` left out).
    parameters: tuple[str, ...] = ()
    # (callee, arguments) of every call site of a callee that is passed a host value at one
    # of them at least, and of every construction (``constructs``); arguments in order:
    # "h" (host) or "-" positional, "name=h"/"name=-" keyword, "*" for an unpacking (what
    # follows it cannot be placed).
    call_args: tuple[tuple[str, str], ...] = ()
    # ``self`` attributes the function reads as a whole value, other than to call it or
    # read its members: "A" where the value is passed to a call, iterated or indexed (what
    # runs it then runs in this function's call), "A^" where it is returned, "A!" where it
    # escapes otherwise (assigned, stored, anything else).
    instance_uses: tuple[str, ...] = ()
    # Callees whose every call here sits under a gate that holds only in opt-in
    # diagnostics (``if self.validate_routing:``, ``if debug:``: ``cold-conditions``) or in
    # code that runs once per instance (a guard its body closes): ``under_gate``.
    gated_calls: tuple[str, ...] = ()
    # Parameters that default to ``None``, and those of them the body tests against
    # ``None``: where every call passes one, its fallback never runs (``CallContexts.passed_parameters``).
    none_defaults: tuple[str, ...] = ()
    none_tested: tuple[str, ...] = ()
    coroutine: bool = False  # ``async def``: its long-running loop may serve requests rather than steps
    # Parameters with a literal default (``norm_type=2``, ``padding=None``) the body compares
    # (``==``, ``!=``, ``is``): what runs only when one differs from its default runs as often
    # as the calls that give it (``CallContexts.withheld_parameters``).
    default_tested: tuple[str, ...] = ()
    # Callees whose every call here sits in the body of a ``with`` of a context manager
    # under which the engine allows host-device synchronizations (``sync-allowing-contexts``):
    # ``CallContexts.acknowledged``.
    allowed_calls: tuple[str, ...] = ()
    name: str = field(init=False, repr=False, compare=False)  # the last part of the qualname

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.qualname.rpartition(".")[2])


@dataclass(frozen=True)
class ClassFacts:
    qualname: str
    bases: tuple[str, ...]
    attributes: tuple[tuple[str, str], ...]  # (attribute, "call:<callee>" or annotation)
    # A dataclass's or NamedTuple's fields, in the order its constructor takes them; a
    # field whose default may hold a tensor ends with "!" (``None``, literals and
    # ``field(default_factory=list)`` hold none). Empty for any other class.
    fields: tuple[str, ...] = ()
    tensor_fields: tuple[str, ...] = ()  # those of them annotated with a tensor (``Optional[list[torch.Tensor]]``)


@dataclass(frozen=True)
class FileFacts:
    functions: tuple[FunctionFacts, ...]
    classes: tuple[ClassFacts, ...]
    imports: tuple[tuple[str, str, int], ...]  # (local name, dotted target, relative level)
    import_calls: tuple[str, ...]  # made when the module is imported (module level, class bodies)
    main_calls: tuple[str, ...]  # made under ``if __name__ == "__main__":``
    # (attribute, "h" or "-", function qualname, receiver) of every attribute the file's
    # functions write through any receiver (``batch.lens = ...``, ``self.lens = ...``,
    # ``setattr(o, "lens", ...)``, ``replace(o, lens=...)``) a value that may hold a tensor
    # (``None`` and literals do not): "h" where it is shown on the host; the receiver as
    # written where it is a name, else "". Attribute "*": a ``setattr`` whose name is
    # computed, which may write any attribute.
    field_writes: tuple[tuple[str, str, str, str], ...] = ()


EMPTY_FACTS = FileFacts((), (), (), (), ())


def facts_to_json(facts: FileFacts) -> dict[str, Any]:
    return {
        "functions": [[f.qualname, f.owner, f.parent, f.decorators, f.start_line, f.end_line, f.calls, f.loop_calls,
                       f.params, f.locals, f.returns, f.parameters, f.call_args, f.instance_uses, f.gated_calls,
                       f.none_defaults, f.none_tested, f.coroutine, f.default_tested, f.allowed_calls]
                      for f in facts.functions],
        "classes": [[c.qualname, c.bases, c.attributes, c.fields, c.tensor_fields] for c in facts.classes],
        "imports": facts.imports, "import_calls": facts.import_calls, "main_calls": facts.main_calls,
        "field_writes": facts.field_writes,
    }


def facts_from_json(data: dict[str, Any]) -> FileFacts:
    """The inverse of ``facts_to_json``; raises KeyError, TypeError or ValueError on a bad document."""
    functions = tuple(
        FunctionFacts(str(q), str(o), str(p), str(d), int(s), int(e), tuple(c), tuple(lc), _pairs(pa), _pairs(lo), tuple(r),
                      tuple(map(str, ps)), _pairs(ca), tuple(map(str, iu)), tuple(map(str, g)), tuple(map(str, nd)),
                      tuple(map(str, nt)), bool(co), tuple(map(str, dt)), tuple(map(str, al)))
        for q, o, p, d, s, e, c, lc, pa, lo, r, ps, ca, iu, g, nd, nt, co, dt, al in data["functions"]
    )
    classes = tuple(ClassFacts(str(q), tuple(b), _pairs(a), tuple(map(str, f)), tuple(map(str, t)))
                    for q, b, a, f, t in data["classes"])
    imports = tuple((str(n), str(t), int(level)) for n, t, level in data["imports"])
    return FileFacts(functions, classes, imports, tuple(data["import_calls"]), tuple(data["main_calls"]),
                     tuple((str(a), str(k), str(q), str(r)) for a, k, q, r in data["field_writes"]))


def _pairs(items: list[list[str]]) -> tuple[tuple[str, str], ...]:
    return tuple((str(a), str(b)) for a, b in items)


_QUERY = """
(function_definition) @function
(class_definition) @class
(call function: (_) @callee)
(import_statement) @import
(import_from_statement) @import
(assignment) @assign
(return_statement) @return
(while_statement condition: [(true) (integer) (not_operator)] body: (block) @loop)
((attribute object: (identifier) @self_object) @self_attribute (#eq? @self_object "self"))
"""

# Where a ``self.A`` read sits (its parent's type), when the read hands the instance on
# without letting it escape: the iterable of a loop, a subscript (a call's argument is
# told apart by the call, in ``_instance_use``).
_HANDED_ON = frozenset({"for_statement", "for_in_clause", "subscript"})
# Builtins that read what a value is without running it.
_TESTING_BUILTINS = frozenset({"isinstance", "issubclass", "hasattr", "getattr", "type", "id", "callable", "len", "repr", "str"})
# Reads that only test the value (``if self.visual is None``).
_TESTED = frozenset({"comparison_operator", "not_operator", "if_statement", "elif_clause", "while_statement",
                     "assert_statement", "conditional_expression"})




def _text(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def callee_of(node: Node) -> str:
    """The callee a call's function node names: a dotted chain as written, ``?.m`` for a
    method of an unnamed receiver, ``REG[]`` for an entry of a name (``REG[key](...)``:
    a registry's class or function), "" for anything else."""
    text = "".join(_text(node).split())
    if _CHAIN.match(text):
        return text
    value = node.child_by_field_name("value") if node.type == "subscript" else None
    if value is not None and value.type == "identifier":
        return _text(value) + "[]"
    name = node.child_by_field_name("attribute") if node.type == "attribute" else None
    return "?." + _text(name) if name is not None else ""


def type_name(annotation: str) -> str:
    """The class an annotation names: ``Optional["ModelRunner"]`` -> ``ModelRunner``; "" for none."""
    for found in _TYPE_NAME.findall(annotation):
        if found not in _WRAPPER_TYPES:
            return str(found)
    return ""


class _Builder:
    """Mutable facts of one definition while the sweep fills them."""

    def __init__(self, node: Node, qualname: str, owner: str, parent: str) -> None:
        self.node, self.qualname, self.owner, self.parent = node, qualname, owner, parent
        self.calls: list[str] = []
        self.loop_calls: list[str] = []
        self.locals: list[tuple[str, str]] = []
        self.made_through: set[str] = set()  # locals assigned ``C(...).to(...)``, ``fb.to(...)``
        self.attributes: list[tuple[str, str]] = []
        self.returns: list[str] = []
        self.host_names: set[str] = set()
        self.follows: dict[str, str] = {}  # local -> the parameter whose place it keeps (``_follows``)
        found = node.child_by_field_name("parameters") if node.type == "function_definition" else None
        self.parameters = frozenset(parameter_names(found)) - {"self", "cls", "*"}
        self.loops: list[tuple[int, int]] = []
        self.call_sites: list[tuple[str, str]] = []  # (callee, arguments), "" where none can be host
        self.instance_uses: list[str] = []
        self.gated: set[str] = set()  # callees with a call under a gate (``under_gate``)
        self.field_writes: set[tuple[str, str, str, str]] = set()  # ``FileFacts.field_writes``
        self.ungated: set[str] = set()  # ... and with one elsewhere
        self.allowed: set[str] = set()  # callees with a call where synchronizations are allowed (``in_allowing_with``)
        self.unallowed: set[str] = set()  # ... and with one elsewhere


def read_facts(tree: tree_sitter.Tree, gates: re.Pattern[str] | None = None,
               allowing: re.Pattern[str] | None = None) -> FileFacts:
    """The facts of the file whose tree-sitter ``tree`` is given; ``gates``: names of the
    conditions that hold only in opt-in diagnostics (``cold-conditions``), ``allowing``:
    of the context managers that allow synchronizations (``sync-allowing-contexts``);
    None: none."""
    captures = treesitter.captures(_QUERY, tree.root_node)
    functions, classes, scopes = _definitions(walk_definitions(tree, captures.get("function", []) + captures.get("class", [])))
    imports = tuple(item for node in captures.get("import", []) for item in _imports(node))
    events: list[tuple[int, str, Node]] = [(n.start_byte, "loop", n) for n in captures.get("loop", [])]
    events += [(n.start_byte, "call", n) for n in captures.get("callee", [])]
    events += [(n.start_byte, "assign", n) for n in captures.get("assign", [])]
    events += [(n.start_byte, "return", n) for n in captures.get("return", [])]
    events += [(n.start_byte, "self", n) for n in captures.get("self_attribute", [])]
    events.sort(key=lambda event: event[0])
    module = _Builder(tree.root_node, "<module>", "", "")
    main = _Builder(tree.root_node, "<main>", "", "")
    main_ranges = [(n.start_byte, n.end_byte) for n in tree.root_node.children if _is_main_block(n)]
    open_scopes: list[tuple[int, int, _Builder]] = []
    position = 0
    for byte, kind, node in events:
        while position < len(scopes) and scopes[position][0] <= byte:
            open_scopes.append(scopes[position])
            position += 1
        while open_scopes and open_scopes[-1][1] <= byte:
            open_scopes.pop()
        if open_scopes:
            owner = open_scopes[-1][2]
        else:
            owner = main if any(start <= byte < end for start, end in main_ranges) else module
        _record(owner, kind, node, byte, gates, allowing)
    facts = tuple(_function_facts(b) for b in functions)
    class_facts = tuple(ClassFacts(b.qualname, _bases(b.node), tuple(b.attributes), *_fields(b.node)) for b in classes)
    writes = sorted({write for b in functions for write in b.field_writes})
    return FileFacts(facts, class_facts, imports, tuple(module.calls), tuple(main.calls), tuple(writes))


def _definitions(defs: DefinitionMap) -> tuple[list[_Builder], list[_Builder], list[tuple[int, int, _Builder]]]:
    """Builders of every function and class of the file's definition walk, with its
    qualified names, and the byte range of each body (a call in a definition's header
    belongs to the scope around it). A method's ``parent`` is "": its class stands between."""
    functions: list[_Builder] = []
    classes: list[_Builder] = []
    scopes: list[tuple[int, int, _Builder]] = []
    for site in defs.sites:
        is_function = site.definition.kind == "function"
        parent = site.parent.definition.qualname if is_function and site.owner is None and site.parent is not None else ""
        builder = _Builder(site.node, site.definition.qualname, site.owner or "", parent)
        (functions if is_function else classes).append(builder)
        body = site.node.child_by_field_name("body")
        if body is not None:
            scopes.append((body.start_byte, body.end_byte, builder))
    scopes.sort(key=lambda scope: (scope[0], -scope[1]))
    return functions, classes, scopes


def _record(owner: _Builder, kind: str, node: Node, byte: int, gates: re.Pattern[str] | None = None,
            allowing: re.Pattern[str] | None = None) -> None:
    if kind == "loop":
        if owner.node.type == "function_definition" and _waits(node):
            owner.loops.append((node.start_byte, node.end_byte))
    elif kind == "call":
        callee = callee_of(node)
        if callee:
            owner.calls.append(callee)
            if any(start <= byte < end for start, end in owner.loops):
                owner.loop_calls.append(callee)
            if gates is not None and owner.node.type == "function_definition":
                (owner.gated if under_gate(node, owner.node, gates) else owner.ungated).add(callee)
            if allowing is not None and owner.node.type == "function_definition":
                (owner.allowed if in_allowing_with(node, owner.node, allowing) else owner.unallowed).add(callee)
            arguments = node.parent.child_by_field_name("arguments") if node.parent is not None else None
            owner.call_sites.append((callee, _arguments(arguments, owner, constructs(callee)) if arguments is not None else ""))
            if arguments is not None and owner.node.type == "function_definition" and callee.rpartition(".")[2] in _FIELD_SETTERS:
                _record_field_setter(owner, callee.rpartition(".")[2], arguments)
    elif kind == "assign":
        _record_assignment(owner, node)
    elif kind == "self":
        if owner.node.type == "function_definition":
            use = _instance_use(node)
            if use and use not in owner.instance_uses:
                owner.instance_uses.append(use)
    elif owner.node.type == "function_definition":
        owner.returns.append(_return_kind(owner, node))


def constructs(callee: str) -> bool:
    """A call that may build an instance (``Metadata(...)``, ``cls(...)``): its arguments
    are kept whole (``FunctionFacts.call_args``), as a dataclass's fields read them."""
    name = callee.rpartition(".")[2]
    return name == "cls" or name[:1].isupper()


def _arguments(arguments: Node, owner: _Builder, whole: bool = False) -> str:
    """The host-ness of each argument of one call (see ``FunctionFacts.call_args``); ""
    where no argument can be a host value (most calls: a text test skips them), unless
    ``whole``."""
    text = arguments.text or b""
    if not whole and not (_HOST_CALL.search(text) or _HOST_HINT.search(text) or _FACTORY_HINT.search(text)
                          or (owner.host_names and _names_any(text, owner.host_names))):
        return ""
    items = []
    for argument in arguments.named_children:
        if argument.type in ("list_splat", "dictionary_splat"):
            items.append("*")
        elif argument.type == "keyword_argument":
            value = argument.child_by_field_name("value")
            host = value is not None and _is_host(value, owner)
            items.append(f"{_text(argument.child_by_field_name('name'))}={'h' if host else '-'}")
        elif argument.type != "comment":
            items.append("h" if _is_host(argument, owner) else "-")
    return ",".join(items)


def _names_any(text: bytes, names: set[str]) -> bool:
    return any(word.decode("utf-8", "replace") in names for word in _WORD.findall(text))


def _is_coroutine(function: Node) -> bool:
    return any(child.type == "async" for child in function.children[:1])


def _waits(body: Node) -> bool:
    """A loop that waits for work: it awaits, or reads a queue, and does not stop once
    the queue is drained (``while not queue.empty():``)."""
    text = body.text or b""
    if not (b"await " in text or _QUEUE_READ.search(text)):
        return False
    condition = body.parent.child_by_field_name("condition") if body.parent is not None else None
    tested = condition.child_by_field_name("argument") if condition is not None and condition.type == "not_operator" else None
    function = tested.child_by_field_name("function") if tested is not None and tested.type == "call" else None
    return function is None or not callee_of(function).endswith((".empty", "?.empty"))


def _record_assignment(owner: _Builder, node: Node) -> None:
    left, right, annotation = (node.child_by_field_name(f) for f in ("left", "right", "type"))
    if left is None:
        return
    value = ""
    if right is not None and right.type == "call":
        value, through = _made_value(owner, right)
        if left.type == "identifier" and through:
            owner.made_through.add(_text(left))  # the module it makes, moved or cast: no call's returned value
    elif annotation is not None:
        value = type_name(_text(annotation))
    if value == "call:":
        value = ""
    in_function = owner.node.type == "function_definition"
    if left.type == "identifier":
        name = _text(left)
        if right is not None and _is_host(right, owner):
            owner.host_names.add(name)
        else:  # the last assignment in source order decides, as ``residency.locations`` reads it
            owner.host_names.discard(name)
        followed = _follows(right, owner) if right is not None and in_function else None
        if followed:
            owner.follows[name] = followed
        else:
            owner.follows.pop(name, None)
        if value:
            (owner.locals if in_function else owner.attributes).append((name, value))
    if in_function:
        written = [left] if left.type == "attribute" else [t for t in left.named_children if t.type == "attribute"] \
            if left.type in ("pattern_list", "tuple_pattern", "list_pattern") else []
        for target in written:  # an unpacked attribute takes an element no one places: "-"
            if target is left and right is not None and right.type in _TENSOR_FREE_VALUES:
                continue
            host = target is left and right is not None and _is_host(right, owner)
            _record_write(owner, _text(target.child_by_field_name("attribute")), host, target.child_by_field_name("object"))
    if left.type == "attribute" and in_function and _text(left.child_by_field_name("object")) == "self":
        attribute = "self." + _text(left.child_by_field_name("attribute"))
        if value:
            # ``self.x = C()`` types ``x`` for the whole class; the index gathers these per class.
            owner.locals.append((attribute, value))
        # ``self.blocks = nn.ModuleList([Block() for _ in range(n)])``: the elements' class.
        owner.locals.extend((attribute + "[]", "call:" + callee) for callee in (_container_elements(right) if right is not None else ()))


# ``nn.Module`` methods that return the module itself: ``C(...).to(device)`` is the ``C``.
_RETURNS_MODULE = frozenset({"to", "cuda", "cpu", "eval", "train", "half", "float", "bfloat16", "requires_grad_"})


def _module_made(call: Node) -> Node:
    """The construction a chain of module-returning calls starts from (``C(...)`` of
    ``C(...).to(dtype).eval()``), or ``call`` itself."""
    while True:
        function = call.child_by_field_name("function")
        receiver = function.child_by_field_name("object") if function is not None and function.type == "attribute" else None
        name = function.child_by_field_name("attribute") if receiver is not None and function is not None else None
        if receiver is None or receiver.type != "call" or name is None or _text(name) not in _RETURNS_MODULE:
            return call
        call = receiver


def _instance_use(node: Node) -> str:
    """How ``self.A`` (``node``) is read: "" for a call of it, a read of its members, a
    write to it or a test of it; else see ``FunctionFacts.instance_uses``."""
    attribute = _text(node.child_by_field_name("attribute"))
    parent = node.parent
    # ``self.A or default`` and ``self.A if c else B`` are ``self.A`` where they sit.
    while parent is not None and (parent.type in ("boolean_operator", "parenthesized_expression") or (
            parent.type == "conditional_expression" and parent.named_children[1:2] != [node])):  # not its condition
        node, parent = parent, parent.parent
    if parent is None:
        return ""
    if parent.type == "call" and parent.child_by_field_name("function") == node:
        return ""
    if parent.type == "attribute" and parent.child_by_field_name("object") == node:
        return ""
    if parent.type in ("assignment", "augmented_assignment") and parent.child_by_field_name("left") == node:
        return ""
    if parent.type in _TESTED:
        return ""
    if parent.type in ("keyword_argument", "argument_list"):
        arguments = parent.parent if parent.type == "keyword_argument" else parent
        call = arguments.parent if arguments is not None else None
        function = call.child_by_field_name("function") if call is not None and call.type == "call" else None
        called = callee_of(function).rpartition(".")[2] if function is not None else ""
        if called in _TESTING_BUILTINS:
            return ""
        # A class built with the instance may keep it and run it later, at any frequency.
        return attribute + "!" if not called or called[:1].isupper() else attribute
    if parent.type in _HANDED_ON and parent.child_by_field_name("body") != node:
        return attribute
    if parent.type == "return_statement":
        return attribute + "^"
    return attribute + "!"


def _container_elements(value: Node) -> list[str]:
    """Callees of the calls a container expression holds as its elements: ``[C() for _ in
    range(n)]``, ``nn.ModuleList([C(), D()])``, ``(C(), D())``, the values of a dict
    (``nn.ModuleDict({name: C() for name in names})``)."""
    if value.type == "call":
        arguments = value.child_by_field_name("arguments")
        items = [a for a in arguments.named_children if a.type != "comment"] if arguments is not None else []
        return _container_elements(items[0]) if len(items) == 1 else []
    if value.type in ("list", "tuple"):
        return [callee_of(f) for e in value.named_children if e.type == "call"
                for f in [e.child_by_field_name("function")] if f is not None and callee_of(f)]
    if value.type in ("list_comprehension", "generator_expression", "dictionary_comprehension"):
        body = value.child_by_field_name("body")
        if body is not None and body.type == "pair":  # ``{name: C() for name in names}``
            body = body.child_by_field_name("value")
        function = body.child_by_field_name("function") if body is not None and body.type == "call" else None
        return [callee_of(function)] if function is not None and callee_of(function) else []
    if value.type == "dictionary":  # ``{"q": C(), "k": D()}``
        pairs = [p.child_by_field_name("value") for p in value.named_children if p.type == "pair"]
        return [callee_of(f) for v in pairs if v is not None and v.type == "call"
                for f in [v.child_by_field_name("function")] if f is not None and callee_of(f)]
    return []


def _is_host(value: Node, owner: _Builder, depth: int = 0) -> bool:
    """Whether the function's code shows ``value`` in host memory, read as
    ``residency.locations`` reads it, in less depth: ``.cpu()``, ``.numpy()``, ``.tolist()``,
    ``.pin_memory()``, ``from_numpy``, a numpy call, ``device="cpu"``, ``pin_memory=True``,
    ``torch.device("cpu")``, ``.to("cpu")`` or ``.to(<a host name>)``, a cast that names no
    device or a same-place method (``.contiguous()``, ``.view(...)``, ``.sum()``) of a host
    value, a subscript of one, arithmetic with one, the ``.values`` of a same-place method's
    result, a list or comprehension of such values, and names assigned one (or named so:
    ``x_cpu``, ``batch.seq_lens_cpu``, ``getattr(batch, "seq_lens_cpu", None)``)."""
    if depth > _HOST_DEPTH:
        return False
    kind = value.type
    if kind == "attribute":
        field, of = _text(value.child_by_field_name("attribute")), value.child_by_field_name("object")
        if field in RESULT_FIELDS and of is not None and of.type == "call":
            return _is_host(of, owner, depth + 1)
        return bool(_HOST_NAME.search(field))
    if kind == "parenthesized_expression" and value.named_children:
        return _is_host(value.named_children[0], owner, depth + 1)
    if kind in ("list_comprehension", "generator_expression"):  # ``[t.cpu() for t in ts]``
        body = value.child_by_field_name("body")
        return body is not None and _is_host(body, owner, depth + 1)
    if kind in ("list", "tuple"):  # every element a host value
        elements = [e for e in value.named_children if e.type != "comment"]
        return bool(elements) and all(_is_host(e, owner, depth + 1) for e in elements)
    if kind == "string":
        return _text(value).strip("'\"") == "cpu"  # a device that names the host
    if kind == "identifier":
        name = _text(value)
        return name in owner.host_names or bool(_HOST_NAME.search(name))
    if kind == "subscript":
        subscripted = value.child_by_field_name("value")
        return subscripted is not None and _is_host(subscripted, owner, depth + 1)
    if kind == "binary_operator":  # a host tensor only combines with host values
        return any(_is_host(side, owner, depth + 1) for side in (value.child_by_field_name("left"), value.child_by_field_name("right"))
                   if side is not None)
    if kind != "call":
        return False
    function = value.child_by_field_name("function")
    arguments = value.child_by_field_name("arguments")
    head = (function.text or b"") + b"(" if function is not None else b""
    if _HOST_CALL.search(head) or (arguments is not None and _HOST_CALL.search(arguments.text or b"")):
        return True
    callee = callee_of(function) if function is not None else ""
    if callee.partition(".")[0] in ("np", "numpy"):
        return True
    given = [a for a in arguments.named_children if a.type != "comment"] if arguments is not None else []
    if callee == "getattr" and len(given) >= 2 and given[1].type == "string":
        return bool(_HOST_NAME.search(_text(given[1]).strip("'\"")))
    if callee == "torch.device":
        return bool(given) and _is_host(given[0], owner, depth + 1)
    if _allocates_on_host(callee, given, value, owner, depth):
        return True
    if function is None or function.type != "attribute":
        return False
    method, receiver = _text(function.child_by_field_name("attribute")), function.child_by_field_name("object")
    if receiver is None:
        return False
    if method == "to":
        device = next((a.child_by_field_name("value") for a in given if a.type == "keyword_argument"
                       and _text(a.child_by_field_name("name")) == "device"), None)
        if device is None and given and given[0].type != "keyword_argument":
            device = given[0]
        if device is not None and not (device.type == "attribute" and _text(device).startswith("torch.")):
            return _is_host(device, owner, depth + 1)  # ``.to(torch.int64)`` is a cast, read below
        return _is_host(receiver, owner, depth + 1)
    return method in SAME_PLACE_METHODS and _is_host(receiver, owner, depth + 1)


def _allocates_on_host(callee: str, given: list[Node], call: Node, owner: _Builder, depth: int) -> bool:
    """``torch.arange(n)``, ``torch.tensor(lens)``: a ``torch`` factory given no device, in a
    function that makes no other device the default. Not in ``__init__``, as a model is
    often built under ``with torch.device(dev):``, nor in the body of a ``with`` that names a
    device; ``torch.as_tensor(x)`` only of a literal or a host value, as it keeps a tensor's
    device (``torch.tensor`` of a tensor is a copy PyTorch warns against)."""
    root, _, leaf = callee.rpartition(".")
    if root != "torch" or leaf not in DEFAULT_DEVICE_FACTORIES | {"tensor", "as_tensor"}:
        return False
    if any(a.type == "keyword_argument" and _text(a.child_by_field_name("name")) == "device" for a in given):
        return False  # a named device is read by the ``device=`` test above, or is unknown
    if owner.node.type != "function_definition" or _text(owner.node.child_by_field_name("name")) == "__init__":
        return False
    if leaf == "as_tensor" and not (given and (given[0].type in _LITERAL_DATA or _is_host(given[0], owner, depth + 1))):
        return False
    ancestor = call.parent
    while ancestor is not None and ancestor is not owner.node:
        if ancestor.type == "with_statement" and b"device" in _with_items(ancestor):
            return False
        ancestor = ancestor.parent
    return True


# Data ``torch.as_tensor`` copies to the default device: Python numbers and containers.
_LITERAL_DATA = frozenset({"list", "tuple", "list_comprehension", "generator_expression", "integer", "float"})


def _with_items(statement: Node) -> bytes:
    """The text of a ``with`` statement's managers (``torch.device(dev)``, ``x.device``)."""
    clause = next((c for c in statement.named_children if c.type == "with_clause"), None)
    return (clause.text or b"") if clause is not None else b""


def _follows(value: Node, owner: _Builder, depth: int = 0) -> str | None:
    """The parameter whose place ``value`` keeps: the parameter itself (or a local last
    assigned such a value), a subscript of it, arithmetic or a comparison with it, a same-place method of it
    (``lens.unsqueeze(0)``, ``.to(torch.int64)``) or ``torch`` function of it (``torch.clamp(lens,
    max=n)``): a host tensor where the caller passes one. None otherwise."""
    if depth > _HOST_DEPTH:
        return None
    kind = value.type
    if kind == "identifier":
        name = _text(value)
        return name if name in owner.parameters else owner.follows.get(name)
    if kind == "parenthesized_expression" and value.named_children:
        return _follows(value.named_children[0], owner, depth + 1)
    if kind == "subscript":
        subscripted = value.child_by_field_name("value")
        return _follows(subscripted, owner, depth + 1) if subscripted is not None else None
    if kind in ("binary_operator", "comparison_operator"):  # ``lens + 1``, ``lens <= capacity``
        sides = (value.child_by_field_name("left"), value.child_by_field_name("right")) if kind == "binary_operator" \
            else tuple(value.named_children)
        for side in sides:
            found = _follows(side, owner, depth + 1) if side is not None else None
            if found:
                return found
        return None
    if kind != "call":
        return None
    function = value.child_by_field_name("function")
    arguments = value.child_by_field_name("arguments")
    if function is None or function.type != "attribute":
        return None
    method, receiver = _text(function.child_by_field_name("attribute")), function.child_by_field_name("object")
    given = [a for a in arguments.named_children if a.type not in ("comment", "keyword_argument")] if arguments is not None else []
    if receiver is not None and _text(receiver) == "torch":
        return _follows(given[0], owner, depth + 1) if method in SAME_PLACE_FUNCTIONS and given else None
    if receiver is None or method not in SAME_PLACE_METHODS and not (method == "to" and _casts_only(arguments)):
        return None
    return _follows(receiver, owner, depth + 1)


def _casts_only(arguments: Node | None) -> bool:
    """``.to(torch.int64)``, ``.to(dtype=...)``: a cast naming no device."""
    for argument in arguments.named_children if arguments is not None else ():
        if argument.type == "keyword_argument":
            if _text(argument.child_by_field_name("name")) != "dtype":
                return False
        elif argument.type != "comment" and not _text(argument).startswith("torch."):
            return False
    return True


def _return_kind(owner: _Builder, node: Node) -> str:
    value = node.named_children[0] if node.named_children else None
    if value is None or value.type == "none":
        return "none"
    if _is_host(value, owner):
        return "host"
    followed = _follows(value, owner) if value.type != "identifier" or _text(value) not in owner.parameters else None
    if followed:
        return "param:" + followed  # where the caller's argument lives: ``return torch.clamp(lens, max=n)``
    if value.type == "call":
        made, through = _made_value(owner, value)
        if through:
            return "made:" + made[5:]  # ``return C(...).to(device)``: the instance, not a value of the call's
        return made or "other"
    if value.type == "identifier":
        name = _text(value)
        made = _local_made(owner, name)
        if made and name in owner.made_through:
            return "made:" + made[5:]
        return made or "name:" + name
    return "other"


def _made_value(owner: _Builder, call: Node) -> tuple[str, bool]:
    """("call:<callee>" of what ``call`` makes, whether that came through a chain of
    module-returning calls): its own callee, or that of the construction the chain starts
    from, which may be a local's (``fb = C(...)`` then ``fb.to(device)``); "" where no
    callee reads."""
    own = _call_value(call.child_by_field_name("function"))
    function = _module_made(call).child_by_field_name("function")
    receiver = function.child_by_field_name("object") if function is not None and function.type == "attribute" else None
    method = function.child_by_field_name("attribute") if function is not None and receiver is not None else None
    value = _call_value(function)
    if receiver is not None and receiver.type == "identifier" and method is not None and _text(method) in _RETURNS_MODULE:
        value = _local_made(owner, _text(receiver)) or value
    return value, value != own


def _call_value(function: Node | None) -> str:
    """"call:<callee>" of a call's function node; "" where no callee reads."""
    callee = callee_of(function) if function is not None else ""
    return "call:" + callee if callee else ""


def _local_made(owner: _Builder, name: str) -> str:
    """The "call:<callee>" a local is assigned, where it is assigned once, by a call."""
    assigned = [v for n, v in owner.locals if n == name]
    return assigned[0] if len(assigned) == 1 and assigned[0].startswith("call:") else ""


def _function_facts(builder: _Builder) -> FunctionFacts:
    node = builder.node
    decorated = node.parent if node.parent is not None and node.parent.type == "decorated_definition" else None
    decorators = " ".join(_text(c) for c in decorated.children if c.type == "decorator") if decorated is not None else ""
    params: list[tuple[str, str]] = []
    parameters = node.child_by_field_name("parameters")
    for parameter in parameters.named_children if parameters is not None else ():
        annotation = parameter.child_by_field_name("type")
        if annotation is None:
            continue
        name = parameter.child_by_field_name("name") or next((c for c in parameter.named_children if c.type == "identifier"), None)
        if name is not None:
            params.append((_text(name), type_name(_text(annotation))))
    start = (decorated or node).start_point[0] + 1
    passed_host = {callee for callee, arguments in builder.call_sites if "h" in arguments}
    return FunctionFacts(
        builder.qualname, builder.owner, builder.parent, decorators, start, node.end_point[0] + 1,
        tuple(builder.calls), tuple(builder.loop_calls), tuple(params), tuple(builder.locals), tuple(builder.returns),
        parameter_names(parameters), tuple(site for site in builder.call_sites if site[0] in passed_host or constructs(site[0])),
        tuple(builder.instance_uses), tuple(sorted(builder.gated - builder.ungated)),
        *_none_defaults(node, parameters), _is_coroutine(node), _default_tested(node, parameters),
        tuple(sorted(builder.allowed - builder.unallowed)),
    )


# A default ``withheld_parameters`` can tell apart from what a caller passes.
_LITERALS = frozenset({"none", "true", "false", "integer", "float", "string", "unary_operator"})


def _literal_defaults(parameters: Node | None) -> list[tuple[str, str]]:
    """(name, node type of its default) of each parameter written with a literal default
    (``p=None``, ``p: int = 2``, ``policy="probs"``)."""
    found: list[tuple[str, str]] = []
    for parameter in parameters.named_children if parameters is not None else ():
        value = parameter.child_by_field_name("value")
        name = parameter.child_by_field_name("name")
        if parameter.type in ("default_parameter", "typed_default_parameter") and value is not None \
                and value.type in _LITERALS and name is not None:
            found.append((_text(name), value.type))
    return found


def _body_text(node: Node) -> bytes:
    body = node.child_by_field_name("body")
    return (body.text or b"") if body is not None else b""


def _default_tested(node: Node, parameters: Node | None) -> tuple[str, ...]:
    """Parameters with a literal default that the body compares (``p ==``, ``p !=``, ``p
    is``, ``p is not``, either side of the operator) or tests the truth of (``if p:``,
    ``if not p:``, ``if p and ...:``)."""
    text = _body_text(node)
    return tuple(name for name, _ in _literal_defaults(parameters) if _default_test(name).search(text))


@functools.lru_cache(maxsize=4096)
def _default_test(name: str) -> re.Pattern[bytes]:
    """A comparison of ``name`` (``p ==``, ``== p``, ``p is``) or a test of its truth
    (``if p:``, ``if not p and ...:``); compiled once per name."""
    written = re.escape(name.encode())
    return re.compile(rb"(?<![\w.])" + written + rb"\s*(?:[=!]=|\bis\b)|(?:[=!]=|\bis(?:\s+not)?)\s*" + written
                      + rb"(?![\w(])|\b(?:el)?if\s+(?:not\s+)?" + written + rb"\s*(?::|\band\b)")


@functools.lru_cache(maxsize=4096)
def _none_test(name: str) -> re.Pattern[bytes]:
    """``name is None`` or ``name is not None``; compiled once per name."""
    return re.compile(rb"(?<![\w.])" + re.escape(name.encode()) + rb"\s+is\s+(?:not\s+)?None\b")


def _none_defaults(node: Node, parameters: Node | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Parameters written ``p=None`` (or ``p: T = None``), and those of them the body tests
    with ``p is None`` or ``p is not None``."""
    text = _body_text(node)
    defaults = [name for name, kind in _literal_defaults(parameters) if kind == "none"]
    tested = [name for name in defaults if _none_test(name).search(text)]
    return tuple(defaults), tuple(tested)


# Calls that write a named attribute of an object: ``setattr(o, "x", v)``,
# ``object.__setattr__(self, "x", v)``, ``dataclasses.replace(o, x=v)``, ``t._replace(x=v)``.
_FIELD_SETTERS = frozenset({"setattr", "__setattr__", "replace", "_replace"})
_TENSOR_FREE_FACTORIES = frozenset({"list", "dict", "set", "tuple", "defaultdict", "OrderedDict", "deque"})


_TENSOR_WORD = re.compile(r"\bTensor\b")  # ``torch.Tensor``, ``Optional[list[Tensor]]``; not ``LogprobsTensors``
_TENSOR_FREE_VALUES = frozenset({"none", "true", "false", "integer", "float", "string", "concatenated_string"})


def _record_write(owner: _Builder, attribute: str, host: bool, receiver: Node | None) -> None:
    written = _text(receiver) if receiver is not None and receiver.type == "identifier" else ""
    owner.field_writes.add((attribute, "h" if host else "-", owner.qualname, written))


def _record_field_setter(owner: _Builder, setter: str, arguments: Node) -> None:
    given = [a for a in arguments.named_children if a.type != "comment"]
    if setter in ("setattr", "__setattr__"):
        name = given[1] if len(given) >= 3 else None
        content = [c for c in name.named_children if c.type == "string_content"] if name is not None and name.type == "string" else []
        if name is not None and name.type == "string" and len(content) == 1:
            _record_write(owner, _text(content[0]), False, given[0])
        elif name is not None:
            _record_write(owner, "*", False, given[0])  # a computed name: any attribute
        return
    # ``replace(o, x=v)`` writes ``o``'s fields, ``t._replace(x=v)`` those of ``t``.
    function = arguments.parent.child_by_field_name("function") if arguments.parent is not None else None
    receiver: Node | None = None
    if setter == "replace" and given and given[0].type != "keyword_argument":
        receiver = given[0]
    elif setter == "_replace" and function is not None and function.type == "attribute":
        receiver = function.child_by_field_name("object")
    for argument in given:
        value = argument.child_by_field_name("value") if argument.type == "keyword_argument" else None
        if value is None or value.type in _TENSOR_FREE_VALUES:
            continue
        _record_write(owner, _text(argument.child_by_field_name("name")), _is_host(value, owner), receiver)


def _fields(node: Node) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``ClassFacts.fields`` and ``tensor_fields`` of the class ``node``: its annotated
    class-body names, in order, where it is a dataclass (``@dataclass``,
    ``@dataclasses.dataclass(...)``) or a ``NamedTuple``; empty for any other class."""
    decorated = node.parent if node.parent is not None and node.parent.type == "decorated_definition" else None
    decorators = [_text(d) for d in decorated.named_children if d.type == "decorator"] if decorated is not None else []
    if not any(re.match(r"@\s*(\w+\.)*dataclass\b", d) for d in decorators) \
            and not any(base.rpartition(".")[2] == "NamedTuple" for base in _bases(node)):
        return (), ()
    body = node.child_by_field_name("body")
    found: list[str] = []
    tensors: list[str] = []
    for statement in body.named_children if body is not None else ():
        assignment = statement.named_children[0] if statement.type == "expression_statement" and statement.named_children else None
        if assignment is None or assignment.type != "assignment" or assignment.child_by_field_name("type") is None:
            continue
        left = assignment.child_by_field_name("left")
        annotation = _text(assignment.child_by_field_name("type"))
        if left is None or left.type != "identifier" or annotation.startswith(("ClassVar", "typing.ClassVar")):
            continue
        default = assignment.child_by_field_name("right")
        found.append(_text(left) + ("" if default is None or _tensor_free(default) else "!"))
        if _TENSOR_WORD.search(annotation):
            tensors.append(_text(left))
    return tuple(found), tuple(tensors)


def _tensor_free(default: Node) -> bool:
    """A default no tensor hides in: a literal, ``None``, or ``field(...)`` with a literal
    ``default`` or a container ``default_factory``."""
    if default.type in ("none", "true", "false", "integer", "float", "string", "concatenated_string", "tuple", "list", "dictionary", "set"):
        return not any(child.type == "call" for child in default.named_children)
    if default.type == "unary_operator":
        return True
    function = default.child_by_field_name("function") if default.type == "call" else None
    if function is None or callee_of(function).rpartition(".")[2] != "field":
        return False
    arguments = default.child_by_field_name("arguments")
    for argument in arguments.named_children if arguments is not None else ():
        if argument.type != "keyword_argument":
            continue
        name, value = _text(argument.child_by_field_name("name")), argument.child_by_field_name("value")
        if name == "default" and value is not None and not _tensor_free(value):
            return False
        if name == "default_factory" and (value is None or callee_of(value).rpartition(".")[2] not in _TENSOR_FREE_FACTORIES):
            return False
    return True


def _bases(node: Node) -> tuple[str, ...]:
    superclasses = node.child_by_field_name("superclasses")
    if superclasses is None:
        return ()
    # A generic base (``Processor[Info]``) is the class it parametrizes.
    written = (c.child_by_field_name("value") if c.type == "subscript" else c for c in superclasses.named_children)
    return tuple(callee_of(c) for c in written if c is not None and c.type in ("identifier", "attribute"))


def _imports(node: Node) -> list[tuple[str, str, int]]:
    found: list[tuple[str, str, int]] = []
    if node.type == "import_statement":
        for child in node.named_children:
            if child.type == "aliased_import":
                found.append((_text(child.child_by_field_name("alias")), _text(child.child_by_field_name("name")), 0))
            elif child.type == "dotted_name":
                dotted = _text(child)
                found.append((dotted.split(".")[0], dotted.split(".")[0], 0))
                if "." in dotted:
                    found.append((dotted, dotted, 0))
        return found
    module = node.child_by_field_name("module_name")
    source = _text(module)
    level = len(source) - len(source.lstrip("."))
    base = source.lstrip(".")
    for child in node.children_by_field_name("name"):
        name_node = child.child_by_field_name("name") if child.type == "aliased_import" else child
        alias_node = child.child_by_field_name("alias") if child.type == "aliased_import" else child
        name = _text(name_node)
        found.append((_text(alias_node), f"{base}.{name}" if base else name, level))
    return found


def _is_main_block(node: Node) -> bool:
    if node.type != "if_statement":
        return False
    condition = _text(node.child_by_field_name("condition"))
    return "__name__" in condition and "__main__" in condition
