"""The library and the matcher registry agree: nothing unused, nothing unresolved."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from rltrefactor.config import Config
from rltrefactor.matching.engine import Engine
from rltrefactor.library.loader import load_library
from rltrefactor.library.model import AREAS
from rltrefactor.matching.matchers.registry import PYTHON_MATCHERS, build_matcher

LIBRARY = load_library()
CHANGELOG = Path(__file__).resolve().parents[2] / "rules" / "CHANGELOG.md"


def test_every_statically_matched_rule_has_a_prefilter():
    # An empty prefilter would run the matcher on every file of every review.
    unfiltered = [rule.id for rule in LIBRARY.rules if rule.statically_matched and not build_matcher(rule).prefilter]
    assert unfiltered == []


def test_every_registered_python_matcher_is_used_by_a_rule():
    used = {rule.matcher.python for rule in LIBRARY.rules if rule.matcher and rule.matcher.python}
    assert used == set(PYTHON_MATCHERS)


def test_no_id_the_changelog_names_has_left_the_library_without_being_retired():
    # The loader rejects duplicate and reused ids; only history shows an id that vanished.
    # An entry about rules starts with their ids: "- `a-rule`, `b-rule`: what changed".
    leads = re.findall(r"^- ((?:`[a-z0-9-]+`(?:,? and |, )?)+):", CHANGELOG.read_text(encoding="utf-8"), re.M)
    named = {name for lead in leads for name in re.findall(r"`([a-z][a-z0-9]*(?:-[a-z0-9]+)+)`", lead)}
    assert len(named) >= 10  # the pattern still finds the rule ids the entries start with
    known = {rule.id for rule in LIBRARY.rules} | LIBRARY.retired_ids
    assert sorted(named - known) == []


def test_every_example_path_is_one_the_rule_applies_to():
    # A good example whose path the rule skips stays quiet without testing anything.
    outside = []
    for rule in LIBRARY.rules:
        if not rule.statically_matched:
            continue
        engine = Engine((rule,), Config(), frozenset({rule.id}))
        outside += [(rule.id, example.kind, example.path) for example in rule.examples
                    if rule.id not in {r.id for r, _ in engine.applicable(example.path)}]
    assert outside == []


def test_every_area_has_rules_and_the_library_meets_its_v1_size():
    areas = Counter(rule.area for rule in LIBRARY.rules)
    assert set(areas) == set(AREAS)
    assert len(LIBRARY.rules) >= 25
    assert sum(1 for rule in LIBRARY.rules if rule.statically_matched) >= 15


def test_perf_hook_rules_are_declared_and_never_hit_statically():
    for rule_id in ("perf-added-sync", "perf-added-copy", "perf-added-alloc"):
        rule = LIBRARY.get(rule_id)
        assert rule is not None and rule.area == "device-residency"
        assert rule.automated and not rule.statically_matched
        matcher = build_matcher(rule)
        assert not any(token in "import torch\nx.item()\n" for token in matcher.prefilter)
