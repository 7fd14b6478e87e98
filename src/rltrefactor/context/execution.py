"""Where code runs: every function of a file is per-step, one-time, offline or unknown.

A stage of its own, after parsing and before matching. It reads the file's tree-sitter
tree and its definition walk (``syntax.walk_definitions``), both held by the file's
``FileModel``, never LibCST. Every verdict carries its evidence, read from the code:

- *per-step*: ``forward`` of a class, functions named by a per-step verb
  (``hot-functions``), compiled kernels (``@torch.compile``, ``@triton.jit``), and every
  function of the file that one of those calls (``self.m()`` in the same class, ``f()``
  in the same module, an entry of a module-level table: ``ATTENTION[impl](...)``);
- *one-time*: construction, loading, warm-up, capture, compile, registration and
  teardown (``matchers.context.is_setup_name``), cached functions (``functools.cache``),
  graph passes (a parameter typed ``torch.fx.GraphModule``: ``graph-parameter-types``),
  functions that take a checkpoint's ``state_dict`` (``checkpoint-parameters``) or that
  the file registers as state-dict hooks (``checkpoint-hook-registrations``), and private
  helpers that only one-time functions of the file call and nothing hands on as a value;
- *offline*: tests, benchmarks, tuning/autotune, profiling, debugging, examples, a
  script's ``main`` and private module-level functions nothing in the file mentions —
  and everything in files under ``cold-paths``;
- *unknown*: none of these. Device-residency rules apply to per-step and unknown code.

What the file cannot show is unknown, never proof: a public function stays unknown
whatever its callers in the file are (other modules may call it), ``no_grad`` and
``inference_mode`` say nothing about how often a function runs, and a function that
times itself (a device wait and a clock read) may well run every step.

Statement-level one-time code (``if not self._initialized:``) is recognised where the
matchers ask, in ``matchers.context``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Protocol

from ..config import NOTHING_DECLARED, Declared
from ..config.function_patterns import first_match
from ..source.functions import ExecutionKind as ExecutionKind  # re-exported: the kinds are this stage's vocabulary
from ..source.functions import FileFunction, Mentions, collect_calls, file_functions, function_tables, registered_names, text_of
from ..library.names import Names, bundled_names, name_words
from ..library.protocols import Protocols, bundled_protocols
from ..source.aliases import ImportTable, import_table, module_of
from ..source.syntax import DefinitionMap, innermost, parameter_annotations, walk_definitions

if TYPE_CHECKING:
    from tree_sitter import Node, Tree


def is_setup_name(name: str, names: Names | None = None) -> bool:
    """The name says construction, loading, warm-up or teardown (``set-up-*`` names)."""
    names = names or bundled_names()
    if name.startswith("__") and name.endswith("__"):
        return _is_setup_dunder(name, names)
    return names.has_word("set-up-words", name_words(name)) or bool(names.regex("set-up-functions").fullmatch(name))


def _is_setup_dunder(name: str, names: Names) -> bool:
    """``__init__``, ``__del__``, ...: run at construction, teardown or printing, never per step."""
    return name.startswith("__") and name.endswith("__") and name[2:-2] in names.entry("set-up-dunders").values


# Kinds that do not run per step: per-step rules leave their code alone.
COLD_KINDS: frozenset[str] = frozenset({"one-time", "offline", "per-request"})

@dataclass(frozen=True)
class FunctionExecution:
    qualname: str
    kind: ExecutionKind
    evidence: str  # why, in a few words: "forward of a class", "called from Runner.step"
    start_line: int  # 1-based, decorators included
    end_line: int
    # What the verdict rests on: "configuration" (hot-functions, hot-paths, cold-...),
    # "protocol" (a model of the class's base), "call-chain" (the call index), "structure"
    # (a compiled kernel, a cached function), "name" (words of a name), "" when unknown.
    basis: str = ""
    # Per step because the configuration alone says so (``_configured_per_step``): every
    # per-step rule reads such a function as per step, whatever its own name lists say.
    configured: bool = False
    # Why its tensors live in host memory: a method a protocol model says its framework
    # runs only on its CPU backend (``host-methods``); "" where nothing says so.
    on_host: str = ""


@dataclass(frozen=True)
class ExecutionMap:
    functions: tuple[FunctionExecution, ...]  # sorted by start line, outer before inner
    host_calls: frozenset[str] = frozenset()  # callees, as written, that return host tensors only (call index)
    host_params: frozenset[tuple[str, str]] = frozenset()  # (qualname, parameter) every caller passes a host tensor (call index)
    host_fields: frozenset[str] = frozenset()  # input fields the repository declares host-side (call index)
    passed_params: frozenset[tuple[str, str]] = frozenset()  # (qualname, parameter) every caller passes, never None (call index)
    withheld_params: frozenset[tuple[str, str]] = frozenset()  # (qualname, parameter) no per-step caller passes (call index)
    # (callee as written, parameter, position or -1): the call returns where that argument lives (call index)
    following_calls: frozenset[tuple[str, str, int]] = frozenset()
    host_class_fields: frozenset[str] = frozenset()  # ``module.Class.field`` holding host tensors only (call index)
    omitted_params: frozenset[tuple[str, str]] = frozenset()  # (qualname, parameter) a per-step caller leaves out (call index)
    acknowledged: frozenset[str] = frozenset()  # qualnames run only where synchronizations are allowed (call index)

    def at(self, line: int) -> FunctionExecution | None:
        """The innermost function holding ``line``; None at module level (or in a class body
        outside any function). The same lookup as ``DefinitionMap.enclosing``."""
        return innermost(self.functions, line)


EMPTY = ExecutionMap(())


class RepositoryContexts(Protocol):
    """What the repository's call index tells one file (``callindex.FileContexts``)."""

    @property
    def host_calls(self) -> frozenset[str]: ...  # callees, as written, that return host tensors only

    @property
    def host_params(self) -> frozenset[tuple[str, str]]: ...  # (qualname, parameter) every caller passes a host tensor

    @property
    def host_fields(self) -> frozenset[str]: ...  # input fields the repository declares host-side

    @property
    def passed_params(self) -> frozenset[tuple[str, str]]: ...  # (qualname, parameter) every caller passes, never None

    @property
    def withheld_params(self) -> frozenset[tuple[str, str]]: ...  # (qualname, parameter) no per-step caller passes

    @property
    def omitted_params(self) -> frozenset[tuple[str, str]]: ...  # (qualname, parameter) a per-step caller leaves out

    @property
    def acknowledged(self) -> frozenset[str]: ...  # qualnames run only where synchronizations are allowed

    @property
    def following_calls(self) -> frozenset[tuple[str, str, int]]: ...  # calls returning where an argument lives

    @property
    def host_class_fields(self) -> frozenset[str]: ...  # ``module.Class.field`` holding host tensors only

    def verdict(self, qualname: str) -> tuple[str, str] | None: ...  # (kind, evidence) proven by a call chain

    def __hash__(self) -> int: ...  # a key of the per-tree cache


def execution_map(tree: Tree, declared: Declared = NOTHING_DECLARED,
                  repository: RepositoryContexts | None = None, *, definitions: DefinitionMap | None = None,
                  imports: Callable[[], ImportTable] | None = None, path: str = "") -> ExecutionMap:
    """Classify every function of the file whose tree-sitter ``tree`` is given.

    Under ``cold-paths`` every function is offline; under ``hot-paths`` every function
    is per-step unless its code shows otherwise (construction dunders, cached functions,
    helpers only those call): a name word is never evidence enough there. A function
    named by ``cold-functions`` or ``hot-functions`` is what the configuration says.
    ``repository``: the call index's verdicts for this file; a context it proves by a
    call chain replaces what the file alone says, never what the configuration declares.
    ``definitions``: the file's definition walk, when already made (``FileModel`` hands
    over its own); walked here otherwise. ``path``: where the file lies in its
    repository, which names its classes for the protocol models (a framework's class is
    its own nearest base).
    """
    definitions = definitions if definitions is not None else walk_definitions(tree)
    functions = file_functions(definitions)
    if not functions:
        return EMPTY
    names = declared.names or bundled_names()
    collect_calls(tree.root_node, functions, names.regex("cold-conditions"))
    by_key = {_key(f): f for f in functions}
    imports_of = _once(imports or (lambda: import_table(tree)))
    bases = class_bases(tree, definitions, imports_of, module_of(path) if path else "")
    protocols = declared.protocols or bundled_protocols()
    qualify = lambda dotted: imports_of().qualify(dotted)  # noqa: E731
    for function in functions:
        declared_verdict = _declared_verdict(function.name, function.qualname, declared)
        function.declared = declared_verdict is not None
        by_protocol = None if declared_verdict else _protocol_verdict(function, bases, protocols)
        by_graph = None if declared_verdict or by_protocol or function.node is None else verdict_by_annotations(
            parameter_annotations(function.node.child_by_field_name("parameters")), qualify, names)
        function.kind, function.evidence = (declared_verdict or by_protocol or by_graph
                                            or _own_verdict(function, names, declared.hot_file))
        function.basis = ("configuration" if declared_verdict else "protocol" if by_protocol else "structure" if by_graph
                          else _own_basis(function))
        function.on_host = _host_method(function, bases, protocols)
    if repository is not None:
        _proven_by_calls(functions, repository)
    _inherit_from_parents(functions)
    _spread_per_step(functions, by_key, function_tables(tree.root_node) if any(f.dispatched for f in functions) else {})
    _checkpoint_hooks(functions, tree.root_node, names)
    mentions = Mentions(tree)
    _one_time_helpers(functions, by_key, mentions)
    if not declared.hot_file:
        _never_called(functions, mentions)
    _inherit_from_parents(functions)  # nested functions of helpers found one-time just now
    if declared.hot_file:
        for function in functions:
            if function.kind == "unknown":
                function.kind, function.evidence, function.basis = "per-step", _HOT_PATHS_EVIDENCE, "configuration"
    configured = _configured_per_step(functions)
    return ExecutionMap(tuple(
        FunctionExecution(f.qualname, f.kind, f.evidence, f.start_line, f.end_line, f.basis if f.kind != "unknown" else "",
                          id(f) in configured, f.on_host or _host_parent(f))
        for f in sorted(functions, key=lambda f: (f.start_line, -f.end_line))
    ), repository.host_calls if repository is not None else frozenset(),
        repository.host_params if repository is not None else frozenset(),
        repository.host_fields if repository is not None else frozenset(),
        repository.passed_params if repository is not None else frozenset(),
        repository.withheld_params if repository is not None else frozenset(),
        repository.following_calls if repository is not None else frozenset(),
        repository.host_class_fields if repository is not None else frozenset(),
        repository.omitted_params if repository is not None else frozenset(),
        repository.acknowledged if repository is not None else frozenset())


_HOT_PATHS_EVIDENCE = "the file is under hot-paths"


def _configured_per_step(functions: list[FileFunction]) -> set[int]:
    """Ids of the functions only the configuration makes per step, and those defined in
    them: each one ``hot-functions`` names, and each function of a file under
    ``hot-paths`` that nothing else places. A function per step by its own code (a
    ``forward``, a callee of one) is not among them: rules that read their own name
    lists keep their reasons for leaving it out. Parents come before nested functions."""
    found: set[int] = set()
    for function in functions:
        inherited = function.parent is not None and id(function.parent) in found
        by_configuration = function.declared or function.evidence == _HOT_PATHS_EVIDENCE
        if function.kind == "per-step" and (by_configuration or inherited):
            found.add(id(function))
    return found


def _proven_by_calls(functions: list[FileFunction], repository: RepositoryContexts) -> None:
    """The call index's verdict, read across the repository, outranks the file's own
    heuristics but never a verdict the configuration declares, nor a protocol model of the
    file's own bases unless the calls of every instance of the class prove the method
    colder: the file reads both first."""
    kinds: dict[str, ExecutionKind] = {"per-step": "per-step", "one-time": "one-time", "per-request": "per-request",
                                       "unknown": "unknown"}
    for function in functions:
        if function.declared:
            continue
        proven = repository.verdict(function.qualname)
        if function.basis == "protocol" and (proven is None or INSTANCES_PROOF not in proven[1]):
            continue  # the model holds unless the calls of every instance of the class prove it colder
        if proven is not None:
            kind, evidence = proven
            function.kind = kinds.get(kind, "offline")
            function.basis = _index_basis(evidence)
            function.evidence = evidence


# Words of the call index's evidence where a class's ``forward`` is proven to run less often
# than its protocol model says, by the calls of every instance of the class.
INSTANCES_PROOF = "every instance is"
# How the call index's evidence begins where it leaves the frequency unknown and says why:
# the calls of a class's instances, or names alone calling code per step.
FREQUENCY_UNKNOWN = "frequency unknown: "


def _index_basis(evidence: str) -> str:
    """What an index verdict rests on, read from its evidence: a chain of calls, the
    configuration, a decorator or loop, or the function's own name."""
    if evidence.startswith("per step: ") or "only called from" in evidence:
        return "call-chain"
    if "configuration" in evidence or "hot-functions" in evidence or "cold-paths" in evidence:
        return "configuration"
    if "protocol model" in evidence:
        return "protocol"
    if any(word in evidence for word in ("compiled", "cached", "long-running loop", "test or under", "graph pass")):
        return "structure"
    return "name"


def _once(imports_of: Callable[[], ImportTable]) -> Callable[[], ImportTable]:
    """``imports_of``, asked at most once: the file's import table is read only if a class
    names a base or an annotation needs qualifying, and then once."""
    table: list[ImportTable] = []

    def read() -> ImportTable:
        if not table:
            table.append(imports_of())
        return table[0]
    return read


def _declared_verdict(name: str, qualname: str, declared: Declared) -> tuple[ExecutionKind, str] | None:
    if first_match(declared.cold_functions, name, qualname):
        return "one-time", f"`{name}` matches `cold-functions` in the configuration"
    if first_match(declared.hot_functions, name, qualname):
        return "per-step", f"`{name}` matches `hot-functions` in the configuration"
    if declared.cold_file:
        return "offline", "the file is under cold-paths"
    return None


def class_bases(tree: Tree, definitions: DefinitionMap, imports_of: Callable[[], ImportTable],
                module: str = "") -> dict[str, tuple[str, ...]]:
    """Each class of the file (by qualified name) with its bases qualified through the
    file's imports (``imports_of``: asked only when a class names a base), a base defined
    in the file standing for its own bases too; the class's own dotted name first, where
    the file's ``module`` is known (as the call index's ``Repository.lineage_names``)."""
    written: dict[str, tuple[str, ...]] = {}
    for site in definitions.sites:
        if site.definition.kind != "class":
            continue
        superclasses = site.node.child_by_field_name("superclasses")
        written[site.definition.qualname] = tuple(
            text_of(node).partition("[")[0] for node in (superclasses.named_children if superclasses is not None else ())
            if node.type in ("identifier", "attribute", "subscript")
        )
    if not written:
        return {}
    imports = imports_of()

    def qualified(qualname: str, seen: frozenset[str]) -> tuple[str, ...]:
        found: list[str] = []
        for base in written.get(qualname, ()):
            found.append(imports.qualify(base))
            if base in written and base not in seen:  # a class of this file: its bases too
                found.extend(qualified(base, seen | {base}))
        return tuple(found)

    own = (lambda qualname: (f"{module}.{qualname}",)) if module else (lambda qualname: ())
    return {qualname: own(qualname) + qualified(qualname, frozenset({qualname})) for qualname in written}


def _host_method(function: FileFunction, bases: dict[str, tuple[str, ...]], protocols: Protocols) -> str:
    """Why a method's tensors live in host memory, where a protocol model says its framework
    runs it only on its CPU backend (``host-methods``); "" otherwise."""
    if function.owner is None or not bases.get(function.owner):
        return ""
    found = protocols.host_method(bases[function.owner], function.name)
    if found is None:
        return ""
    return f"`{function.name}` of a `{found.base}` runs only on its framework's CPU backend (protocol model `{found.pattern}`)"


def _host_parent(function: FileFunction) -> str:
    """A nested function's CPU-backend reason, inherited from the method it is defined in."""
    parent = function.parent
    while parent is not None:
        if parent.on_host:
            return parent.on_host
        parent = parent.parent
    return ""


def _protocol_verdict(
    function: FileFunction, bases: dict[str, tuple[str, ...]], protocols: Protocols,
) -> tuple[ExecutionKind, str] | None:
    """How often a method runs by the protocol model of its class's base (``rules/protocols.yaml``)."""
    if function.owner is None or not bases.get(function.owner):
        return None
    found = protocols.method(bases[function.owner], function.name)
    if found is None:
        return None
    said = f"`{function.name}` of a `{found.base}` runs {found.frequency.replace('-', ' ')} (protocol model `{found.pattern}`)"
    if found.frequency in ("per-layer", "per-step"):
        return "per-step", said
    if found.frequency == "per-request":
        return "per-request", said
    return "one-time", said


def _own_basis(function: FileFunction) -> str:
    """What ``_own_verdict``'s verdict rests on: a decorator is structure, the rest names."""
    if function.kind == "unknown":
        return ""
    return "structure" if function.evidence in ("a compiled kernel", "a cached function runs once per argument set") else "name"


def _own_verdict(function: FileFunction, names: Names, hot_file: bool) -> tuple[ExecutionKind, str]:
    """What the function's own name, class and decorators say. Under ``hot-paths`` a
    name word says nothing: only construction dunders and caching keep code cold there."""
    name = function.name
    by_name = None if hot_file else verdict_by_name(function.name, function.owner, names)
    if by_name is not None:
        return by_name
    if _is_setup_dunder(name, names):
        return "one-time", f"`{name}` names construction, loading, warm-up or teardown"
    if names.regex("one-time-decorators").search(function.decorators):
        return "one-time", "a cached function runs once per argument set"
    if names.regex("per-step-functions").fullmatch(name) and (function.owner or name not in ("forward", "__call__")):
        what = f"{name} of {function.owner}" if function.owner and name in ("forward", "__call__") else f"`{name}`"
        return "per-step", f"{what} runs per step"
    if names.regex("per-step-decorators").search(function.decorators):
        return "per-step", "a compiled kernel"
    by_parameters = None if hot_file else verdict_by_parameters(function.parameters, names)
    return by_parameters or ("unknown", "")


def verdict_by_parameters(parameters: tuple[str, ...], names: Names) -> tuple[ExecutionKind, str] | None:
    """What a function's parameter names say (``checkpoint-parameters``): evidence of last
    resort, read after every per-step root, by the per-file map and the call index alike."""
    held = names.regex("checkpoint-parameters")
    found = next((p for p in parameters if held.fullmatch(p)), None)
    if found is None:
        return None
    return "one-time", f"takes a checkpoint's `{found}`: it converts weights when a checkpoint is saved or loaded"


# The class an annotation names, wrappers left out: ``Optional[fx.GraphModule]`` -> ``fx.GraphModule``.
_ANNOTATED_TYPE = re.compile(r"[A-Za-z_][\w.]*")
_ANNOTATION_WRAPPERS = frozenset("Optional Union typing.Optional typing.Union Annotated typing.Annotated None".split())


def verdict_by_annotations(
    annotations: Iterable[str], qualify: Callable[[str], str], names: Names,
) -> tuple[ExecutionKind, str] | None:
    """A parameter typed as a compiler's graph (``graph-parameter-types``, qualified through
    the file's imports: ``torch.fx.GraphModule``): the function is a graph pass or a graph
    profiler, which runs when a graph is compiled, not each time the compiled code runs.
    Code evidence: read by the per-file map and the call index alike, under ``hot-paths`` too."""
    graphs = names.regex("graph-parameter-types")
    for annotation in annotations:
        written = next((t for t in _ANNOTATED_TYPE.findall(annotation) if t not in _ANNOTATION_WRAPPERS), "")
        if written and graphs.fullmatch(qualify(written)):
            return "one-time", f"takes a `{written}`: a graph pass, run when a graph is compiled"
    return None


def verdict_by_name(name: str, owner: str | None, names: Names) -> tuple[ExecutionKind, str] | None:
    """What the words of a function's name (and its class's, ``owner``) say: evidence of
    last resort, read the same way by the per-file map and the call index."""
    owner = owner.rpartition(".")[2] if owner else None
    if (
        names.has_word("offline-words", name_words(name)) or names.regex("offline-functions").fullmatch(name)
        or (owner and names.regex("offline-classes").search(owner))
    ):
        return "offline", f"`{name}` is test, benchmark, tuning or debugging code"
    if name == "main":
        return "offline", "a script's `main`"
    if is_setup_name(name, names):
        return "one-time", f"`{name}` names construction, loading, warm-up or teardown"
    return None


def _inherit_from_parents(functions: list[FileFunction]) -> None:
    """A nested function runs when its parent does (unless it says otherwise)."""
    for function in functions:  # parents come before their nested functions
        parent = function.parent
        if parent is not None and function.kind == "unknown" and parent.kind != "unknown":
            function.kind, function.evidence, function.basis = parent.kind, f"defined in {parent.qualname}", parent.basis


def _spread_per_step(
    functions: list[FileFunction], by_key: dict[str, FileFunction], tables: dict[str, frozenset[str]],
) -> None:
    """Functions a per-step function calls run per step too (unless they are cold by name,
    or called only under a diagnostics gate), and so does every function of a module-level
    table it calls an entry of (``ATTENTION[impl](q, k, v)``): any entry may be the one picked.
    A CPU backend's method (``on_host``) hands on no device step."""
    queue = [f for f in functions if f.kind == "per-step" and not (f.on_host or _host_parent(f))]
    while queue:
        caller = queue.pop()
        for key in sorted(caller.calls - caller.gated):  # sorted: the evidence names the same caller every run
            callee = by_key.get(key)
            if callee is not None and callee.kind == "unknown":
                callee.kind, callee.evidence, callee.basis = "per-step", f"called from {caller.qualname}", caller.basis
                queue.append(callee)
        for table in sorted(caller.dispatched):
            for key in sorted(tables.get(table, ())):
                callee = by_key.get(key)
                if callee is not None and callee.kind == "unknown":
                    callee.kind, callee.evidence, callee.basis = (
                        "per-step", f"called from {caller.qualname} through the table `{table}`", caller.basis)
                    queue.append(callee)


def _checkpoint_hooks(functions: list[FileFunction], root: Node, names: Names) -> None:
    """A function the file registers as a state-dict hook (``checkpoint-hook-registrations``)
    runs when a checkpoint is saved or loaded: code evidence, read under ``hot-paths`` too."""
    registrations = names.regex("checkpoint-hook-registrations")
    if not registrations.search(text_of(root)):
        return
    hooks = registered_names(root, registrations)
    for function in functions:
        if function.kind == "unknown" and function.name in hooks:
            function.kind, function.evidence, function.basis = (
                "one-time", "registered as a state-dict hook: it runs when a checkpoint is saved or loaded", "structure")


def _one_time_helpers(functions: list[FileFunction], by_key: dict[str, FileFunction], mentions: Mentions) -> None:
    """A private helper that only one-time functions of this file call, and that nothing
    in the file passes on as a value, is one-time.

    A public function or method stays unknown whatever its callers in this file are:
    other modules may call it (through an attribute of an object whose type this file
    does not show, a registry, a subclass), and what cannot be seen proves nothing."""
    callers: dict[str, list[FileFunction]] = {}
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
            if not seen or any(c.kind != "one-time" for c in seen) or _passed_as_value(function, mentions):
                continue
            function.kind, function.evidence, function.basis = "one-time", f"only called from {seen[0].qualname}", "call-chain"
            changed = True


def _passed_as_value(function: FileFunction, mentions: Mentions) -> bool:
    """The file names the function more often than its definition and its calls: it is
    handed on (a dispatch table, a callback, a registration), so whoever receives it may
    call it from anywhere."""
    return mentions(function.name) > 1 + function.call_sites


def _never_called(functions: list[FileFunction], mentions: Mentions) -> None:
    """A private module-level function that nothing in its file mentions does not run:
    its name says only its module uses it, and nothing there does. A decorated one stays
    unknown: a decorator may register it to be called by name (``@torch.library.impl``)."""
    for function in functions:
        if (
            function.kind == "unknown" and function.owner is None and function.parent is None
            and function.name.startswith("_") and not function.name.startswith("__") and not function.decorators
            and mentions(function.name) == 1
        ):
            function.kind, function.evidence, function.basis = (
                "offline", f"nothing in its module calls the private `{function.name}`", "structure")


def _key(function: FileFunction) -> str:
    return f"{function.owner}.{function.name}" if function.owner else function.name
