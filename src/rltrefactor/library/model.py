"""The rule model: what one YAML entry means once validated."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, get_args

from ..severity import Severity

AREAS = (
    "responsibilities-state",
    "capability-selection",
    "shared-logic",
    "interfaces",
    "lifecycle",
    "configuration-readability",
    "device-residency",
    "loop-semantics",
)
RuleStatus = Literal["active", "experimental", "retired"]
STATUSES: tuple[RuleStatus, ...] = get_args(RuleStatus)
# "default": runs unless ignored. "pedantic": an opt-in group, for rules whose measured
# findings are less than half worth acting on; it runs only when selected by name or id.
RuleGroup = Literal["default", "pedantic"]
GROUPS: tuple[RuleGroup, ...] = get_args(RuleGroup)
# Below this share of findings judged true, a rule belongs in the pedantic group.
DEFAULT_GROUP_MIN_TRUE = 0.5
# "all-code": reported wherever it matches. "new-code": a rule about how code is written
# (an interface, a state, a capability check), reported on the code a change adds; a full
# scan of existing code holds its findings back.
ReportsOn = Literal["all-code", "new-code"]
REPORTS_ON: tuple[ReportsOn, ...] = get_args(ReportsOn)
ExampleKind = Literal["bad", "good"]
ModuleKind = Literal["kernel", "configuration"]
MODULE_KINDS: tuple[ModuleKind, ...] = get_args(ModuleKind)
CONFIDENCES = ("high", "medium", "low")
FIX_SAFETY = ("safe", "unsafe", "manual")


@dataclass(frozen=True)
class Origin:
    """Where a piece of rule data was written: for `file:line` errors."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Applicability:
    paths: tuple[str, ...] = ("**/*.py",)
    exclude: tuple[str, ...] = ()
    # "per-step": findings only in code that may run on every step, launch or request;
    # the engine leaves out the rest (see ``engine`` and ``matchers.context.runs_cold``).
    per_step: bool = False  # ``runs: per-step`` in YAML
    # Kinds of module (read from their content, see ``module_kinds``) the rule leaves alone.
    exclude_modules: tuple[ModuleKind, ...] = ()
    tests: bool = False  # whether test files are reviewed by this rule


@dataclass(frozen=True)
class Precision:
    """How a rule's findings were judged by hand on real code, and on what."""

    true: int
    debatable: int
    false: int
    measured: str  # which findings were judged: library version and corpus

    @property
    def judged(self) -> int:
        return self.true + self.debatable + self.false

    @property
    def true_share(self) -> float | None:
        """Share of judged findings worth acting on; None when nothing was judged."""
        return self.true / self.judged if self.judged else None

    @property
    def figure(self) -> str:
        """``4/9 true (44 %), 3 debatable, 2 false``, or that nothing was found to judge."""
        share = self.true_share
        if share is None:
            return "no findings to judge"
        return f"{self.true}/{self.judged} true ({round(share * 100)} %), {self.debatable} debatable, {self.false} false"


@dataclass(frozen=True)
class Example:
    kind: ExampleKind
    code: str
    path: str  # virtual repo-relative path the example is reviewed as
    origin: Origin
    # 1-based lines of ``code`` that must report (marked ``# expect``); empty for good.
    expected_lines: tuple[int, ...] = ()


@dataclass(frozen=True)
class MatcherSpec:
    """Either a declarative pattern tree (``pattern``) or a registered Python matcher."""

    origin: Origin
    pattern: Mapping[str, Any] | None = None  # the YAML ``matcher`` mapping, validated
    python: str | None = None  # registry id
    options: Mapping[str, Any] = field(default_factory=dict)
    # Set for rules whose findings another stage produces (``perf-hook``): the static
    # matcher of such a rule never hits.
    emitted_by: str | None = None


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    area: str
    status: RuleStatus
    since: str
    severity: Severity
    confidence: str
    applicability: Applicability
    problem: str
    preferred: str
    exceptions: str
    impact: str  # template: may use $METAVARS bound by the matcher
    fix: str  # template, as impact
    fix_safety: str
    references: tuple[str, ...]
    examples: tuple[Example, ...]
    matcher: MatcherSpec | None  # None: a manual (checklist) rule
    origin: Origin
    library: str = "bundled"  # "bundled" or the repo-local rule directory
    group: RuleGroup = "default"
    precision: Precision | None = None  # None: not measured
    # Why a rule measured under DEFAULT_GROUP_MIN_TRUE stays in the default group; empty
    # for every other rule. Shown wherever the figure is.
    kept_default: str = ""
    reports_on: ReportsOn = "all-code"

    @property
    def automated(self) -> bool:
        return self.matcher is not None

    @property
    def statically_matched(self) -> bool:
        """Whether reviewing source text can produce this rule's findings."""
        return self.matcher is not None and self.matcher.emitted_by is None

    @property
    def anchor(self) -> str:
        """Anchor of this rule in the rendered rules reference (``rules docs``)."""
        return self.id


@dataclass(frozen=True)
class Library:
    version: str
    schema: int
    rules: tuple[Rule, ...]
    retired_ids: frozenset[str] = frozenset()  # ids that may never be reused
    # Repository-local rule directories loaded beside the bundled rules: (label, version).
    local_versions: tuple[tuple[str, str], ...] = ()

    @property
    def versions(self) -> str:
        """The bundled version, and each local library's beside it: ``1.4.1 + review/rules 0.3.0``."""
        return " + ".join([self.version, *(f"{label} {version}" for label, version in self.local_versions)])

    def get(self, rule_id: str) -> Rule | None:
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        return None

    @property
    def by_id(self) -> Mapping[str, Rule]:
        return {rule.id: rule for rule in self.rules}
