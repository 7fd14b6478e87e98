"""Records that flow between the pipeline's stages.

change source -> ChangeSet(ChangedFile...) -> Hit -> Finding -> FileOutcome, and the
result of a whole review (``result.ReviewResult``) built from them.

Every record is frozen: a stage never edits what an earlier stage produced, it
returns a new record (``dataclasses.replace``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Mapping

from .severity import Severity

FileStatus = Literal["added", "modified", "renamed", "deleted", "copied"]
ContentKind = Literal["git", "index", "worktree"]
FindingStatus = Literal["new", "pre-existing"]


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
    # Files of the change git could not give (their blobs are absent): never reviewed.
    errors: tuple[FileError, ...] = ()
    # Changed files the PATH arguments left out; counted only when they select none.
    unselected: int = 0


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
    residency: str = ""  # "device", "unknown" or "" (``matchers.base.Match.residency``)
    residency_of: str = ""  # the value's source text, when ``residency`` is set
    residency_why: str = ""  # what placed it there, or which fact is missing (``Match.residency_why``)
    fix: str = ""  # a fix fitted to the shape of the flagged code, in place of the rule's (``matching.fix_shapes``)
    # Where alone a synchronizing hit runs, as a clause: a host copy missing
    # (``residency.mirrors``), tensors off CUDA or a kernel missing (``residency.portable_paths``).
    runs_only_where: str = ""


@dataclass(frozen=True)
class PerfEvidence:
    """What a perf micro-check measured on a finding's line (the perf hook's records
    are in ``perf.records``)."""

    check: str  # micro-check name, "module:function"
    category: Literal["sync", "copy", "alloc", "race"]
    base_count: int
    head_count: int
    device: str
    detail: str = ""  # e.g. "+1 sync at engine/runner.py:212 — step_tokens.item()"
    # The other categories the check added on the same line, as (category, added count).
    also: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class BaseLocation:
    """Where code stood at the base revision: its file and enclosing definition."""

    path: str
    definition: str  # qualified name, "<module>" outside every definition


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
    # Rules of other findings of the same problem (one expression, or its consequence on
    # the next line), reported here once.
    also_rules: tuple[str, ...] = ()
    moved_from: BaseLocation | None = None  # a pre-existing finding whose code moved here from elsewhere
    # ``impact`` is one sentence of what this code costs. ``evidence`` is at most one line
    # showing the cost is real here (where the code runs, what the perf hook measured on
    # this line); ``notes`` are the caveats and context of the claim (how often it runs is
    # not visible, where a value lives is unknown, other rules and lines of the problem),
    # shown by ``--explain`` and in JSON, never in the default view.
    evidence: str = ""
    notes: tuple[str, ...] = ()

    @property
    def explanation(self) -> str:
        """The full text: the impact, its evidence and every note, as sentences."""
        return " ".join(part for part in (self.impact, self.evidence, *self.notes) if part)


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
    # (path, digest of its text) of every other repository module the matchers read
    # (``contents.FileTexts``): a cached outcome holds only while they are unchanged.
    modules_read: tuple[tuple[str, str], ...] = ()

    @property
    def parsed(self) -> bool:
        return self.parsed_lines > 0


@dataclass(frozen=True)
class Drop:
    """A finding that was not reported, and why."""

    finding: Finding
    # "confirms-finding": a measured addition recorded on the static finding of the same problem;
    # "merged-into-finding": a finding of another rule reported, with its id, on the same problem;
    # "unknown-frequency": a full scan's per-step finding in code nothing is seen running per step;
    # "new-code-rule": a full scan's finding of rules that report on new code alone
    reason: Literal["outside-change", "baseline", "repeat-in-function", "confirms-finding", "merged-into-finding",
                    "unknown-frequency", "new-code-rule"]


@dataclass(frozen=True)
class ChangedFunction:
    """A function the change touches, and where it runs (see ``execution``)."""

    path: str
    qualname: str  # "<module>" for top-level statements
    execution: Literal["per-step", "per-request", "one-time", "offline", "unknown", "module"]
    evidence: str
