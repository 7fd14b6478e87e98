"""Where code runs: every function of a file is per-step, one-time, offline or unknown.

A stage of its own, after parsing and before matching. It reads the file's tree-sitter
tree (already built for the definition map), never LibCST, so it costs one walk of a
tree the engine has anyway. Every verdict carries its evidence, read from the code:

- *per-step*: ``forward``/``__call__`` of a class, functions named by a per-step verb
  (``hot-functions``), kernels (``@torch.compile``, ``@triton.jit``), functions run
  under ``torch.inference_mode``/``no_grad``, and every function of the file that one
  of those calls (``self.m()`` in the same class, ``f()`` in the same module);
- *one-time*: construction, loading, warm-up, capture, compile, registration and
  teardown (``matchers.context.is_setup_name``), cached functions (``functools.cache``),
  and private helpers that only one-time functions of the file call;
- *offline*: tests, benchmarks, tuning/autotune, profiling, debugging, examples and a
  script's ``main`` — and everything in files under ``cold-paths``;
- *unknown*: none of these. Device-residency rules apply to per-step and unknown code.

Statement-level one-time code (``if not self._initialized:``) is recognised where the
matchers ask, in ``matchers.context``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Literal

from .syntax import DEFINITION_HOLDERS

if TYPE_CHECKING:
    import tree_sitter
    from tree_sitter import Node, Tree

    from .callindex import FileContexts


# A function is setup code when one of the words of its name (split at '_') is here.
SETUP_WORDS = frozenset(
    "init initialize setup warmup profile capture dummy register compile benchmark "
    "debug dump repr shutdown close teardown finalize reset weights sleep wake preprocess".split()
)
# Dunder methods that run at construction, teardown or when printing, never per step.
SETUP_DUNDERS = frozenset(
    "init post_init new del repr str format getstate setstate reduce reduce_ex enter exit".split()
)
_NAMED_SETUP = re.compile(
    r"^_*((allocate|alloc|make|create)_\w*(buffer|cache|workspace|tensor)s?"
    r"|load_(model|weights|state_dict|checkpoint)\w*)$"
)


def is_setup_name(name: str) -> bool:
    if name.startswith("__") and name.endswith("__"):
        return name[2:-2] in SETUP_DUNDERS
    words = [w for w in name.lower().split("_") if w]
    if "warm" in words and "up" in words:
        return True
    return any(w in SETUP_WORDS for w in words) or bool(_NAMED_SETUP.match(name))


ExecutionKind = Literal["per-step", "one-time", "offline", "unknown"]
COLD_KINDS: frozenset[str] = frozenset({"one-time", "offline"})

# Names of functions that run on every step, launch or request; extended by the
# ``hot-functions`` configuration key (regular expressions matched against the name).
DEFAULT_HOT_FUNCTIONS = (
    r"forward", r"_?forward_\w+", r"__call__", r"step", r"\w+_step", r"_?step_\w+",
    r"_?execute_model", r"_?execute_\w+", r"_?(decode|prefill|extend)(_\w+)?", r"_?sample(_\w+)?",
    r"_?propose(_\w+)?", r"_?prepare_inputs?(_\w+)?", r"_?update_states", r"schedule", r"_?iterate\w*",
    r"\w*_busy_loop", r"_?run_(step|batch|iteration)\w*",
)
_OFFLINE_WORDS = frozenset(
    "test tests bench benchmark benchmarks tune tuning autotune tuner profile profiling debug dump demo example".split()
)
_OFFLINE_CLASS = re.compile(r"^(Test|Bench)|(Test|Tests|Benchmark|Tuner)$")
_ONE_TIME_DECORATORS = re.compile(r"\b(cache|lru_cache|cached_property|cached)\b")
_PER_STEP_DECORATORS = re.compile(r"\b(torch\.compile|compile|triton\.jit|jit|inference_mode|no_grad)\b")


@dataclass(frozen=True)
class FunctionExecution:
    qualname: str
    kind: ExecutionKind
    evidence: str  # why, in a few words: "forward of a class", "called from Runner.step"
    start_line: int  # 1-based, decorators included
    end_line: int


@dataclass(frozen=True)
class ExecutionMap:
    functions: tuple[FunctionExecution, ...]  # sorted by start line, outer before inner
    host_calls: frozenset[str] = frozenset()  # callees, as written, that return host tensors only (call index)

    def at(self, line: int) -> FunctionExecution | None:
        """The innermost function holding ``line``; None at module level."""
        best = None
        for function in self.functions:
            if function.start_line > line:
                break
            if line <= function.end_line:
                best = function
        return best

    def named(self, qualname: str) -> FunctionExecution | None:
        for function in self.functions:
            if function.qualname == qualname:
                return function
        return None


EMPTY = ExecutionMap(())


@dataclass
class _Function:
    name: str
    qualname: str
    owner: str | None  # the class a method belongs to
    parent: "_Function | None"  # the function a nested function is defined in
    decorators: str
    start_line: int
    end_line: int
    calls: set[str]  # callee keys: "Class.m" for self.m(), "f" for f()
    node: Node | None = None  # the function_definition
    kind: ExecutionKind = "unknown"
    evidence: str = ""


def execution_map(tree: Tree, *, hot_functions: tuple[str, ...] = DEFAULT_HOT_FUNCTIONS,
                  offline_file: bool = False, per_step_file: bool = False,
                  repository: FileContexts | None = None) -> ExecutionMap:
    """Classify every function of the file whose tree-sitter ``tree`` is given.

    ``offline_file`` (the path is under ``cold-paths``) makes every function offline;
    ``per_step_file`` (under ``hot-paths``) makes functions that stay unknown per-step.
    ``repository``: the call index's verdicts for this file; where it proves a context
    by a call chain, that replaces what the file alone says.
    """
    return _classified(tree, hot_functions, offline_file, per_step_file, repository)


@functools.lru_cache(maxsize=2)  # keyed by the tree itself, as many as syntax.parse_tree keeps
def _classified(tree: Tree, hot_functions: tuple[str, ...], offline_file: bool, per_step_file: bool,
                repository: FileContexts | None = None) -> ExecutionMap:
    functions = list(_functions(tree.root_node))
    if not functions:
        return EMPTY
    _collect_calls(tree.root_node, functions)
    if offline_file:
        return _frozen(functions, "offline", "the file is under cold-paths")
    hot = re.compile("^(?:" + "|".join(hot_functions) + ")$")
    by_key = {_key(f): f for f in functions}
    for function in functions:
        function.kind, function.evidence = _own_verdict(function, hot)
    if repository is not None:
        _proven_by_calls(functions, repository)
    _inherit_from_parents(functions)
    _spread_per_step(functions, by_key)
    _one_time_helpers(functions, by_key)
    _inherit_from_parents(functions)  # nested functions of helpers found one-time just now
    if per_step_file:
        for function in functions:
            if function.kind == "unknown":
                function.kind, function.evidence = "per-step", "the file is under hot-paths"
    return ExecutionMap(tuple(
        FunctionExecution(f.qualname, f.kind, f.evidence, f.start_line, f.end_line)
        for f in sorted(functions, key=lambda f: (f.start_line, -f.end_line))
    ), repository.host_calls if repository is not None else frozenset())


def _proven_by_calls(functions: list[_Function], repository: FileContexts) -> None:
    """The call index's verdict, read across the repository, outranks the file's own."""
    for function in functions:
        proven = repository.verdict(function.qualname)
        if proven is not None:
            kind, evidence = proven
            function.kind = "per-step" if kind == "per-step" else "one-time" if kind == "one-time" else "offline"
            function.evidence = evidence


def _frozen(functions: list[_Function], kind: ExecutionKind, evidence: str) -> ExecutionMap:
    return ExecutionMap(tuple(
        FunctionExecution(f.qualname, kind, evidence, f.start_line, f.end_line)
        for f in sorted(functions, key=lambda f: (f.start_line, -f.end_line))
    ))


def _own_verdict(function: _Function, hot: re.Pattern[str]) -> tuple[ExecutionKind, str]:
    """What the function's own name, class and decorators say."""
    name = function.name
    words = {w for w in name.lower().split("_") if w}
    if words & _OFFLINE_WORDS or (function.owner and _OFFLINE_CLASS.search(function.owner.rpartition(".")[2])):
        return "offline", f"`{name}` is test, benchmark, tuning or debugging code"
    if name == "main":
        return "offline", "a script's `main`"
    if is_setup_name(name):
        return "one-time", f"`{name}` names construction, loading, warm-up or teardown"
    if _ONE_TIME_DECORATORS.search(function.decorators):
        return "one-time", "a cached function runs once per argument set"
    if hot.match(name) and (function.owner or name not in ("forward", "__call__")):
        what = f"{name} of {function.owner}" if function.owner and name in ("forward", "__call__") else f"`{name}`"
        return "per-step", f"{what} runs per step"
    if _PER_STEP_DECORATORS.search(function.decorators):
        return "per-step", "a compiled kernel or inference-mode function"
    return "unknown", ""


def _inherit_from_parents(functions: list[_Function]) -> None:
    """A nested function runs when its parent does (unless it says otherwise)."""
    for function in functions:  # parents come before their nested functions
        parent = function.parent
        if parent is not None and function.kind == "unknown" and parent.kind != "unknown":
            function.kind, function.evidence = parent.kind, f"defined in {parent.qualname}"


def _spread_per_step(functions: list[_Function], by_key: dict[str, _Function]) -> None:
    """Functions a per-step function calls run per step too (unless they are cold by name)."""
    queue = [f for f in functions if f.kind == "per-step"]
    while queue:
        caller = queue.pop()
        for key in sorted(caller.calls):  # sorted: the evidence names the same caller every run
            callee = by_key.get(key)
            if callee is not None and callee.kind == "unknown":
                callee.kind, callee.evidence = "per-step", f"called from {caller.qualname}"
                queue.append(callee)


def _one_time_helpers(functions: list[_Function], by_key: dict[str, _Function]) -> None:
    """A private helper that only one-time functions of this file call is one-time.

    Public functions may be called from other modules, so they stay unknown."""
    callers: dict[str, list[_Function]] = {}
    for function in functions:
        for key in function.calls:
            callers.setdefault(key, []).append(function)
    changed = True
    while changed:
        changed = False
        for function in functions:
            if function.kind != "unknown" or not function.name.startswith("_") or function.name.startswith("__"):
                continue
            seen = callers.get(_key(function), [])
            if seen and all(c.kind == "one-time" for c in seen):
                function.kind, function.evidence = "one-time", f"only called from {seen[0].qualname}"
                changed = True


def _key(function: _Function) -> str:
    return f"{function.owner}.{function.name}" if function.owner else function.name


def _text(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def _functions(root: Node) -> Iterator[_Function]:
    """Every function definition, parents before the functions nested in them."""
    stack: list[tuple[Node, str, str | None, _Function | None, str, int | None]] = [(root, "", None, None, "", None)]
    while stack:
        node, prefix, owner, parent, decorators, decorated_start = stack.pop()
        kind = node.type
        if kind == "decorated_definition":
            text = " ".join(_text(c) for c in node.children if c.type == "decorator")
            for child in reversed(node.children):
                if child.type != "decorator":
                    stack.append((child, prefix, owner, parent, text, node.start_point[0] + 1))
            continue
        if kind == "class_definition":
            name = _text(node.child_by_field_name("name"))
            qual = prefix + name
            body = node.child_by_field_name("body")
            if body is not None:
                stack.extend((c, qual + ".", qual, parent, "", None) for c in reversed(body.children) if c.type in DEFINITION_HOLDERS)
            continue
        if kind == "function_definition":
            name = _text(node.child_by_field_name("name"))
            body = node.child_by_field_name("body")
            function = _Function(
                name=name, qualname=prefix + name, owner=owner, parent=parent, decorators=decorators,
                start_line=decorated_start or node.start_point[0] + 1, end_line=node.end_point[0] + 1,
                calls=set(), node=node,
            )
            yield function
            if body is not None:
                stack.extend(
                    (c, function.qualname + ".<locals>.", None, function, "", None)
                    for c in reversed(body.children) if c.type in DEFINITION_HOLDERS
                )
            continue
        if kind in DEFINITION_HOLDERS:  # a block or compound statement: definitions nest inside
            stack.extend((c, prefix, owner, parent, "", None) for c in reversed(node.children) if c.type in DEFINITION_HOLDERS)


_CALLS_QUERY = """
(call function: (identifier) @name)
(call function: (attribute object: (identifier) @object attribute: (identifier) @attribute))
(class_definition) @class
"""


@functools.lru_cache(maxsize=1)
def _calls_query() -> tree_sitter.Query:
    import tree_sitter
    import tree_sitter_python

    return tree_sitter.Query(tree_sitter.Language(tree_sitter_python.language()), _CALLS_QUERY)


def _collect_calls(root: Node, functions: list[_Function]) -> None:
    """Fill each function's callee keys ("f" for ``f()``, "Class.m" for ``self.m()``)
    from the calls in its body. A call inside a nested function or class belongs to that
    definition (a class body's calls to none), a call in a definition's header
    (defaults, annotations) to none."""
    import tree_sitter

    # Scopes nest: (first byte, end byte, the function whose body it is, or None).
    scopes: list[tuple[int, int, _Function | None]] = []
    for function in functions:
        body = function.node.child_by_field_name("body") if function.node is not None else None
        if function.node is not None and body is not None:
            scopes.append((function.node.start_byte, body.start_byte, None))
            scopes.append((body.start_byte, body.end_byte, function))
    calls: list[tuple[int, str | None, str]] = []  # (byte, callee name or None for self.m(), name)
    for _, captures in tree_sitter.QueryCursor(_calls_query()).matches(root):
        if "class" in captures:
            scopes.extend((node.start_byte, node.end_byte, None) for node in captures["class"])
        elif "name" in captures:
            callee = captures["name"][0]
            calls.append((callee.start_byte, _text(callee), ""))
        elif _text(captures["object"][0]) in ("self", "cls"):
            calls.append((captures["object"][0].start_byte, None, _text(captures["attribute"][0])))
    scopes.sort(key=lambda scope: (scope[0], -scope[1]))
    calls.sort(key=lambda call: call[0])
    open_scopes: list[tuple[int, int, _Function | None]] = []
    next_scope = 0
    for position, name, method in calls:
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
            owner.calls.add(name)
        elif owner.owner is not None:
            owner.calls.add(f"{owner.owner}.{method}")

