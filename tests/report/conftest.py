"""Records for report tests, built directly: reporters are pure functions of them.

Tests reach the builders through the ``rec`` fixture (works in every import mode).
"""

from __future__ import annotations

from dataclasses import replace
import types
from typing import Any

import pytest

from rltrefactor.library.model import Applicability, MatcherSpec, Origin, Rule
from rltrefactor.findings.result import ReviewResult
from rltrefactor.types import ChangedFile, ChangeSet, Finding, Revision, Span

BASE_SHA = "1111111111111111111111111111111111111111"
HEAD_SHA = "2222222222222222222222222222222222222222"
ORIGIN = Origin("rules/device-residency.yaml", 3)


def rule(rule_id: str = "host-sync-in-hot-path", **overrides: Any) -> Rule:
    fields: dict[str, Any] = dict(
        id=rule_id,
        title="Host synchronization on a hot path",
        area="device-residency",
        status="active",
        since="1.0.0",
        severity="error",
        confidence="high",
        applicability=Applicability(per_step=True),
        problem="`.item()` blocks the host until the device queue drains.",
        preferred="Keep values on the device.",
        exceptions="Once per request, outside the step loop.",
        impact="`$X.item()` blocks the host.",
        fix="Keep $X on the device.",
        fix_safety="manual",
        references=("https://pytorch.org/docs/stable/notes/cuda.html",),
        examples=(),
        matcher=MatcherSpec(origin=ORIGIN, python=rule_id),
        origin=ORIGIN,
    )
    fields.update(overrides)
    return Rule(**fields)


def manual_rule(rule_id: str, area: str, title: str = "Check by hand") -> Rule:
    return rule(rule_id, area=area, title=title, matcher=None, severity="info")


def finding(rule_id: str = "host-sync-in-hot-path", *, line: int = 10, **overrides: Any) -> Finding:
    fields: dict[str, Any] = dict(
        rule_id=rule_id,
        area="device-residency",
        title="Host synchronization on a hot path",
        severity="error",
        path="model_executor/runner.py",
        span=Span(line, 9, line + 2, 20),
        impact="`logits.argmax(-1).item()` blocks the host every step.",
        fix="Keep the argmax on the device.",
        fingerprint=f"fp-{rule_id}-execute",
        definition="ModelRunner.execute",
        snippet="return logits.argmax(-1).item()",
    )
    fields.update(overrides)
    return Finding(**fields)


def result(*findings: Finding, rules: tuple[Rule, ...] | None = None, **overrides: Any) -> ReviewResult:
    change = ChangeSet(
        repo_root=None,
        head=Revision("git", HEAD_SHA),
        files=(ChangedFile("model_executor/runner.py", "modified", added_lines=frozenset({10})),),
        base=BASE_SHA,
        description="origin/main...HEAD",
    )
    fields: dict[str, Any] = dict(
        change=change,
        library_version="1.0.0",
        rules_run=rules if rules is not None else (rule(),),
        files_reviewed=("model_executor/runner.py",),
        findings=findings,
    )
    fields.update(overrides)
    return ReviewResult(**fields)


def with_change(res: ReviewResult, **changes: Any) -> ReviewResult:
    return replace(res, change=replace(res.change, **changes))


@pytest.fixture
def rec() -> types.SimpleNamespace:
    return types.SimpleNamespace(
        rule=rule,
        manual_rule=manual_rule,
        finding=finding,
        result=result,
        with_change=with_change,
        BASE_SHA=BASE_SHA,
        HEAD_SHA=HEAD_SHA,
    )
