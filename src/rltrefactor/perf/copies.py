"""What one copy costs the host, from where its data lives (no torch: reports read it).

A copy is classified by direction (h2d, d2h, d2d, host), the memory on each side
(``pinned`` or ``pageable`` host memory, or ``device``), its size and whether it was
asked not to block. The label travels in the counter's ``direction`` field
(``h2d pageable->device non_blocking``), so the runner's rows need no new column.

``non_blocking=True`` overlaps only what pinned memory allows. An upload from pageable
memory is staged by the driver: small ones return at once, larger ones wait until the
stream reaches the copy, which is a hidden synchronization. The counter counts those as
a sync at their line, with ``hidden_sync_reason`` as the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Memory = Literal["pinned", "pageable", "device"]

# A non_blocking upload from pageable memory larger than this many bytes waits for the
# stream. Measured on an NVIDIA H200 behind queued matrix products (bench/perf_gpu.md,
# "Pageable non_blocking uploads: where they start to wait"): every size up to the
# constant returned while the device was still busy; the next size up waited.
PAGEABLE_NON_BLOCKING_WAIT_BYTES = 2 * 1024 * 1024

_HOST_MEMORY = ("pinned", "pageable")


@dataclass(frozen=True)
class CopyKind:
    """One copy, as the host sees it."""

    direction: str  # "h2d" | "d2h" | "d2d" | "host"
    source: Memory
    destination: Memory
    non_blocking: bool  # as asked; whether it really overlaps is ``waits_for_stream``'s answer
    nbytes: int

    @property
    def label(self) -> str:
        """``h2d pageable->device non_blocking``: the counter's direction field."""
        mode = "non_blocking" if self.non_blocking else "blocking"
        return f"{self.direction} {self.source}->{self.destination} {mode}"

    @property
    def hidden_sync(self) -> bool:
        """A non_blocking upload from pageable memory past the staging size: it waits."""
        return (self.direction == "h2d" and self.source == "pageable" and self.non_blocking
                and self.nbytes > PAGEABLE_NON_BLOCKING_WAIT_BYTES)

    @property
    def in_flight_after_return(self) -> bool:
        """The call returns before the data has moved: the host must not touch the host side yet."""
        if not self.non_blocking:
            return False
        return (self.direction == "d2h" and self.destination == "pinned") or (
            self.direction == "h2d" and self.source == "pinned")


def classify(source_device: str, source_pinned: bool, destination_device: str, destination_pinned: bool,
             non_blocking: bool, nbytes: int) -> CopyKind:
    """The kind of a copy from its tensors' properties (device type, ``is_pinned()``, bytes)."""
    source = _memory(source_device, source_pinned)
    destination = _memory(destination_device, destination_pinned)
    on_host = (source in _HOST_MEMORY, destination in _HOST_MEMORY)
    direction = {(True, True): "host", (True, False): "h2d", (False, True): "d2h", (False, False): "d2d"}[on_host]
    return CopyKind(direction, source, destination, non_blocking, nbytes)


def _memory(device: str, pinned: bool) -> Memory:
    if device != "cpu":
        return "device"
    return "pinned" if pinned else "pageable"


def hidden_sync_reason(ops: str, nbytes: int) -> str:
    """Why a sync delta whose op labels are ``ops`` ("aten._to_copy h2d pageable->device
    non_blocking, ...") is one, when a hidden-sync upload is among them; else ""."""
    for op in ops.split(", "):
        if " h2d pageable->" in op and op.endswith(" non_blocking"):
            return f"non_blocking upload of {nbytes} bytes from pageable memory waits for the stream"
    return ""
