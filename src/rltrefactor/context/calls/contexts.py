"""Where a function runs and what it returns, proven by the calls around it, worked out
per function on demand.

Every question is answered from the callee's side: the calls that may reach a function
are those whose callee has its name (``Repository.callers``), so answering for the
functions of the reviewed files reads only the files on the call chains that reach them
and never resolves every call of the repository. Verdicts, strongest first:

- the configuration (``cold-functions``, a file under ``test-paths``/``cold-paths``),
  construction dunders and cached functions: one-time or offline, and no chain passes
  through them;
- *per-request*/*one-time*/*offline* for a class's ``forward``/``__call__`` when every
  instance of the class is kept in a ``self`` attribute that only such code calls or hands
  on (``Instances.holders``, ``uses``): a root no more; the same for any other method
  no root reaches;
- a function named by a per-step verb that only one-time or offline code calls (every
  call seen, as for a private function below) is that: its name says what its author
  hoped, its callers what it does (per-request callers may loop over steps: a diffusion
  stage's ``_run_denoising_step``);
- *per-step* when a per-step root reaches it through functions without such a verdict,
  by calls not made only under a diagnostics gate (``if self.validate_routing:``,
  ``cold-conditions``), with the shortest chain as evidence, from a structural root:
  ``forward``/``__call__`` of a class, ``hot-functions``, a compiled function, the body of
  a long-running loop (not a background thread's, which the step does not wait for), a
  closure a cached factory returns;
- *unknown* when only an unproven root reaches it, or it is one: a function named by a
  per-step verb (a name is no proof), or a coroutine's loop waiting for work (it may serve
  requests rather than steps); full scans hold such findings back;
- a name word (``dummy``, ``warmup``, ``test``), or a parameter holding a checkpoint's
  ``state_dict``: evidence of last resort;
- *one-time*/*offline* for a private function when at least one call resolves to it and
  every call that may reach it (resolved to it, or unresolved with its name) comes from
  code that is; a public function may be called from outside the repository, so its
  callers never prove it cold, unless it is a method of a class whose every instance the
  repository shows.

Functions on a cycle of such calls are never proven cold (the least fixed point): no
function of the cycle can be the first to be shown cold.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

from .facts import FunctionFacts
from .instances import Instances
from .links import Caller, Repository
from ..execution import COLD_KINDS, INSTANCES_PROOF, FREQUENCY_UNKNOWN, verdict_by_annotations, verdict_by_name, verdict_by_parameters
from ...config.function_patterns import first_match
from ...library.globs import matches
from ...library.names import Names
from ...library.protocols import Protocols

Verdict = tuple[str, str]  # (kind, evidence)

_CHAIN_SHOWN = 6
# Methods that calling an instance runs (``module(x)`` runs ``forward``).
_RUN_BY_CALLING = ("forward", "__call__")
# Calls followed from one function to its callers' callers when proving it cold; deeper
# chains leave the function without a verdict (the per-file map decides) rather than
# exhaust the interpreter's stack.
_MAX_COLD_DEPTH = 100
_MISSING: Verdict = ("", "")
# A function named as the code a thread or process runs: ``target=self.worker``, ``target=worker``.
_TARGET = re.compile(rb"\btarget\s*=\s*(self\.)?$")


@dataclass(frozen=True)
class _Own:
    """What a function's own definition says, before any call is read."""

    # "structural" for a per-step root, "unproven" for one only a sign makes (a name, a
    # coroutine's loop), "" otherwise.
    root: str = ""
    evidence: str = ""  # why it is a root
    loop: bool = False  # a long-running loop: it reaches only what its loop calls
    # A root only as a class's ``forward``/``__call__``: the calls of its instances, where
    # every one is seen, may prove it runs less often (``CallContexts._by_instances``).
    instances: bool = False
    # Run only by calling an instance (a ``__call__`` no model holds): per step only where a
    # per-step function calls one of its instances (``CallContexts._per_step_by_instances``).
    by_calling: bool = False
    hard: Verdict | None = None  # cold whatever calls it
    soft: Verdict | None = None  # cold by a name word, unless a chain shows otherwise


class CallContexts:
    """Contexts and host returns of the repository's functions, each worked out once, when asked."""

    def __init__(
        self, repository: Repository, names: Names, declared: tuple[tuple[str, ...], tuple[str, ...]],
        offline_file: Callable[[str], bool], protocols: Protocols | None = None,
    ) -> None:
        """``declared``: the configuration's (``hot-functions``, ``cold-functions``);
        ``offline_file``: whether a path is under ``test-paths`` or ``cold-paths``;
        ``protocols``: the protocol models, read through base classes across files."""
        self.repository = repository
        self.instances = Instances(repository)  # where the instances of its classes are kept and used
        self._names = names
        self._protocols = protocols
        self._hot, self._cold = declared  # entries: plain-name regexes or dotted names (``function_patterns``)
        self._offline_file = offline_file
        self._own: dict[str, _Own] = {}
        self._contexts: dict[str, Verdict | None] = {}
        self._cold_chains: dict[str, tuple[str, ...]] = {}
        self._pending: set[str] = set()
        self._host: dict[str, bool] = {}
        self._host_backend: dict[str, bool] = {}  # function id -> a CPU backend's method
        self._instances: dict[str, Verdict | None] = {}
        self._acknowledged: dict[str, bool] = {}

    # -- contexts ---------------------------------------------------------------------------

    def context(self, function_id: str) -> Verdict | None:
        """(kind, evidence) the calls around the function prove, or None."""
        found = self._contexts.get(function_id, _MISSING)
        if found != _MISSING:
            return found
        if function_id in self._pending or len(self._pending) > _MAX_COLD_DEPTH:
            return None  # a cycle of callers (see the module docstring), or too deep to follow
        self._pending.add(function_id)
        try:
            own = self._own_verdict(function_id)
            verdict = own.hard or (self._by_instances(function_id) if own.instances else None) \
                or (self._once_by_callers(function_id) if own.root == "unproven" else None) \
                or (self._per_step_by_instances(function_id) if own.by_calling else None) \
                or self._per_step(function_id, own) or self._method_by_instances(function_id, own) \
                or own.soft or self._cold_by_callers(function_id)
        finally:
            self._pending.discard(function_id)
        self._contexts[function_id] = verdict
        return verdict

    def _own_verdict(self, function_id: str) -> _Own:
        found = self._own.get(function_id)
        if found is None:
            found = self._own[function_id] = self._read_own(function_id)
        return found

    def _protocol(self, path: str, function: FunctionFacts) -> _Own | None:
        """How often a method runs by the protocol model of one of its class's bases, read
        through base classes the repository defines in other files too: per step or per
        layer is a root, once or per request holds whatever calls it."""
        if self._protocols is None or not function.owner or function.parent:
            return None
        found = self._protocols.method(self.repository.lineage_names(path, function.owner), function.name)
        if found is None:
            return None
        said = f"`{function.name}` of a `{found.base}` runs {found.frequency.replace('-', ' ')} (protocol model `{found.pattern}`)"
        if found.frequency in ("per-layer", "per-step"):
            return _Own("structural", said, instances=function.name in _RUN_BY_CALLING)
        return _Own(hard=("per-request" if found.frequency == "per-request" else "one-time", said))

    def _read_own(self, function_id: str) -> _Own:
        function = self.repository.function(function_id)
        if function is None:
            return _Own()
        path = function_id.partition("::")[0]
        name, names = function.name, self._names
        parent = self.repository.function(f"{path}::{function.parent}") if function.parent else None
        cached = names.regex("one-time-decorators")
        if first_match(self._cold, name, function.qualname):
            return _Own(hard=("one-time", f"`{name}` matches `cold-functions` in the configuration"))
        if self._offline_file(path):
            return _Own(hard=("offline", "the file is a test or under cold-paths"))
        if first_match(self._hot, name, function.qualname):
            return _Own("structural", f"`{name}` is named in hot-functions")
        by_protocol = self._protocol(path, function)
        if by_protocol is not None:
            return by_protocol
        if name.startswith("__") and name[2:-2] in names.entry("set-up-dunders").values:
            return _Own(hard=("one-time", f"`{name}` names construction, loading, warm-up or teardown"))
        if cached.search(function.decorators):
            return _Own(hard=("one-time", "a cached function runs once per argument set"))
        graph_pass = verdict_by_annotations(
            (annotation for _, annotation in function.params), lambda dotted: self.repository.qualify(path, dotted), names)
        if graph_pass is not None:
            return _Own(hard=graph_pass)
        if parent is not None and cached.search(parent.decorators) and f"name:{name}" in parent.returns:
            return _Own("structural", f"returned by the cached factory `{parent.qualname}`, runs on every call")
        enclosing = self._own_verdict(f"{path}::{parent.qualname}") if parent is not None else None
        cold = enclosing.hard or enclosing.soft if enclosing is not None else None
        if parent is not None and cold is not None and cold[0] in COLD_KINDS:
            # A closure of warm-up, tuning or loading code (``forward_fn`` handed to an
            # autotuner) runs while that code does, whatever its own name says.
            return _Own(hard=(cold[0], f"defined in `{parent.qualname}`: {cold[1]}"))
        by_name = verdict_by_name(name, function.owner, names)
        if by_name is not None:
            return _Own(soft=by_name)
        if name in _RUN_BY_CALLING and function.owner:
            # ``__call__`` is a root only where a project names it per step (``per-step-functions``).
            if name == "forward" or names.regex("per-step-functions").fullmatch(name):
                return _Own("structural", f"{name} of {function.owner} runs per step", instances=True)
            return _Own(instances=True, by_calling=True)
        # What the code is (a compiled kernel, a loop waiting for work) outranks what its name says.
        if names.regex("per-step-decorators").search(function.decorators):
            return _Own("structural", "a compiled kernel")
        if function.loop_calls:
            if self._thread_target(path, function):
                return _Own(loop=True)  # a background worker: the step does not wait for its loop
            if function.coroutine:
                return _Own("unproven", f"`{function.qualname}` runs a coroutine's loop, which may serve requests rather "
                                        "than steps", loop=True)
            return _Own("structural", f"`{function.qualname}` runs a long-running loop", loop=True)
        if names.regex("per-step-functions").fullmatch(name) and name not in ("forward", "__call__"):
            return _Own("unproven", f"only its name says `{name}` runs per step")
        by_parameters = verdict_by_parameters(function.parameters, names)
        return _Own(soft=by_parameters) if by_parameters is not None else _Own()

    def _thread_target(self, path: str, function: FunctionFacts) -> bool:
        """Whether the function is handed to a thread or process as the code it runs
        (``Thread(target=self.transfer_worker)``) in its own file."""
        return any(_TARGET.search(before) for before, _ in self.repository.texts.mentions(path, function.name))

    def _per_step(self, function_id: str, own: _Own) -> Verdict | None:
        """Per-step with the shortest chain from a root, searched from the callee's side
        (breadth first, so the first root met is the nearest); a structural root met at
        any depth outranks an unproven one, which leaves how often it runs unknown."""
        if own.root == "structural":
            return ("per-step", own.evidence)
        toward: dict[str, str] = {function_id: ""}  # caller -> the function it calls on the way
        frontier, unproven_root = [function_id], ""
        while frontier:
            structural: list[str] = []
            unproven: list[str] = []
            following: list[str] = []
            for node in frontier:
                function = self.repository.function(node)
                for call in self.repository.callers(function.name) if function is not None else ():
                    caller = call.caller
                    if call.target != node or caller in toward or caller.endswith(("::<module>", "::<main>")):
                        continue
                    around = self._own_verdict(caller)
                    if (around.hard is not None or (around.loop and not call.in_loop) or call.gated
                            or self._on_host_backend(caller)):
                        continue  # cold code, a loop's set-up, a diagnostics gate, a CPU backend: no device step runs through it
                    if around.instances and self._by_instances(caller) is not None:
                        continue  # a module only code that runs less often calls
                    toward[caller] = node
                    if around.root == "structural" or (around.by_calling and self._called_per_step(caller)):
                        structural.append(caller)
                        continue
                    if around.root == "unproven":
                        unproven.append(caller)
                    following.append(caller)
            if structural:
                return ("per-step", "per step: " + _shown(self._chain(min(structural, key=self._root_order), toward)))
            if unproven and not unproven_root:
                unproven_root = min(unproven, key=self._root_order)
            frontier = sorted(following)
        # A step verb in a name is what its author hoped, and a coroutine's loop may serve
        # requests: with no structural root reaching it, how often the code runs is unknown.
        if own.root == "unproven":
            return ("unknown", f"{FREQUENCY_UNKNOWN}{own.evidence}; no code that runs per step is seen calling it")
        if unproven_root:
            return ("unknown", f"{FREQUENCY_UNKNOWN}{self._own_verdict(unproven_root).evidence}, and only it is seen "
                               f"calling this: {_shown(self._chain(unproven_root, toward))}")
        return None

    def _on_host_backend(self, function_id: str) -> bool:
        """A method a protocol model says its framework runs only on its CPU backend
        (``host-methods``: ``forward_cpu`` of a custom op); worked out once per function."""
        found = self._host_backend.get(function_id)
        if found is None:
            function = self.repository.function(function_id)
            found = self._host_backend[function_id] = (
                self._protocols is not None and function is not None and bool(function.owner) and not function.parent
                and self._protocols.host_method(self.repository.lineage_names(function_id.partition("::")[0], function.owner),
                                                function.name) is not None)
        return found

    def _root_order(self, function_id: str) -> tuple[bool, str]:
        """Roots shown first: those outside an engine's CPU backend (``host-backend-paths``),
        whose chain says where the device code runs; then by name, the same every run."""
        return matches(function_id.partition("::")[0], self._names.entry("host-backend-paths").values), function_id

    def _by_instances(self, function_id: str) -> Verdict | None:
        """A class's ``forward``/``__call__``, or a method no root reaches, runs per request,
        once or offline when every instance of its class is kept in a ``self`` attribute
        (``Instances.holders``) that only code of such a kind calls or hands on
        (``Instances.uses``): a vision tower ``self.visual`` called only while one request's
        images are embedded, and its ``encode``."""
        if function_id in self._instances:
            return self._instances[function_id]
        self._instances[function_id] = None  # a cycle of instances proves nothing
        function = self.repository.function(function_id)
        path = function_id.partition("::")[0]
        holders = self.instances.holders(path, function.owner) if function is not None else None
        if function is None or holders is None:
            return None
        kinds: dict[str, str] = {}
        unresolved: tuple[str, str, str] | None = None  # a holder whose attribute other objects' calls may name
        for holder in holders:
            seen = self.instances.uses_seen(holder)
            if seen is None or not seen.uses:
                return None
            for use in seen.uses:
                kind = (self.context(use) or ("", ""))[0]
                if kind == "per-step":
                    return None
                kinds[use] = kind if kind in COLD_KINDS else "unknown"
            unresolved = unresolved or (None if seen.complete else holder)
        if not kinds:
            return None
        # The instances run as often as the most frequent code that runs them; code that
        # nothing is seen running leaves how often unknown, and the protocol's per step
        # unproven. So does a call of the attribute on an object of unknown class: every use
        # seen runs less often than per step, and the one not seen proves nothing either way.
        kind = "unknown" if unresolved else next(k for k in ("unknown", "per-request", "offline", "one-time") if k in kinds.values())
        first = min(use for use, k in kinds.items() if k == kind) if kind in kinds.values() else min(kinds)
        _, owner, attribute = unresolved or holders[0]
        chain = self._cold_chains.get(first, (first.partition("::")[2],)) + (function.qualname,)
        self._cold_chains[function_id] = chain
        kept = f"{INSTANCES_PROOF} `self.{attribute.removesuffix('[]')}` of `{owner}`"
        if unresolved:
            verdict = (kind, f"{FREQUENCY_UNKNOWN}{kept}, called per step nowhere it is seen ({_shown(chain)}), and a call "
                             f"of `.{attribute.removesuffix('[]')}(...)` on an object of unknown class may run it too")
        elif kind != "unknown":
            verdict = (kind, f"{kind}, {kept}, only called from code that is: {_shown(chain)}")
        else:
            verdict = (kind, f"{FREQUENCY_UNKNOWN}{kept}, only called from code seen running at no frequency: {_shown(chain)}")
        self._instances[function_id] = verdict
        return verdict

    def _method_by_instances(self, function_id: str, own: _Own) -> Verdict | None:
        """``_by_instances`` for a method no root or configuration places (not a ``forward``
        or ``__call__``, asked first): one run through an instance, not static or a class method."""
        function = self.repository.function(function_id)
        if own.instances or own.hard is not None or function is None or not function.owner or function.parent \
                or "staticmethod" in function.decorators or "classmethod" in function.decorators:
            return None
        return self._by_instances(function_id)

    def _called_per_step(self, function_id: str) -> bool:
        found = self.context(function_id)
        return found is not None and found[0] == "per-step"

    def _per_step_by_instances(self, function_id: str) -> Verdict | None:
        """A ``__call__`` runs per step where an instance of its class is kept in a ``self``
        attribute (``Instances.kept``) that a per-step function calls: the sampler
        ``self.topk`` a model's ``forward`` calls. Other instances may run less often; this
        one is enough. Anywhere else how often it runs is unknown."""
        function = self.repository.function(function_id)
        if function is None or not function.owner:
            return None
        for holder in self.instances.kept(function_id.partition("::")[0], function.owner):
            for use in self.instances.calls_of_kept(holder):
                if self._called_per_step(use):
                    _, owner, attribute = holder
                    return ("per-step", f"per step: `{use.partition('::')[2]}` calls `self.{attribute.removesuffix('[]')}` "
                                        f"of `{owner}`, an instance of `{function.owner}`")
        return None

    def _once_by_callers(self, function_id: str) -> Verdict | None:
        cold = self._cold_by_callers(function_id)
        return cold if cold is not None and cold[0] != "per-request" else None

    def _is_root(self, function_id: str) -> bool:
        own = self._own_verdict(function_id)
        return bool(own.root) and not (own.instances and self._by_instances(function_id) is not None)

    def _closed(self, function_id: str) -> bool:
        """The function is a method of a class whose every instance the repository shows
        kept (``Instances.holders``) and none handed on (``Instances.uses_seen``): its callers
        by name are all its callers. A call of the holder's attribute on an object of unknown
        class (``other.model(...)``) runs the instance's ``forward``, not this method."""
        function = self.repository.function(function_id)
        if function is None or not function.owner or function.parent:
            return False
        holders = self.instances.holders(function_id.partition("::")[0], function.owner)
        return holders is not None and all(self.instances.uses_seen(h) is not None for h in holders)

    def _chain(self, root: str, toward: dict[str, str]) -> tuple[str, ...]:
        chain = [root]
        while toward[chain[-1]]:
            chain.append(toward[chain[-1]])
        return tuple(f.partition("::")[2] for f in chain)

    def _cold_by_callers(self, function_id: str) -> Verdict | None:
        function = self.repository.function(function_id)
        # Only a private function can be proven cold by its callers: a public one (a
        # dunder included) may be called from code the repository does not hold (a
        # package's users, a framework, ``getattr``), and what cannot be seen proves nothing.
        if function is None or function.name.startswith("__"):
            return None
        calls = self.repository.callers(function.name)
        resolved = sorted({c.caller for c in calls if c.target == function_id})
        # Unresolved calls by its name may reach it: each must come from cold code too.
        unresolved = sorted({c.caller for c in calls if c.target is None and not _pseudo(c.caller)})
        if not resolved or any(self._is_root(c) for c in resolved + unresolved if not _pseudo(c)):
            return None
        # A method of a class whose every instance is seen is called only where it is seen.
        if not function.name.startswith("_") and not self._closed(function_id):
            return None
        kinds: dict[str, str] = {}
        for caller in resolved + unresolved:
            kind = _pseudo_kind(caller) or (self.context(caller) or ("", ""))[0]
            if kind not in COLD_KINDS:
                return None
            kinds[caller] = kind
        kind = ("one-time" if any(kinds[c] == "one-time" for c in resolved)
                else "per-request" if all(k == "per-request" for k in kinds.values()) else "offline")
        # The chain shown starts at a resolved caller of that kind, where one is: the kind
        # may come from an unresolved caller alone (per-request resolved, offline unresolved).
        first = min((c for c in resolved if kinds[c] == kind), default=min(resolved))
        chain = self._cold_chains.get(first, (first.partition("::")[2],)) + (function.qualname,)
        self._cold_chains[function_id] = chain
        return (kind, f"{kind}, only called from code that is: {_shown(chain)}")

    # -- residency ---------------------------------------------------------------------------

    def returns_host(self, function_id: str) -> bool:
        """Every return of the function is a host tensor (or None), directly or through a
        call to another such function; at least one is not None."""
        found = self._host.get(function_id)
        if found is not None:
            return found
        function = self.repository.function(function_id)
        if function is None or all(r == "none" for r in function.returns):
            return False
        self._host[function_id] = False  # a cycle of returns proves nothing
        targets = dict(self.repository.calls(function_id))
        found = all(
            r in ("host", "none") or (r.startswith("call:") and r[5:] in targets and self.returns_host(targets[r[5:]]))
            for r in function.returns
        )
        self._host[function_id] = found
        return found

    def host_parameters(self, function_id: str) -> frozenset[str]:
        """Parameters every call that may reach the function passes a host tensor: at least
        one call resolves to it, every call by its name does (none unresolved, none at
        import time), and at each call site the argument is a host value."""
        function = self.repository.function(function_id)
        if function is None or not function.parameters:
            return frozenset()
        calls = self.repository.callers(function.name)
        if any(c.target is None for c in calls):
            return frozenset()  # a call no rule resolves may reach it with anything
        resolved = [c for c in calls if c.target == function_id]  # the others reach another function of that name
        if not resolved or any(_pseudo(c.caller) for c in resolved):
            return frozenset()
        host: set[str] | None = None
        for call in resolved:
            caller = self.repository.function(call.caller)
            sites = [arguments for callee, arguments in caller.call_args if callee == call.callee] if caller else []
            if not sites:
                return frozenset()  # no argument of any of its calls there is a host value
            for arguments in sites:
                passed = _host_arguments(function, call.callee, arguments)
                host = passed if host is None else host & passed
        return frozenset(host or ())

    def passed_parameters(self, function_id: str, depth: int = 0) -> frozenset[str]:
        """Parameters defaulting to ``None`` (``FunctionFacts.none_defaults``) that every call
        which may reach the function per step passes a value other than ``None``: each call by
        its name in code that runs outside tests and is not proven one-time or per-request
        (a warm-up may leave the fallback to run once), resolved to it or not (one to another
        function of the name aside), names it or fills its position, with no unpacking before
        it, and not with ``None`` or the caller's own such parameter unless that one is always
        passed too. A function called through its instance (``forward``, ``__call__``) has
        callers no name shows: none."""
        function = self.repository.function(function_id)
        if function is None or function.name.startswith("__") or function.name in _RUN_BY_CALLING or depth > _MAX_FORWARDED:
            return frozenset()
        # Asked about its own fallbacks, a function's tested parameters; handed on, any such one.
        asked = function.none_tested if depth == 0 else function.none_defaults
        if not asked:
            return frozenset()
        passed = set(asked)
        seen_call = False
        for call in self.repository.callers(function.name):
            if not self._may_reach(call, function_id):
                continue  # another function of the name; import time or tests: never per step
            if self._runs_cold(call.caller):
                continue
            sites = self.repository.call_arguments(call.caller, call.callee)
            if not sites:
                return frozenset()
            caller = self.repository.function(call.caller)
            for arguments in sites:
                seen_call = True
                passed &= self._passing(function, passed, call, caller, arguments, depth)
                if not passed:
                    return frozenset()
        return frozenset(passed) if seen_call else frozenset()

    def omitted_parameters(self, function_id: str) -> frozenset[str]:
        """Tested parameters defaulting to ``None`` (``FunctionFacts.none_tested``) that a
        call seen in code which may run per step leaves out or passes ``None`` (each call by
        its name outside tests and import time, resolved to it or not, one to another
        function of the name aside, not in a function proven one-time or per-request). An
        unpacking before the parameter may fill it: no such call shows it left out. What
        runs only when such a parameter is missing runs on that call."""
        function = self.repository.function(function_id)
        if function is None or function.name.startswith("__") or function.name in _RUN_BY_CALLING \
                or not function.none_tested:
            return frozenset()
        omitted: set[str] = set()
        for call in self.repository.callers(function.name):
            if not self._may_reach(call, function_id) or self._runs_cold(call.caller):
                continue
            for arguments in self.repository.call_arguments(call.caller, call.callee) or ():
                placed, spread, mapping = _placed(function, call.callee, arguments)
                if mapping:
                    continue
                omitted.update(name for name in function.none_tested
                               if name not in spread and (name not in placed or placed[name].strip() == "None"))
        return frozenset(omitted)

    def withheld_parameters(self, function_id: str) -> frozenset[str]:
        """Parameters with a literal default the body compares (``FunctionFacts.default_tested``)
        that only code seen not running per step passes: at least one call by the function's
        name is seen, and each call (in code that runs outside tests, resolved to it or not,
        one to another function of the name aside) that names the parameter, fills its
        position or unpacks arguments before it is in a function proven one-time or
        per-request. What runs only when such a parameter differs from its default (``if
        padding is not None:``, ``if norm_type == inf:`` of ``norm_type=2``) runs that often."""
        function = self.repository.function(function_id)
        if function is None or function.name.startswith("__") or function.name in _RUN_BY_CALLING \
                or not function.default_tested:
            return frozenset()
        withheld = set(function.default_tested)
        seen_call = False
        for call in self.repository.callers(function.name):
            if not self._may_reach(call, function_id):
                continue
            sites = self.repository.call_arguments(call.caller, call.callee)
            if not sites:
                return frozenset()
            for arguments in sites:
                seen_call = True
                given = _given(function, call.callee, arguments) & withheld
                if given and not self._runs_cold(call.caller):
                    withheld -= given
                if not withheld:
                    return frozenset()
        return frozenset(withheld) if seen_call else frozenset()

    def acknowledged(self, function_id: str, depth: int = 0) -> bool:
        """Every call that may reach the function (``_may_reach``) is made where the engine
        allows host-device synchronizations: in the body of a ``with`` of one of the
        ``sync-allowing-contexts`` (``Caller.allowed``), or in a function itself acknowledged;
        at least one such call is seen. Such a manager's scope is dynamic (vLLM's checker
        reads a context variable), so what it allows, its callees do. Only a private
        function: a public one may be called from code the repository does not hold."""
        function = self.repository.function(function_id)
        if function is None or not function.name.startswith("_") or function.name.startswith("__") \
                or depth > _MAX_ALLOWED_DEPTH:
            return False
        found = self._acknowledged.get(function_id)
        if found is None:
            calls = [c for c in self.repository.callers(function.name) if self._may_reach(c, function_id)]
            found = bool(calls) and all(c.allowed or self.acknowledged(c.caller, depth + 1) for c in calls)
            self._acknowledged[function_id] = found
        return found

    def _may_reach(self, call: Caller, function_id: str) -> bool:
        """A call by the function's name that may run it: resolved to it or not resolved
        (one resolved to another function of the name does not), made outside import time
        and outside tests and ``cold-paths``."""
        return (call.target is None or call.target == function_id) and not _pseudo(call.caller) \
            and not self._offline_file(call.caller.partition("::")[0])

    def _runs_cold(self, function_id: str) -> bool:
        """The function is proven one-time or per-request: nothing it calls runs per step
        through it."""
        return (self.context(function_id) or ("", ""))[0] in ("one-time", "per-request")

    def _passing(self, function: FunctionFacts, asked: set[str], call: Caller, caller: FunctionFacts | None,
                 arguments: list[bytes], depth: int) -> set[str]:
        """The parameters among ``asked`` that one call site passes a value that cannot be
        ``None`` (see ``passed_parameters``)."""
        given, _, mapping = _placed(function, call.callee, arguments)
        if mapping:
            return set()  # any keyword may come from the mapping, ``None`` included
        forwarded = caller.none_defaults if caller is not None else ()
        text = self.repository.function_text(call.caller) if given else b""
        return {
            name for name in asked
            if name in given and not _MAY_BE_NONE.search(given[name]) and not _found_none(given[name], text)
            and (given[name] not in forwarded or given[name] in self.passed_parameters(call.caller, depth + 1))
        }

    def host_calls(self, function_ids: Iterable[str]) -> frozenset[str]:
        """Callees, as written in the functions, that return host tensors only."""
        return frozenset(
            callee
            for function_id in function_ids
            for callee, target in self.repository.calls(function_id)
            if self.returns_host(target)
        )

    def following_calls(self, function_ids: Iterable[str]) -> frozenset[tuple[str, str, int]]:
        """(callee as written, parameter, its position in such a call or -1) of each call in
        the functions whose callee returns only host tensors and values keeping one
        parameter's place (``return torch.clamp(lens, max=n)``): given a host tensor there,
        the call returns one."""
        found: set[tuple[str, str, int]] = set()
        for function_id in function_ids:
            for callee, target in self.repository.calls(function_id):
                function = self.repository.function(target)
                followed = _followed_parameter(function) if function is not None else None
                if function is not None and followed is not None:
                    positional = _positional(function, callee)
                    place = positional.index(followed) if followed in positional and "*" not in \
                        positional[:positional.index(followed) + 1] else -1
                    found.add((callee, followed, place))
        return frozenset(found)


def _followed_parameter(function: FunctionFacts) -> str | None:
    """The one parameter whose place every value the function returns keeps, host values
    and ``None`` aside (``FunctionFacts.returns``: ``param:`` kinds, or the parameter's own
    name); None where a return is anything else."""
    followed: set[str] = set()
    for kind in function.returns:
        if kind.startswith("param:"):
            followed.add(kind[6:])
        elif kind.startswith("name:") and kind[5:] in function.parameters:
            followed.add(kind[5:])
        elif kind not in ("host", "none"):
            return None
    return followed.pop() if len(followed) == 1 else None


def _given(function: FunctionFacts, callee: str, arguments: list[bytes]) -> set[str]:
    """Parameters of ``function`` one call site may pass: those it names or fills by
    position, and every one an unpacking (``*args``, ``**kwargs``) may fill."""
    placed, spread, mapping = _placed(function, callee, arguments)
    return set(function.parameters) if mapping else set(placed) | spread


def _placed(function: FunctionFacts, callee: str, arguments: list[bytes]) -> tuple[dict[str, str], set[str], bool]:
    """What one call site (``callee`` as written, its arguments as written) places on
    ``function``'s parameters: each named or filled by position, with its value as written;
    those a ``*args`` unpacking may fill (positions after it cannot be placed); and whether a
    ``**kwargs`` mapping may fill any (reading stops there)."""
    positional = _positional(function, callee)
    placed: dict[str, str] = {}
    spread: set[str] = set()
    for index, item in enumerate(argument.decode("utf-8", "replace") for argument in arguments):
        keyword = _KEYWORD.match(item)
        if item.startswith("**"):
            return placed, spread, True
        if item.startswith("*"):
            spread.update(positional[index:])
            positional = positional[:index]
        elif keyword:
            placed[keyword.group(1)] = item[keyword.end():].strip()
        elif index < len(positional) and "*" not in positional[:index + 1]:
            placed[positional[index]] = item
    return placed, spread, False


def _host_arguments(function: FunctionFacts, callee: str, arguments: str) -> set[str]:
    """Parameters of ``function`` that one call site (``callee`` as written, its arguments
    as ``FunctionFacts.call_args`` writes them) passes a host value."""
    parameters = list(function.parameters)
    positional = _positional(function, callee)
    host: set[str] = set()
    placed = True  # positions are known until an unpacking
    for index, item in enumerate(arguments.split(",") if arguments else ()):
        name, equals, value = item.partition("=")
        if item == "*":
            placed = False
        elif equals:
            if value == "h" and name in parameters:
                host.add(name)
        elif placed and item == "h" and index < len(positional) and positional[index] != "*" \
                and "*" not in positional[:index]:
            host.add(positional[index])
    return host


def _positional(function: FunctionFacts, callee: str) -> list[str]:
    """The parameters a call (``callee`` as written) fills by position, in order: a method
    called on an object binds its first parameter; through its class it does not."""
    parameters = list(function.parameters)
    receiver = callee.rpartition(".")[0]
    bound = bool(function.owner) and bool(parameters) and parameters[0] in ("self", "cls") \
        and "staticmethod" not in function.decorators and receiver.rpartition(".")[2] != function.owner.rpartition(".")[2]
    return parameters[1:] if bound else parameters


# ``name=`` at the start of an argument (not ``==``): a keyword argument.
_KEYWORD = re.compile(r"(\w+)\s*=(?!=)")
# An argument that may be ``None``: it names it (``x if c else None``, ``d.get(k, None)``) or
# looks a value up (``.get(k)``, ``getattr(o, "x", None)``).
_MAY_BE_NONE = re.compile(r"\bNone\b|\.get\(|\bgetattr\(")
def _found_none(value: str, caller_text: bytes) -> bool:
    """A name or attribute (``pcp_plan``, ``self.dense_mask``) the caller's own code shows may
    be ``None``: it assigns it ``None`` or a lookup (``.get(...)``, ``getattr(...)``),
    declares it ``Optional``/``| None``, or tests it against ``None``; unless, after the
    last such assignment or declaration, a guard leaves the function when it is
    (``if metadata is None: return``), as a forward pass does on a profiling run."""
    if not _DOTTED.fullmatch(value):
        return False
    name = rb"(?<![\w.])" + re.escape(value.encode()) + rb"(?![\w])"
    made = [m.end() for pattern in (name + rb"\s*(?::[^=\n]*)?=(?!=)[^\n]*(?:\bNone\b|\.get\(|\bgetattr\()",
                                    name + rb"\s*:[^=\n]*(?:\bNone\b|Optional\[)")
            for m in re.finditer(pattern, caller_text)]
    # ``if name is None:`` (or ``if not name:``) whose body ends the function or the loop:
    # a statement at the body's own indentation, after any others of the body.
    guard = (rb"(?m)^(?P<i>[ \t]*)if\s+(?:" + name + rb"\s+is\s+None|not\s+" + name + rb")\s*:[ \t]*(?:#[^\n]*)?\n"
             rb"(?:[ \t]*(?:#[^\n]*)?\n)*(?P<j>(?P=i)[ \t]+)(?:[^\n]*\n(?:[ \t]*\n)*(?P=j))*?(?:return|raise|continue)\b")
    guards = [m.start() for m in re.finditer(guard, caller_text)]
    if guards and guards[-1] > max(made, default=-1):
        return False
    return bool(made) or re.search(name + rb"\s+is\s+(?:not\s+)?None\b|\bNone\s+is\s+(?:not\s+)?" + name, caller_text) is not None


_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
# How many callers deep a parameter handed on as the caller's own optional one is followed.
_MAX_FORWARDED = 2
_MAX_ALLOWED_DEPTH = 3  # callers followed up to a ``with`` that allows synchronizations


def _pseudo(caller: str) -> bool:
    return caller.endswith(("::<module>", "::<main>"))


def _pseudo_kind(caller: str) -> str:
    """Import-time code runs once. A script's ``if __name__ == "__main__":`` block is the
    program's entry point: what it calls may run for as long as the program does (a
    launcher's ``trainer.train()``), so it proves nothing cold."""
    return "one-time" if caller.endswith("::<module>") else ""


def _shown(chain: tuple[str, ...]) -> str:
    names = [f"`{q}`" for q in chain]
    if len(names) > _CHAIN_SHOWN:
        names = names[:2] + ["…"] + names[-(_CHAIN_SHOWN - 3):]
    return " → ".join(names)
