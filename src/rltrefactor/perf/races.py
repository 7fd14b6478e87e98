"""Host accesses to the host side of a non-blocking copy still in flight (no torch).

A non-blocking download into pinned memory, or upload out of it, returns before the
data has moved. Until a host wait covers it, the copy is *in flight*: reading (or
writing) the destination of a download reads whatever was there before, and writing
the source of an upload changes what the device receives. What covers a copy:

- a device wait (``torch.cuda.synchronize()``, ``torch.accelerator.synchronize()``);
- a wait on its stream: ``stream.synchronize()``, or a blocking op on that stream that
  waits for it (``.item()``, a blocking download such as ``.cpu()``, a data-dependent
  shape such as ``nonzero``);
- ``event.synchronize()`` of an event recorded on its stream after the copy was issued.

A stream waiting for an event (``stream.wait_event``) orders device work only: the host
is not covered. Memory is compared as byte ranges, so a view or slice of the buffer is
the buffer. Each race is reported once per (copy, reading line).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .attribution import Site

CopySide = Literal["download", "upload"]


@dataclass(frozen=True)
class InFlight:
    """The host side of one non-blocking copy the host has not waited for."""

    side: CopySide  # "download": the host memory is the destination; "upload": the source
    start: int  # host address range [start, end)
    end: int
    stream: int
    order: int  # issue order among this run's copies
    site: Site  # the copying line


@dataclass(frozen=True)
class Race:
    """A host access at ``site`` to memory of ``copy`` while it is in flight."""

    copy: InFlight
    site: Site
    access: str  # the op that touched it: "aten._local_scalar_dense", "Tensor.tolist", ...

    @property
    def kind(self) -> str:
        return "download-read" if self.copy.side == "download" else "upload-write"


def race_direction(race: Race) -> str:
    """The counter's direction field for a race: ``download-read at eng/run.py:85: y = x.to(...)``."""
    copy = race.copy.site
    return f"{race.kind} at {copy.path}:{copy.line}: {copy.source}"


@dataclass(frozen=True)
class CopyingLine:
    """A race's copy, read back from its direction field."""

    kind: str  # "download-read" | "upload-write"
    site: str  # "path:line"
    source: str


def copying_line(direction: str) -> CopyingLine:
    kind, _, rest = direction.partition(" at ")
    site, _, source = rest.partition(": ")
    return CopyingLine(kind, site, source)


@dataclass
class RaceTracker:
    """Copies in flight during one measured run, and the races against them."""

    in_flight: list[InFlight] = field(default_factory=list)
    races: list[Race] = field(default_factory=list)
    _issued: int = 0
    _events: dict[int, tuple[int, int]] = field(default_factory=dict)  # event id -> (stream, copies issued then)
    _reported: set[tuple[int, Site]] = field(default_factory=set)

    def issued(self, side: CopySide, start: int, end: int, stream: int, site: Site) -> None:
        self._issued += 1
        if end > start:
            self.in_flight.append(InFlight(side, start, end, stream, self._issued, site))

    def event_recorded(self, event: int, stream: int) -> None:
        self._events[event] = (stream, self._issued)

    def event_synchronized(self, event: int) -> None:
        recorded = self._events.get(event)
        if recorded is not None:
            stream, issued = recorded
            self.in_flight = [c for c in self.in_flight if c.stream != stream or c.order > issued]

    def stream_synchronized(self, stream: int) -> None:
        self.in_flight = [c for c in self.in_flight if c.stream != stream]

    def device_synchronized(self) -> None:
        self.in_flight.clear()

    def accessed(self, start: int, end: int, *, write: bool, site: Site, access: str) -> None:
        """The host touched [start, end): a race with every in-flight copy it overlaps
        (a download on any access, an upload only when written)."""
        for copy in self.in_flight:
            if copy.start < end and start < copy.end and (copy.side == "download" or write):
                key = (copy.order, site)
                if key not in self._reported:
                    self._reported.add(key)
                    self.races.append(Race(copy, site, access))
