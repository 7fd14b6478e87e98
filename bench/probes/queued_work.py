"""Device work queued ahead of a form the probes time: bf16 matrix products of a known
length, so that a call which waits for the stream spends about that long on the host."""

from __future__ import annotations

import torch


def per_matmul_ms(a: torch.Tensor) -> float:
    """Milliseconds one ``torch.mm(a, a)`` takes on the device, averaged over ten."""
    torch.mm(a, a)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        torch.mm(a, a)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 10
