"""The one registry of Python matchers, and ``build_matcher`` for every rule kind.

A rule's ``matcher`` is a pattern block (compiled by ``pattern``), a registered
Python matcher (``python: ID`` with typed ``options``), or ``emitted-by: perf-hook | engine``
for findings another stage produces. A test asserts that every registered id is
used by a rule and every rule's matcher resolves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Protocol

from ...errors import RuleLibraryError
from ...library.model import Rule
from .capability import fallbacks, probes as capability
from .interfaces import signatures as interfaces
from .lifecycle import (
    async_lifecycle, autograd_history, backward_release, context_managers, coroutines, exceptions, exit_paths,
    failure_paths as lifecycle, identity_keys, index_copies, noop_lifecycle, paired_records, refused_keys, registries,
    resources, shutdown, stream_handoffs, task_references, teardown, threads,
)
from .readability import environment, names_and_numbers as readability
from .residency import (
    allocation, constant_tensors, device, download_reads, implicit_sync, indexing, payload_copies, per_layer,
    pinned_slots, placement, scalar_writes, step_metadata, transfers,
)
from ..patterns.compiler import compile_pattern
from .base import Matcher
from .hook import HookEmittedMatcher
from .options import MatcherSpecError, Option, resolve_options
from .state import ownership as state


class MatcherClass(Protocol):
    """A registered Python matcher class: its option schema, and built from resolved options."""

    @property
    def OPTIONS(self) -> Mapping[str, Option]: ...

    def __call__(self, rule_id: str, options: dict[str, Any]) -> Matcher: ...


@dataclass(frozen=True)
class MatcherFactory:
    """A Python matcher class and the options it accepts."""

    cls: MatcherClass
    summary: str
    options: Mapping[str, Option]

    def build(self, rule_id: str, matcher_id: str, given: Mapping[str, Any]) -> Matcher:
        return self.cls(rule_id, resolve_options(matcher_id, self.options, given))


def _factory(cls: MatcherClass) -> MatcherFactory:
    return MatcherFactory(cls, (cls.__doc__ or "").strip().splitlines()[0], cls.OPTIONS)


PYTHON_MATCHERS: dict[str, MatcherFactory] = {
    "tensor-to-host-conversion": _factory(device.TensorToHostConversion),
    "zero-filled-kernel-output": _factory(device.ZeroFilledKernelOutput),
    "per-step-host-staging": _factory(device.PerStepHostStaging),
    "workspace-allocation-per-call": _factory(allocation.WorkspaceAllocationPerCall),
    "unread-device-allocation": _factory(allocation.UnreadDeviceAllocation),
    "arange-index-for-slice": _factory(indexing.ArangeIndexForSlice),
    "compared-probe": _factory(capability.ComparedProbe),
    "accelerator-probe": _factory(capability.AcceleratorProbe),
    "silent-import-fallback": _factory(fallbacks.SilentImportFallback),
    "foreign-private-attribute": _factory(state.ForeignPrivateAttribute),
    "collaborator-container-mutation": _factory(state.CollaboratorContainerMutation),
    "per-call-temporary-on-self": _factory(state.PerCallTemporaryOnSelf),
    "guard-for-constructed-attribute": _factory(lifecycle.GuardForConstructedAttribute),
    "release-not-on-failure-path": _factory(lifecycle.ReleaseNotOnFailurePath),
    "swallowed-error-in-cleanup": _factory(lifecycle.SwallowedErrorInCleanup),
    "registration-not-undone-on-failure": _factory(lifecycle.RegistrationNotUndoneOnFailure),
    "unchecked-removal-on-release-path": _factory(teardown.UncheckedRemovalOnReleasePath),
    "resource-without-close": _factory(resources.ResourceWithoutClose),
    "awaited-delivery-in-fan-out-loop": _factory(async_lifecycle.AwaitedDeliveryInFanOutLoop),
    "state-flag-set-after-await": _factory(async_lifecycle.StateFlagSetAfterAwait),
    "cancel-past-its-owner": _factory(teardown.CancelPastItsOwner),
    "del-assumes-full-construction": _factory(teardown.DelAssumesFullConstruction),
    "chunk-kept-alive-by-loop-variable": _factory(resources.ChunkKeptAliveByLoopVariable),
    "cleanup-after-try-not-in-finally": _factory(resources.CleanupAfterTryNotInFinally),
    "unshielded-await-in-handler": _factory(async_lifecycle.UnshieldedAwaitInHandler),
    "blocking-call-in-coroutine": _factory(coroutines.BlockingCallInCoroutine),
    "rollback-skipped-on-cancellation": _factory(coroutines.RollbackSkippedOnCancellation),
    "process-group-teardown": _factory(shutdown.ProcessGroupTeardown),
    "del-calls-into-modules": _factory(shutdown.DelCallsIntoModules),
    "teardown-not-idempotent": _factory(shutdown.TeardownNotIdempotent),
    "exception-not-raised": _factory(exceptions.ExceptionNotRaised),
    "consumer-loop-ends-on-producer-flag": _factory(coroutines.ConsumerLoopEndsOnProducerFlag),
    "child-cleanup-only-at-exit": _factory(shutdown.ChildCleanupOnlyAtExit),
    "non-daemon-worker-thread": _factory(threads.NonDaemonWorkerThread),
    "removal-after-await-not-in-finally": _factory(registries.RemovalAfterAwaitNotInFinally),
    "stopiteration-subclass": _factory(exceptions.StopIterationSubclass),
    "positional-boolean-parameter": _factory(interfaces.PositionalBooleanParameter),
    "bare-boolean-argument": _factory(interfaces.BareBooleanArgument),
    "string-compared-field": _factory(interfaces.StringComparedField),
    "wide-tuple-return": _factory(interfaces.WideTupleReturn),
    "abbreviated-new-name": _factory(readability.AbbreviatedNewName),
    "unexplained-number-in-branch": _factory(readability.UnexplainedNumberInBranch),
    "environment-read": _factory(environment.EnvironmentRead),
    "device-tensor-truth-test": _factory(implicit_sync.DeviceTensorTruthTest),
    "device-tensor-as-number": _factory(implicit_sync.DeviceTensorAsNumber),
    "repeat-interleave-without-output-size": _factory(implicit_sync.RepeatInterleaveWithoutOutputSize),
    "boolean-mask-write": _factory(implicit_sync.BooleanMaskWrite),
    "refused-key-left-registered-on-failure": _factory(refused_keys.RefusedKeyLeftOnFailure),
    "undo-discarded-from-paired-record": _factory(paired_records.UndoDiscardedFromPairedRecord),
    "entry-removed-only-in-backward": _factory(backward_release.EntryRemovedOnlyInBackward),
    "value-transferred-twice": _factory(transfers.ValueTransferredTwice),
    "pinned-slot-rewritten-while-in-flight": _factory(pinned_slots.PinnedSlotRewrittenWhileInFlight),
    "release-skipped-on-exit-path": _factory(exit_paths.ReleaseSkippedOnExitPath),
    "stream-handoff-without-wait": _factory(stream_handoffs.StreamHandoffWithoutWait),
    "exception-swallowed-by-context-manager": _factory(context_managers.ExceptionSwallowedByContextManager),
    "tensor-rebuilt-per-layer": _factory(per_layer.TensorRebuiltPerLayer),
    "constant-tensor-per-call": _factory(constant_tensors.ConstantTensorPerCall),
    "default-filled-per-call": _factory(constant_tensors.DefaultFilledPerCall),
    "step-metadata-per-layer": _factory(step_metadata.StepMetadataPerLayer),
    "payload-copied-twice": _factory(payload_copies.PayloadCopiedTwice),
    "device-array-placed-again": _factory(placement.DeviceArrayPlacedAgain),
    "python-number-index-write": _factory(scalar_writes.PythonNumberIndexWrite),
    "non-blocking-download-read-before-sync": _factory(download_reads.NonBlockingDownloadReadBeforeSync),
    "in-place-write-to-index-copy": _factory(index_copies.InPlaceWriteToIndexCopy),
    "autograd-history-kept-in-state": _factory(autograd_history.AutogradHistoryKeptInState),
    "cache-keyed-by-object-identity": _factory(identity_keys.CacheKeyedByObjectIdentity),
    "task-result-discarded": _factory(task_references.TaskResultDiscarded),
    "task-cancelled-without-await": _factory(task_references.TaskCancelledWithoutAwait),
    "no-op-lifecycle-method": _factory(noop_lifecycle.NoOpLifecycleMethod),
}


def build_matcher(rule: Rule) -> Matcher:
    """The matcher a rule names; a ``RuleLibraryError`` when it cannot be built."""
    spec = rule.matcher
    if spec is None:
        raise RuleLibraryError(f"{rule.origin}: rule {rule.id!r}: manual rule has no matcher; review it by hand")
    try:
        if spec.emitted_by is not None:
            return HookEmittedMatcher(rule.id, spec.emitted_by)
        if spec.python is not None:
            factory = PYTHON_MATCHERS.get(spec.python)
            if factory is None:
                raise MatcherSpecError(_unknown(spec.python))
            return factory.build(rule.id, spec.python, spec.options)
        return compile_pattern(rule.id, spec.pattern or {}, spec.origin.line)
    except MatcherSpecError as exc:
        line = exc.line or spec.origin.line
        raise RuleLibraryError(f"{spec.origin.file}:{line}: rule {rule.id!r}: matcher: {exc}") from None


def check_matcher(rule: Rule) -> None:
    """The loader's ``check_rule``: the rule's matcher block compiles, else a ``file:line`` error."""
    if rule.matcher is not None:
        build_matcher(rule)


def _unknown(matcher_id: str) -> str:
    from ...library.fields import suggest

    return (
        f"unknown python matcher {matcher_id!r}{suggest(matcher_id, PYTHON_MATCHERS)}; "
        f"registered: {', '.join(sorted(PYTHON_MATCHERS))}"
    )
