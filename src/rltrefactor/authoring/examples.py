"""Rule examples as tests: a bad example reports exactly on its ``# expect`` lines,
a good example reports nothing.

Each snippet goes through the engine itself, as a file at the example's path with the
default configuration: applicability (paths, hot paths, tests), the prefilter, region
planning, import aliases, the matcher. Outcomes use ast-grep's words:
``validated`` (as expected), ``noisy`` (reports a line it must leave alone),
``missing`` (misses a line it must report), plus ``error`` for a matcher crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

from ..config import Config
from ..matching.engine import Engine
from ..matching.matchers.base import Matcher
from ..matching.matchers.registry import build_matcher
from ..library.model import Example, Rule

Status = Literal["validated", "noisy", "missing", "error"]


@dataclass(frozen=True)
class ExampleOutcome:
    rule_id: str
    example: Example
    status: Status
    reported: tuple[int, ...]  # 1-based lines of the snippet that reported
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "validated"

    @property
    def where(self) -> str:
        """``file:line`` of the example's first code line in the rule file."""
        return str(self.example.origin)


def run_examples(rule: Rule, matcher_factory: Callable[[Rule], Matcher] = build_matcher) -> list[ExampleOutcome]:
    """Every example of a statically matched rule; manual and hook-emitted rules have none to run."""
    if not rule.statically_matched:
        return []
    matcher = matcher_factory(rule)
    return [run_example(rule, matcher, example) for example in rule.examples]


def run_example(rule: Rule, matcher: Matcher, example: Example) -> ExampleOutcome:
    expected = set(example.expected_lines)
    try:
        reported = sorted(set(_report(rule, matcher, example)))
    except Exception as exc:  # noqa: BLE001 - a crash is an outcome of the test, not of the run
        return ExampleOutcome(rule.id, example, "error", (), f"matcher crashed: {type(exc).__name__}: {exc}")
    missing = sorted(expected - set(reported))
    noisy = sorted(set(reported) - expected)
    details = []
    if missing:
        details.append(f"does not report line(s) {_lines(missing)} marked # expect")
    if noisy:
        details.append(f"reports line(s) {_lines(noisy)} that must stay quiet")
    status: Status = "missing" if missing else "noisy" if noisy else "validated"
    return ExampleOutcome(rule.id, example, status, tuple(reported), "; ".join(details))


def _report(rule: Rule, matcher: Matcher, example: Example) -> list[int]:
    engine = Engine((rule,), Config(), frozenset({rule.id}), matcher_factory=lambda _: matcher)
    outcome = engine.review_file(example.path, example.code)
    if outcome.errors:
        raise RuntimeError("; ".join(error.message for error in outcome.errors))
    return [finding.span.line for finding in outcome.findings if finding.rule_id == rule.id]


def _lines(numbers: list[int]) -> str:
    return ", ".join(str(n) for n in numbers)
