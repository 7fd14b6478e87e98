"""What a whole review returns: the findings, what was dropped and why, the errors,
the timings, and the perf summary when the hook ran."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ..library.model import Rule
from ..perf.records import PerfSummary
from ..severity import Severity, at_least
from ..types import ChangedFunction, ChangeSet, Drop, FileError, Finding
from .moves import MovedToRunLess


@dataclass(frozen=True)
class ReviewResult:
    change: ChangeSet
    library_version: str
    rules_run: tuple[Rule, ...]  # in library order
    files_reviewed: tuple[str, ...]  # read by the engine (some maybe only in part: see below)
    # Reported findings, suppressed and pre-existing ones included (flagged as such);
    # findings outside the change, in the baseline or repeated in a function go to ``drops``.
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
    docs_url: str | None = None  # the rules reference reports link rule ids to; None: none
    library_versions: str = ""  # bundled and local library versions, as ``Library.versions`` says them
    library_rules: int = 0  # rules in the loaded library, as ``rules list`` counts them
    checklist: tuple["Rule", ...] = ()  # manual rules of the areas the change touched, in library order
    # Code the change moved to where it runs less often: improvements, never findings
    # (the finding there is pre-existing and names where the code came from).
    moved_to_run_less: tuple[MovedToRunLess, ...] = ()

    @property
    def improvements(self) -> int:
        """Lines of code moved to run less often: two rules' findings on one moved line are one improvement."""
        return len({(m.path, m.line) for m in self.moved_to_run_less})

    @property
    def baselined(self) -> int:
        """Hits a baseline held back: recorded there, so dropped instead of reported."""
        return sum(drop.reason == "baseline" for drop in self.drops)

    @property
    def unknown_frequency(self) -> int:
        """Full-scan findings held back because nothing shows how often their code runs."""
        return sum(drop.reason == "unknown-frequency" for drop in self.drops)

    @property
    def new_code_rules(self) -> int:
        """Full-scan findings held back because their rules report on new code alone."""
        return sum(drop.reason == "new-code-rule" for drop in self.drops)

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
            and f.status == "new"
            and at_least(f.severity, self.fail_on)
        )
