"""Real-device evidence for one body on cuda, beside the dispatch counts (imports torch).

Three independent witnesses, each from its own run of the body after the counted runs:
sync-debug warnings (``torch.cuda.set_sync_debug_mode("warn")``), the caching
allocator's request counters (``torch.cuda.memory_stats``), and the CUDA runtime calls
that the profiler records (``cudaStreamSynchronize``, ``cudaMemcpy*``, ...).
"""

from __future__ import annotations

import os
import warnings
from collections import Counter
from typing import Callable

import torch

from .records import PerfAllocatorDelta, PerfCudaEvidence, PerfSyncWarnings
from .attribution import RepoFrames

_RUNTIME_PREFIXES = (
    "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
    "cudaMemcpy", "cuMemcpy", "cudaMemsetAsync",
)


def cuda_evidence(body: Callable[[], object], frames: RepoFrames) -> PerfCudaEvidence:
    return PerfCudaEvidence(_sync_warnings(body, frames), _allocator_delta(body), _runtime_events(body))


def _sync_warnings(body: Callable[[], object], frames: RepoFrames) -> PerfSyncWarnings:
    torch.cuda.synchronize()
    previous = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            body()
        finally:
            torch.cuda.set_sync_debug_mode(previous)
    torch.cuda.synchronize()
    sites: Counter[str] = Counter()
    for warning in caught:
        if "synchroniz" not in str(warning.message):
            continue
        sites[_warning_site(warning, frames)] += 1
    return PerfSyncWarnings(sum(sites.values()), dict(sorted(sites.items())))


def _warning_site(warning: warnings.WarningMessage, frames: RepoFrames) -> str:
    root = frames.root + os.sep
    filename = os.path.realpath(warning.filename)
    if filename.startswith(root):
        return f"{os.path.relpath(filename, frames.root)}:{warning.lineno}"
    return "(outside the repository)"


def _allocator_delta(body: Callable[[], object]) -> PerfAllocatorDelta:
    torch.cuda.synchronize()  # rltrefactor: ignore[device-synchronize-in-hot-path] measurement: counters are read once the device has drained
    before = torch.cuda.memory_stats()
    body()
    torch.cuda.synchronize()  # rltrefactor: ignore[device-synchronize-in-hot-path] measurement: counters are read once the device has drained
    after = torch.cuda.memory_stats()

    def delta(key: str) -> int:
        return int(after.get(key, 0) - before.get(key, 0))

    return PerfAllocatorDelta(
        requests=delta("allocation.all.allocated"),
        bytes=delta("allocated_bytes.all.allocated"),
        segments=delta("segment.all.allocated"),
    )


def _runtime_events(body: Callable[[], object]) -> dict[str, int]:
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()  # rltrefactor: ignore[device-synchronize-in-hot-path] measurement: counters are read once the device has drained
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        body()
    counts: Counter[str] = Counter()
    for event in prof.events():
        if event.name.startswith(_RUNTIME_PREFIXES):
            counts[event.name] += 1
    return dict(sorted(counts.items()))
