"""The runner subprocess's protocol: typed events, one JSON object per line.

The runner (``runner.py``, the child) builds these records and writes ``to_line(event)``;
the parent (``sides.py``) reads ``from_line(raw)``. Dictionaries exist only inside these
two functions. In order, a run says: ``Loaded``, then per check ``Started`` and one of
``Measured`` | ``Captured`` | ``Skipped`` | ``Failed``, then ``Done``; a ``Started``
without its end tells the parent which check hung or killed the process.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Callable, Union

from .records import PerfAllocatorDelta, PerfCudaEvidence, PerfSyncWarnings, PerfTotals


@dataclass(frozen=True)
class CountRow:
    """Events of one kind at one repository line, in one measured call."""

    category: str  # "sync" | "copy" | "alloc" | "race"
    op: str  # "aten.nonzero", "Tensor.cpu", "torch.cuda.synchronize"
    direction: str  # copies: ``CopyKind.label`` or "to-host"; races: the copying line (``races.py``); else ""
    path: str  # repo-relative; "" when no repository frame was on the stack
    line: int
    source: str
    function: str  # the enclosing top-level definition, for pairing rewritten statements
    count: int
    bytes: int


@dataclass(frozen=True)
class CheckInfo:
    name: str  # "perf_hooks.demo_checks:decode_step"
    path: str
    line: int
    device: str  # "auto" | "cpu" | "cuda", as declared
    covers: tuple[str, ...]


@dataclass(frozen=True)
class LoadFailure:
    path: str
    line: int | None
    message: str


@dataclass(frozen=True)
class Measurement:
    device: str  # the torch device it ran on, "cpu" or "cuda:0"
    coverage: tuple[tuple[str, str], ...]  # (path, qualname) the traced warm-up called
    counts: tuple[CountRow, ...]  # of the first counted run
    deterministic: bool  # every counted run gave the same rows
    run_totals: tuple[PerfTotals, ...]  # per counted run
    evidence: PerfCudaEvidence | None = None  # on cuda only
    # A test's second counted run (a test's lines are judged stable run by run); () for checks.
    repeat_counts: tuple[CountRow, ...] = ()
    # (path, qualname) the traced set-up called (micro-checks with ``--trace``; () for tests)
    setup_coverage: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Capture:
    """What the parent needs of a profile capture; meta.json beside it holds the rest."""

    trace_bytes: int = 0
    events: int = 0
    export_seconds: float = 0.0
    export_error: str = ""  # set when the trace could not be exported


@dataclass(frozen=True)
class Loaded:
    torch: str
    cuda: bool
    checks: tuple[CheckInfo, ...]
    load_errors: tuple[LoadFailure, ...]


@dataclass(frozen=True)
class Started:
    check: str


@dataclass(frozen=True)
class Measured:
    check: str
    result: Measurement
    seconds: float


@dataclass(frozen=True)
class Captured:
    check: str
    result: Capture
    seconds: float


@dataclass(frozen=True)
class Skipped:
    check: str
    reason: str


@dataclass(frozen=True)
class Failed:
    check: str
    path: str  # where in the repository it failed; "" when not in repository code
    line: int | None
    message: str


@dataclass(frozen=True)
class Done:
    pass


Event = Union[Loaded, Started, Measured, Captured, Skipped, Failed, Done]
_NAMES: dict[type, str] = {Loaded: "loaded", Started: "start", Measured: "result", Captured: "capture",
                           Skipped: "skipped", Failed: "error", Done: "done"}


def to_line(event: Event) -> str:
    return json.dumps({"event": _NAMES[type(event)], **asdict(event)}, sort_keys=True)


def from_line(raw: str | bytes) -> Event:
    """The event one protocol line carries; ``ValueError`` for anything else."""
    data = json.loads(raw)
    decode = _DECODERS.get(data.pop("event", None) if isinstance(data, dict) else None)
    if decode is None:
        raise ValueError(f"not a perf runner event: {raw[:80]!r}")
    return decode(data)


def _evidence(data: dict[str, Any] | None) -> PerfCudaEvidence | None:
    if data is None:
        return None
    return PerfCudaEvidence(PerfSyncWarnings(**data["sync_debug_warnings"]), PerfAllocatorDelta(**data["allocator"]),
                            data["runtime_events"])


def _measurement(data: dict[str, Any]) -> Measurement:
    return Measurement(
        device=data["device"],
        coverage=tuple((path, name) for path, name in data["coverage"]),
        counts=tuple(CountRow(**row) for row in data["counts"]),
        deterministic=data["deterministic"],
        run_totals=tuple(PerfTotals(**totals) for totals in data["run_totals"]),
        evidence=_evidence(data["evidence"]),
        repeat_counts=tuple(CountRow(**row) for row in data.get("repeat_counts", ())),
        setup_coverage=tuple((path, name) for path, name in data.get("setup_coverage", ())),
    )


_DECODERS: dict[str | None, Callable[[dict[str, Any]], Event]] = {
    "loaded": lambda d: Loaded(d["torch"], d["cuda"],
                               tuple(CheckInfo(**{**c, "covers": tuple(c["covers"])}) for c in d["checks"]),
                               tuple(LoadFailure(**e) for e in d["load_errors"])),
    "start": lambda d: Started(d["check"]),
    "result": lambda d: Measured(d["check"], _measurement(d["result"]), d["seconds"]),
    "capture": lambda d: Captured(d["check"], Capture(**d["result"]), d["seconds"]),
    "skipped": lambda d: Skipped(d["check"], d["reason"]),
    "error": lambda d: Failed(d["check"], d["path"], d["line"], d["message"]),
    "done": lambda d: Done(),
}
