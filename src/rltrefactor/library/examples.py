"""Rule examples as tests: a bad example reports exactly on its ``# expect`` lines,
a good example reports nothing.

The path each snippet takes is the engine's: applicability (paths, hot paths, tests),
the text prefilter, one ``FileContext``, the matcher. Outcomes use ast-grep's words:
``validated`` (as expected), ``noisy`` (reports a line it must leave alone),
``missing`` (misses a line it must report), plus ``error`` for a matcher crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

import libcst as cst

from ..config import DEFAULT_HOT_PATHS, DEFAULT_TEST_PATHS
from ..globs import matches
from ..matchers.base import FileContext, Matcher
from ..matchers.registry import build_matcher
from ..types import Definition
from .model import Example, Rule

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


class _ModuleOnly:
    def __init__(self, lines: int) -> None:
        self._lines = lines

    def enclosing(self, line: int) -> Definition:
        return Definition("<module>", "module", 1, self._lines)


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
    path, scope = example.path, rule.applicability
    is_hot, is_test = matches(path, DEFAULT_HOT_PATHS), matches(path, DEFAULT_TEST_PATHS)
    if (scope.hot_paths_only and not is_hot) or (is_test and not scope.tests):
        return []
    if not matches(path, scope.paths) or (scope.exclude and matches(path, scope.exclude)):
        return []
    if matcher.prefilter and not any(token in example.code for token in matcher.prefilter):
        return []
    module = cst.parse_module(example.code)
    ctx = FileContext(
        path, module, is_hot_path=is_hot, is_test=is_test, definitions=_ModuleOnly(example.code.count("\n") + 1)
    )
    return [ctx.span(match.node).line for match in matcher.find(ctx)]


def _lines(numbers: list[int]) -> str:
    return ", ".join(str(n) for n in numbers)
