"""The runner's protocol: every event survives the line it travels on, typed on both ends."""

from __future__ import annotations

import pytest

from rltrefactor.perf.protocol import (Capture, Captured, CheckInfo, CountRow, Done, Failed, Loaded, LoadFailure,
                                       Measured, Measurement, Skipped, Started, from_line, to_line)
from rltrefactor.perf.records import PerfAllocatorDelta, PerfCudaEvidence, PerfSyncWarnings, PerfTotals

_ROW = CountRow("sync", "aten._local_scalar_dense", "", "eng/r.py", 12, "n = x.item()", "Runner.step", 4, 0)
_CUDA = PerfCudaEvidence(PerfSyncWarnings(4, {"eng/r.py:12": 4}), PerfAllocatorDelta(5, 160, 0),
                         {"cudaStreamSynchronize": 4})

EVENTS = [
    Loaded("2.13.0", False, (CheckInfo("hooks.c:step", "hooks/c.py", 9, "auto", ("eng/r.py::Runner.step",)),),
           (LoadFailure("hooks/broken.py", 1, "cannot import micro-check file: ImportError: x"),)),
    Started("hooks.c:step"),
    Measured("hooks.c:step", Measurement("cpu", (("eng/r.py", "Runner.step"),), (_ROW,), True,
                                         (PerfTotals(4, 0, 1),) * 3), 0.25),
    Measured("hooks.c:step", Measurement("cuda:0", (), (_ROW,), False, (PerfTotals(4, 0, 1), PerfTotals(5, 0, 1)),
                                         _CUDA), 1.5),
    Captured("hooks.c:step", Capture(trace_bytes=2048, events=17, export_seconds=0.1), 0.5),
    Captured("hooks.c:step", Capture(export_error="RuntimeError: disk full"), 0.5),
    Skipped("hooks.c:gpu_only", "needs cuda, which this machine does not have"),
    Failed("hooks.c:step", "eng/r.py", 12, "AttributeError: 'Runner' object has no attribute 'extra'"),
    Done(),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_every_event_round_trips_through_one_line(event):
    line = to_line(event)
    assert "\n" not in line
    assert from_line(line.encode("utf-8")) == event


def test_a_line_that_is_no_event_is_refused():
    with pytest.raises(ValueError, match="not a perf runner event"):
        from_line('{"event": "progress", "check": "x"}')
