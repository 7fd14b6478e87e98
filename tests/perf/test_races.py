"""The race check's bookkeeping and what becomes of a race: pure functions, no torch.

``RaceTracker`` is fed what the counter sees on a device run (copies issued, events
recorded, waits, host accesses); the GPU tests drive it from real tensors.
"""

from __future__ import annotations

from rltrefactor.perf.attribution import Site
from rltrefactor.perf.deltas import compare, detail
from rltrefactor.perf.protocol import CountRow
from rltrefactor.perf.races import RaceTracker, copying_line, race_direction
from rltrefactor.perf.records import PerfDelta, PerfDeviceEvidence, PerfSummary

COPY = Site("eng/step.py", 10, 'host = ids.to("cpu", non_blocking=True)', "Runner.step")
READ = Site("eng/step.py", 12, "return host.tolist()", "Runner.step")
MAIN, SIDE = 1, 2  # stream handles


def _downloaded(tracker: RaceTracker, stream: int = MAIN) -> None:
    tracker.issued("download", 1000, 1100, stream, COPY)


def _read(tracker: RaceTracker, start: int = 1000, end: int = 1100, write: bool = False) -> list[tuple[str, int, int]]:
    tracker.accessed(start, end, write=write, site=READ, access="Tensor.tolist")
    return [(r.kind, r.copy.site.line, r.site.line) for r in tracker.races]


def test_a_host_read_of_a_download_in_flight_is_a_race_naming_the_copy():
    tracker = RaceTracker()
    _downloaded(tracker)
    assert _read(tracker, 1050, 1058) == [("download-read", 10, 12)]


def test_every_host_wait_that_covers_the_copy_ends_it():
    covered = []
    for wait in ("device", "stream", "event after"):
        tracker = RaceTracker()
        _downloaded(tracker)
        if wait == "device":
            tracker.device_synchronized()
        elif wait == "stream":
            tracker.stream_synchronized(MAIN)
        else:
            tracker.event_recorded(7, MAIN)
            tracker.event_synchronized(7)
        covered.append(_read(tracker))
    assert covered == [[], [], []]


def test_waits_that_do_not_cover_the_copy_leave_it_in_flight():
    # An event recorded before the copy, an event of another stream, another stream's
    # sync, an event recorded but never waited on: none covers it.
    cases = []
    for setup in ("event before", "event on side stream", "side stream sync", "recorded only"):
        tracker = RaceTracker()
        if setup == "event before":
            tracker.event_recorded(7, MAIN)
        _downloaded(tracker)
        if setup == "event on side stream":
            tracker.event_recorded(7, SIDE)
        elif setup == "side stream sync":
            tracker.stream_synchronized(SIDE)
        elif setup == "recorded only":
            tracker.event_recorded(8, MAIN)
        tracker.event_synchronized(7)
        cases.append(_read(tracker))
    assert cases == [[("download-read", 10, 12)]] * 4


def test_memory_outside_the_copy_is_no_race():
    tracker = RaceTracker()
    _downloaded(tracker)
    assert _read(tracker, 1100, 1200) == [] and _read(tracker, 900, 1000) == []


def test_an_upload_races_only_with_a_host_write_into_its_source():
    tracker = RaceTracker()
    tracker.issued("upload", 1000, 1100, MAIN, COPY)
    assert _read(tracker) == []
    assert _read(tracker, write=True) == [("upload-write", 10, 12)]


def test_a_race_is_reported_once_per_copy_and_reading_line():
    tracker = RaceTracker()
    _downloaded(tracker)
    _read(tracker)
    assert len(_read(tracker)) == 1
    _downloaded(tracker)  # the next step copies again: a new copy, a new race
    assert len(_read(tracker)) == 2


def test_the_race_direction_round_trips():
    tracker = RaceTracker()
    _downloaded(tracker)
    _read(tracker)
    line = copying_line(race_direction(tracker.races[0]))
    assert (line.kind, line.site, line.source) == ("download-read", "eng/step.py:10", COPY.source)


def _race_row(line: int, copy_line: int, source: str = READ.source) -> CountRow:
    direction = f"download-read at eng/step.py:{copy_line}: {COPY.source}"
    return CountRow("race", "Tensor.tolist", direction, "eng/step.py", line, source, "Runner.step", 1, 0)


def test_a_race_at_both_revisions_pairs_even_when_lines_move():
    assert compare("c", "cuda:0", [_race_row(12, 10)], [_race_row(15, 13)], {})[0] == []


def test_a_race_only_at_head_is_an_addition_that_names_its_copy():
    (delta,), labels = compare("c", "cuda:0", [], [_race_row(15, 13)], {})
    assert (delta.category, delta.line, delta.added) == ("race", 15, True)
    assert copying_line(delta.copied_by).site == "eng/step.py:13"
    assert detail(delta) == ("+1 race at eng/step.py:15 — return host.tolist() "
                             "(while the copy at eng/step.py:13 is in flight)")


def _summary(*deltas: PerfDelta, ops: dict[str, str] | None = None) -> PerfSummary:
    return PerfSummary(device="cuda:0", checks=("c",), deltas=deltas, device_evidence=PerfDeviceEvidence(ops=ops or {}))


def test_an_added_race_is_a_perf_copy_race_finding_at_the_reading_line():
    from rltrefactor.perf import perf_findings

    delta = PerfDelta("c", "race", "eng/step.py", 12, READ.source, 0, 1, "cuda:0",
                      copied_by=f"download-read at eng/step.py:10: {COPY.source}")
    (finding,) = perf_findings(_summary(delta))
    assert (finding.rule_id, finding.span.line, finding.severity) == ("perf-copy-race", 12, "error")
    assert finding.impact.startswith(
        f"eng/step.py:12 reads the destination of the non-blocking download at eng/step.py:10 (`{COPY.source}`)")
    assert "eng/step.py:10" in finding.fix and finding.perf is not None and finding.perf.category == "race"


def test_a_race_outranks_a_sync_on_the_same_line():
    from rltrefactor.perf import perf_findings

    race = PerfDelta("c", "race", "eng/step.py", 12, READ.source, 0, 1, "cuda:0",
                     copied_by=f"download-read at eng/step.py:10: {COPY.source}")
    sync = PerfDelta("c", "sync", "eng/step.py", 12, READ.source, 0, 1, "cuda:0")
    (finding,) = perf_findings(_summary(sync, race))
    assert finding.rule_id == "perf-copy-race" and finding.evidence == "Also on this line: +1 sync."


def test_a_hidden_sync_says_why_with_the_bytes_and_an_ordinary_one_does_not():
    from rltrefactor.perf import perf_findings

    upload = PerfDelta("c", "sync", "eng/step.py", 5, "t = table.to(dev, non_blocking=True)", 0, 2, "cuda:0",
                       bytes_delta=2 * (3 << 20))
    item = PerfDelta("c", "sync", "eng/step.py", 6, "n = x.item()", 0, 1, "cuda:0")
    ops = {"c|sync|eng/step.py:5": "aten._to_copy h2d pageable->device non_blocking",
           "c|sync|eng/step.py:6": "aten._local_scalar_dense"}
    first, second = perf_findings(_summary(upload, item, ops=ops))
    assert first.evidence == (
        "Why it is a sync: non_blocking upload of 3145728 bytes from pageable memory waits for the stream.")
    assert "Why it is a sync" not in second.explanation


def test_a_measured_race_or_hidden_sync_confirms_the_static_finding_on_its_line():
    from rltrefactor.perf import confirm, perf_findings
    from rltrefactor.types import Finding, Span

    def static(rule: str, line: int) -> Finding:
        return Finding(rule, "device-residency", "t", "warning", "eng/step.py", Span(line, 5, line, 40), "i.", "f", "fp")

    race = PerfDelta("c", "race", "eng/step.py", 12, READ.source, 0, 1, "cuda:0",
                     copied_by=f"download-read at eng/step.py:10: {COPY.source}")
    upload = PerfDelta("c", "sync", "eng/step.py", 5, "t = table.to(dev, non_blocking=True)", 0, 1, "cuda:0",
                       bytes_delta=3 << 20)
    measured = perf_findings(_summary(race, upload))
    found, drops = confirm([static("non-blocking-download-read-before-sync", 12),
                            static("non-blocking-copy-from-pageable-memory", 5),
                            static("non-blocking-copy-from-pageable-memory", 7), *measured])
    assert [(f.span.line, f.confirmed, f.perf.category if f.perf else None) for f in found] == [
        (12, True, "race"), (5, True, "sync"), (7, False, None)]
    assert sorted(d.finding.rule_id for d in drops) == ["perf-added-sync", "perf-copy-race"]
