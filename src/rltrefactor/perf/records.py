"""The perf hook's records: deltas per site, totals, device evidence, what nothing
measured, the summary.

Plain frozen records, no torch: reports read them without running the hook.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Mapping

from ..types import FileError


@dataclass(frozen=True)
class PerfDelta:
    """One site whose per-call count of a category differs between base and head."""

    check: str
    category: Literal["sync", "copy", "alloc", "race"]
    path: str  # repo-relative; "" when the op could not be attributed to repo code
    line: int
    source: str  # the source text of that line at its side's revision
    base_count: int
    head_count: int
    device: str
    bytes_delta: int = 0  # allocations: head bytes minus base bytes
    # races: the copy raced, as the counter wrote it ("download-read at path:line: source")
    copied_by: str = ""
    # the measured call reached no changed code, its set-up did: the changed set-up line
    # that explains this delta ("`self.host` is no longer pinned: eng/loader.py:9")
    cause: str = ""

    @property
    def added(self) -> bool:
        return self.head_count > self.base_count


@dataclass(frozen=True)
class PerfTotals:
    """Events of one measured call, per category."""

    sync: int = 0
    copy: int = 0
    alloc: int = 0
    race: int = 0  # host accesses to the host side of a non-blocking copy in flight


@dataclass(frozen=True)
class PerfCheckTotals:
    base: PerfTotals | None  # None: the check covers only code new in the change
    head: PerfTotals


@dataclass(frozen=True)
class PerfSyncWarnings:
    count: int
    sites: Mapping[str, int]  # "path:line" -> warnings there


@dataclass(frozen=True)
class PerfAllocatorDelta:
    requests: int  # caching-allocator requests during one call
    bytes: int
    segments: int  # cudaMalloc calls the cache could not serve


@dataclass(frozen=True)
class PerfCudaEvidence:
    """Real-device evidence of one call on CUDA, beside the counts."""

    sync_debug_warnings: PerfSyncWarnings
    allocator: PerfAllocatorDelta
    runtime_events: Mapping[str, int]  # CUDA runtime synchronize/memcpy calls by name


@dataclass(frozen=True)
class PerfCudaComparison:
    base: PerfCudaEvidence | None
    head: PerfCudaEvidence | None


@dataclass(frozen=True)
class PerfDeviceEvidence:
    """What the hook saw beside the deltas, per micro-check name."""

    ops: Mapping[str, str] = field(default_factory=dict)  # delta site label -> op names
    coverage: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # -> touched "path::qualname"
    # -> the touched entries of ``coverage`` that only its set-up ran (the body ran none)
    set_up: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    skipped: Mapping[str, str] = field(default_factory=dict)  # -> reason
    totals: Mapping[str, PerfCheckTotals] = field(default_factory=dict)
    cuda: Mapping[str, PerfCudaComparison] = field(default_factory=dict)
    torch: str = ""


@dataclass(frozen=True)
class PerfProfileRow:
    """One operator of the profiled base-vs-head table (profiled numbers, not results)."""

    check: str
    operator: str
    label: str
    base_count: int
    head_count: int
    base_self_cpu_us: float
    head_self_cpu_us: float
    base_self_device_us: float
    head_self_device_us: float


@dataclass(frozen=True)
class UnmeasuredFunction:
    """A changed function that runs per step, or might, and that nothing measured ran
    through: a clean perf result says nothing about it."""

    path: str  # repo-relative
    line: int  # first line of the definition at head, decorators included
    qualname: str
    execution: Literal["per-step", "unknown"]  # the execution stage's verdict
    evidence: str  # why it runs per step ("" when unknown)

    @property
    def target(self) -> str:
        """``path::qualname``, as ``rltrefactor perf scaffold`` and ``covers=`` take it."""
        return f"{self.path}::{self.qualname}"


@dataclass(frozen=True)
class PerfUnstableLine:
    """A line of a touched function whose counts differed between a test's two runs."""

    test: str
    side: str  # "base" | "head"
    category: str
    path: str  # at that side's revision
    line: int
    source: str
    runs: tuple[int, int]  # the count in the first and in the second run


@dataclass(frozen=True)
class PerfTestsRun:
    """What measuring the repository's tests found beside the deltas."""

    selected: tuple[str, ...]  # node ids of the tests reaching a touched function
    left_out: Mapping[str, str]  # node id -> why: failed, errored or skipped at base or head
    unstable: tuple[PerfUnstableLine, ...]  # dropped from the comparison
    traced: bool  # False: the selection was read from the cache


@dataclass(frozen=True)
class PerfSummary:
    device: str
    checks: tuple[str, ...]  # micro-checks that ran on both sides
    deltas: tuple[PerfDelta, ...]  # additions and removals; unchanged sites omitted
    errors: tuple[FileError, ...] = ()  # failed/hung/crashed micro-checks, per side
    wall_seconds: float = 0.0
    artifacts_dir: str | None = None  # profile artifacts, when captured
    profile_rows: tuple[PerfProfileRow, ...] = ()
    device_evidence: PerfDeviceEvidence = field(default_factory=PerfDeviceEvidence)
    # Checks covering only code that is new in the change: measured at head, not compared.
    head_only: tuple[str, ...] = ()
    # Micro-checks were there to run, and every one that mattered failed: nothing compared.
    all_failed: bool = False
    # Changed per-step (or possibly per-step) functions nothing measured reached, by path and line.
    not_measured: tuple[UnmeasuredFunction, ...] = ()
    tests: PerfTestsRun | None = None  # measured when the tests were asked for (``--tests``)
