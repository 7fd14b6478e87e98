"""Every automated device-residency rule says which measured kinds confirm its findings."""

from __future__ import annotations

from rltrefactor.library.loader import load_library
from rltrefactor.perf.claims import CLAIMED_KINDS


def test_the_claims_table_names_every_static_residency_rule_and_only_those():
    static = {r.id for r in load_library().rules if r.area == "device-residency" and r.statically_matched}
    assert sorted(static - set(CLAIMED_KINDS)) == []  # a new rule says what a measurement must show to confirm it
    assert sorted(set(CLAIMED_KINDS) - static) == []  # no entry outlives its rule
    assert all(kinds <= {"sync", "copy", "alloc", "race"} for kinds in CLAIMED_KINDS.values())
