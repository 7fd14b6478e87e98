"""Records that flow between the pipeline's stages.

change source -> ChangeSet(ChangedFile...) -> SourceFile -> Hit -> Finding -> ReviewResult

Every record is frozen: a stage never edits what an earlier stage produced, it
returns a new record (``dataclasses.replace``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Mapping, get_args

if TYPE_CHECKING:
    from .library.model import Rule

FileStatus = Literal["added", "modified", "renamed", "deleted", "copied"]
ContentKind = Literal["git", "index", "worktree"]
Severity = Literal["error", "warning", "info"]  # the one definition: most severe first
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
FindingStatus = Literal["new", "pre-existing"]


def at_least(severity: Severity, threshold: Severity) -> bool:
    """Whether ``severity`` is ``threshold`` or more severe (the ``--fail-on`` test)."""
    return SEVERITIES.index(severity) <= SEVERITIES.index(threshold)


@dataclass(frozen=True)
class Revision:
    """Where file contents are read from.

    ``kind="git"`` reads blob ``ref:path`` from the object store, ``"index"`` reads the
    staged blob, ``"worktree"`` reads the file on disk under the repository root.
    """

    kind: ContentKind
    ref: str | None = None  # full commit SHA when kind == "git"


@dataclass(frozen=True)
class Hunk:
    """One block of consecutive changed lines, numbered as ``git diff -U0`` numbers it.

    ``old_length`` lines from ``old_start`` became ``new_length`` lines from ``new_start``;
    a length of 0 means nothing on that side, and its start is then the line just before
    the block (0: before the first line).
    """

    old_start: int
    old_length: int
    new_start: int
    new_length: int


@dataclass(frozen=True)
class ChangedFile:
    path: str  # repo-relative, POSIX separators; for a deletion, the old path
    status: FileStatus
    old_path: str | None = None  # set for renamed/copied/deleted/modified files
    added_lines: frozenset[int] = frozenset()  # 1-based head lines added or modified
    binary: bool = False
    hunks: tuple[Hunk, ...] = ()  # from the same diff as added_lines; () without a diff

    @property
    def is_python(self) -> bool:
        return self.path.endswith((".py", ".pyi"))

    @property
    def deletion_anchors(self) -> frozenset[int]:
        """Head line just before each place where lines were only deleted (at least 1)."""
        return frozenset(max(h.new_start, 1) for h in self.hunks if h.new_length == 0 and h.old_length)


@dataclass(frozen=True)
class ChangeSet:
    """What one review looks at.

    ``base`` is the resolved base commit (None for a patch file or a full scan);
    ``full_scan`` means every line of every file counts as changed.
    """

    repo_root: str | None
    head: Revision
    files: tuple[ChangedFile, ...]
    base: str | None = None
    full_scan: bool = False
    description: str = ""


@dataclass(frozen=True)
class Span:
    line: int  # 1-based
    column: int  # 1-based
    end_line: int
    end_column: int  # 1-based, exclusive


@dataclass(frozen=True)
class Definition:
    qualname: str  # e.g. "ModelRunner.execute" or "<module>"
    kind: Literal["function", "class", "module"]
    start_line: int
    end_line: int


@dataclass(frozen=True)
class Hit:
    """A matcher's raw output, before scoping, suppression or fingerprinting."""

    rule_id: str
    span: Span
    matched_text: str  # source of the matched node, used in the fingerprint
    bindings: Mapping[str, str] = field(default_factory=dict)  # metavariable -> source


@dataclass(frozen=True)
class PerfEvidence:
    check: str  # micro-check name, "module:function"
    category: Literal["sync", "copy", "alloc"]
    base_count: int
    head_count: int
    device: str
    detail: str = ""  # e.g. "+1 sync at engine/runner.py:212 — step_tokens.item()"


@dataclass(frozen=True)
class Finding:
    rule_id: str
    area: str
    title: str
    severity: Severity
    path: str
    span: Span
    impact: str
    fix: str
    fingerprint: str
    definition: str = "<module>"  # qualified name of the enclosing definition
    snippet: str = ""  # the flagged source line(s), as read from the head revision
    status: FindingStatus = "new"
    suppressed: bool = False
    disposition: str | None = None  # reason given in the suppression comment
    confirmed: bool = False  # a perf delta landed on this line
    perf: PerfEvidence | None = None
    # Where the flagged code runs, for rules that depend on it (device residency):
    # "per-step" or "unknown", with the evidence; "" for every other rule.
    execution: str = ""
    execution_evidence: str = ""
    confidence: str = ""  # the rule's confidence, lowered where the execution is unknown
    # Lines of the same rule's other new findings in the same function, reported here once.
    also_at: tuple[int, ...] = ()


@dataclass(frozen=True)
class FileError:
    path: str
    message: str
    line: int | None = None
    syntax: bool = False  # the file does not parse (one such error per file is reported)


@dataclass(frozen=True)
class FileOutcome:
    """What reviewing one file produced: its findings, its errors, how much was parsed."""

    path: str
    findings: tuple[Finding, ...]
    errors: tuple[FileError, ...]
    parsed_lines: int  # lines handed to LibCST; 0 when the prefilter ruled every statement out

    @property
    def parsed(self) -> bool:
        return self.parsed_lines > 0


@dataclass(frozen=True)
class Drop:
    """A finding that was not reported, and why."""

    finding: Finding
    # "confirms-finding": a measured addition recorded on the static finding of the same problem
    reason: Literal["outside-change", "ignored-by-config", "baseline", "repeat-in-function", "confirms-finding"]


@dataclass(frozen=True)
class PerfDelta:
    """One site whose per-call count of a category differs between base and head."""

    check: str
    category: Literal["sync", "copy", "alloc"]
    path: str  # repo-relative; "" when the op could not be attributed to repo code
    line: int
    source: str  # the source text of that line at its side's revision
    base_count: int
    head_count: int
    device: str
    bytes_delta: int = 0  # allocations: head bytes minus base bytes

    @property
    def added(self) -> bool:
        return self.head_count > self.base_count


@dataclass(frozen=True)
class PerfTotals:
    """Events of one measured call, per category."""

    sync: int = 0
    copy: int = 0
    alloc: int = 0


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


@dataclass(frozen=True)
class ChangedFunction:
    """A function the change touches, and where it runs (see ``execution``)."""

    path: str
    qualname: str  # "<module>" for top-level statements
    execution: Literal["per-step", "one-time", "offline", "unknown", "module"]
    evidence: str


@dataclass(frozen=True)
class ReviewResult:
    change: ChangeSet
    library_version: str
    rules_run: tuple["Rule", ...]  # in library order
    files_reviewed: tuple[str, ...]  # read by the engine (some maybe only in part: see below)
    # Reported findings, suppressed and pre-existing ones included (flagged as such);
    # findings outside the change or ignored by configuration go to ``drops``.
    findings: tuple[Finding, ...]
    drops: tuple[Drop, ...] = ()
    errors: tuple[FileError, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)
    # Where the changed code runs, when rules that depend on it were selected.
    changed_functions: tuple[ChangedFunction, ...] = ()
    fail_on: Severity = "warning"
    perf: PerfSummary | None = None
    files_unreviewable: tuple[str, ...] = ()  # changed files with a recorded error: not fully reviewed
    fail_on_unreviewable: bool = False
    checklist: tuple["Rule", ...] = ()  # manual rules of the areas the change touched, in library order

    @property
    def gate_failed(self) -> bool:
        """The run fails: a failing finding, or an unreviewable file when that is asked for."""
        return bool(self.failing) or (self.fail_on_unreviewable and bool(self.files_unreviewable))

    @property
    def failing(self) -> tuple[Finding, ...]:
        return tuple(
            f
            for f in self.findings
            if not f.suppressed
            and f.status == "new"  # rltrefactor: ignore[string-state-comparison] a typed Literal, checked by the type checker
            and at_least(f.severity, self.fail_on)
        )
