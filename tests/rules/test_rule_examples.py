"""Every rule example is a test: bad examples report exactly on their ``# expect``
lines, good examples stay quiet (the runner behind ``rltrefactor rules test``)."""

from __future__ import annotations

import pytest

from rltrefactor.authoring.examples import run_example
from rltrefactor.library.loader import load_library
from rltrefactor.matching.matchers.registry import build_matcher

LIBRARY = load_library()
CASES = [
    pytest.param(rule, example, id=f"{rule.id}-{example.kind}-{index}")
    for rule in LIBRARY.rules
    if rule.statically_matched
    for index, example in enumerate(rule.examples)
]


@pytest.mark.parametrize(("rule", "example"), CASES)
def test_example(rule, example):
    outcome = run_example(rule, build_matcher(rule), example)
    assert outcome.status == "validated", f"{outcome.where}: {outcome.detail}"


def test_bad_examples_report_and_good_ones_exist_for_every_automated_rule():
    for rule in LIBRARY.rules:
        if rule.statically_matched:
            assert any(e.kind == "bad" and e.expected_lines for e in rule.examples), rule.id
            assert any(e.kind == "good" for e in rule.examples), rule.id
