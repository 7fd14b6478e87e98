"""What each static device-residency rule claims the flagged code costs, in the perf hook's
categories: only a measured addition of one of these kinds on the finding's line confirms it.

The rule library declares no such field, so this table is the one place that says it; it
reads each rule's hazard from its id and impact, not everything its impact mentions on
the way (``host-to-device-copy-per-call`` names the two allocations a copy brings, but an
allocation measured on its line is not that copy). A rule absent from the table, or
mapped to no kind (a wasted fill is no sync, copy or allocation), is never confirmed: a
measurement on its line is shown beside it for what it is.
"""

from __future__ import annotations

from typing import Mapping

SYNC, COPY, ALLOC, RACE = "sync", "copy", "alloc", "race"

CLAIMED_KINDS: Mapping[str, frozenset[str]] = {
    "host-sync-in-hot-path": frozenset({SYNC}),
    "device-synchronize-in-hot-path": frozenset({SYNC}),
    "data-dependent-shape-in-hot-path": frozenset({SYNC}),
    "device-scalar-read-in-hot-path": frozenset({SYNC}),
    "branch-on-device-tensor-value": frozenset({SYNC}),
    "device-tensor-as-python-number": frozenset({SYNC}),
    "boolean-mask-write-in-hot-path": frozenset({SYNC}),
    "python-number-write-into-device-tensor": frozenset({SYNC}),
    "repeat-interleave-without-output-size": frozenset({SYNC}),
    "host-to-device-copy-per-call": frozenset({COPY}),
    "value-transferred-twice": frozenset({COPY}),
    "device-array-placed-again": frozenset({COPY}),
    # A non-blocking upload from pageable memory: the copy, and past about 2 MiB a hidden sync.
    "non-blocking-copy-from-pageable-memory": frozenset({COPY, SYNC}),
    "device-allocation-per-step": frozenset({ALLOC}),
    "device-workspace-allocated-per-call": frozenset({ALLOC}),
    "device-allocation-never-read": frozenset({ALLOC}),
    "tensor-rebuilt-per-layer": frozenset({ALLOC}),
    "arange-index-where-slice-would-do": frozenset({ALLOC}),
    "per-step-host-staging-tensor": frozenset({ALLOC}),
    "constant-tensor-rebuilt-per-call": frozenset({ALLOC}),
    "default-filled-per-call": frozenset({ALLOC}),
    "full-result-computed-for-a-slice": frozenset({ALLOC}),
    "step-metadata-rebuilt-per-layer": frozenset({ALLOC}),
    "payload-copied-twice": frozenset({ALLOC}),
    "zero-fill-before-kernel-overwrite": frozenset(),
    "pinned-slot-rewritten-while-in-flight": frozenset({RACE}),
    "non-blocking-download-read-before-sync": frozenset({RACE}),
}

# How a measured category reads in a sentence, by count.
_NOUNS = {SYNC: ("sync", "syncs"), COPY: ("copy", "copies"), ALLOC: ("allocation", "allocations"), RACE: ("race", "races")}


def claimed_kinds(rule_id: str) -> frozenset[str]:
    """The categories whose measured addition confirms a finding of ``rule_id``; none when unknown."""
    return CLAIMED_KINDS.get(rule_id, frozenset())


def noun(category: str, count: int = 1) -> str:
    """``sync``, ``allocations``: the category as a sentence names ``count`` of it."""
    singular, plural = _NOUNS.get(category, (category, category))
    return singular if abs(count) == 1 else plural


def counted(category: str, count: int) -> str:
    """``+1 sync``, ``+2 allocations``."""
    return f"{count:+d} {noun(category, count)}"
