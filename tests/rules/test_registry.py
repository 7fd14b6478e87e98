"""The library and the matcher registry agree: nothing unused, nothing unresolved."""

from __future__ import annotations

from collections import Counter

from rltrefactor.library.loader import load_library
from rltrefactor.library.model import AREAS
from rltrefactor.matchers.registry import PYTHON_MATCHERS, build_matcher

LIBRARY = load_library()


def test_every_rule_matcher_resolves_and_has_a_prefilter_type():
    for rule in LIBRARY.rules:
        if rule.automated:
            matcher = build_matcher(rule)
            assert matcher.rule_id == rule.id
            assert isinstance(matcher.prefilter, tuple)


def test_every_registered_python_matcher_is_used_by_a_rule():
    used = {rule.matcher.python for rule in LIBRARY.rules if rule.matcher and rule.matcher.python}
    assert used == set(PYTHON_MATCHERS)


def test_ids_are_unique_and_never_reuse_a_retired_id():
    counts = Counter(rule.id for rule in LIBRARY.rules)
    assert [rule_id for rule_id, n in counts.items() if n > 1] == []
    active = {rule.id for rule in LIBRARY.rules if rule.status != "retired"}
    assert not active & LIBRARY.retired_ids


def test_every_rule_has_bad_and_good_examples():
    for rule in LIBRARY.rules:
        kinds = {example.kind for example in rule.examples}
        assert kinds == {"bad", "good"}, rule.id


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
