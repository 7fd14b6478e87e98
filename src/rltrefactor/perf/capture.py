"""One profiler capture of one micro-check, in its own process and directory (imports torch).

The two modes differ only in what the profiler records, never in the window:

| setting | ops-only | full |
|---|---|---|
| CPU + device activity | on | on |
| record_shapes / profile_memory / with_stack | off | on |
| with_flops | off unless asked | off unless asked |

Device activity is recorded only where a device exists; a CPU-only capture says so in
its metadata and is never described as a device capture. Profiled numbers are
evidence for attribution, not performance results.
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import torch
from torch.profiler import ProfilerActivity, profile

from ..change.files import write_atomic
from .attribution import RepoFrames
from .loading import LoadedCheck
from .protocol import Capture

if TYPE_CHECKING:
    from torch.autograd.profiler_util import FunctionEventAvg

_LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")
_RUNTIME_SYNCS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")
_ATEN_COPIES = ("aten::copy_", "aten::_to_copy", "aten::clone")
_ATEN_SYNCS = ("aten::_local_scalar_dense", "aten::nonzero", "aten::masked_select", "aten::_unique2")


class Settings(TypedDict):
    activities: list[str]
    record_shapes: bool
    profile_memory: bool
    with_stack: bool
    with_flops: bool


def settings_for(mode: str, device: torch.device, flops: bool) -> Settings:
    full = mode == "full"
    activities = ["cpu"] + (["cuda"] if device.type == "cuda" else [])  # rltrefactor: ignore[branch-on-accelerator-type] the perf hook measures on the device it was given; which counters exist depends on its type
    return {"activities": activities, "record_shapes": full, "profile_memory": full,
            "with_stack": full, "with_flops": flops}


def capture(check: LoadedCheck, device: torch.device, args: argparse.Namespace, frames: RepoFrames) -> Capture:
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=False)  # a fresh directory per capture, never reused
    settings = settings_for(args.profile, device, args.flops)
    body = check.start(device)
    if not callable(body):
        raise TypeError(f"the micro-check must return a zero-argument callable (got {type(body).__name__})")
    body()  # warm-up: shapes, caches and lazy initialisation stay out of the window
    _sync(device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])  # rltrefactor: ignore[branch-on-accelerator-type] the perf hook measures on the device it was given; which counters exist depends on its type
    started = time.perf_counter()
    with profile(activities=activities, record_shapes=settings["record_shapes"],
                 profile_memory=settings["profile_memory"], with_stack=settings["with_stack"],
                 with_flops=settings["with_flops"]) as prof:
        for _ in range(args.window):
            body()
        _sync(device)
    capture_s = time.perf_counter() - started
    meta = _metadata(check, device, args, settings, capture_s)
    exported = _export(prof, out)
    if exported.export_error:
        meta["export_error"] = exported.export_error
    else:
        meta.update(export_seconds=exported.export_seconds, trace_bytes=exported.trace_bytes, events=exported.events)
        write_atomic(str(out / "ops.json"), json.dumps(operator_summary(prof, device), indent=1))
    write_atomic(str(out / "meta.json"), json.dumps(meta, indent=1, sort_keys=True))
    return exported


def _sync(device: torch.device) -> None:
    if device.type == "cuda":  # rltrefactor: ignore[branch-on-accelerator-type] the perf hook measures on the device it was given; which counters exist depends on its type
        torch.cuda.synchronize()


def _export(prof: profile, out: Path) -> Capture:
    raw, part = out / "trace.json", out / "trace.json.gz.part"
    started = time.perf_counter()
    try:
        prof.export_chrome_trace(str(raw))
        with open(raw, "rb") as source, gzip.open(part, "wb") as target:
            shutil.copyfileobj(source, target)
        part.replace(out / "trace.json.gz")  # never a half-written trace
    except Exception as exc:  # noqa: BLE001 - kept as evidence, reported by the parent
        return Capture(export_error=f"{type(exc).__name__}: {exc}".splitlines()[0])
    finally:
        raw.unlink(missing_ok=True)
        part.unlink(missing_ok=True)
    return Capture(
        export_seconds=round(time.perf_counter() - started, 4),
        trace_bytes=(out / "trace.json.gz").stat().st_size,
        events=len(prof.events()),  # type: ignore[no-untyped-call]  # torch leaves it unannotated
    )


def _metadata(
    check: LoadedCheck, device: torch.device, args: argparse.Namespace, settings: Settings, capture_s: float
) -> dict[str, object]:
    on_device = device.type == "cuda"
    return {
        "kind": "profiled capture: not a performance result",
        "capture": "cpu+cuda" if on_device else "cpu-only (no device activity recorded)",
        "device": torch.cuda.get_device_name(device) if on_device else "cpu",
        "mode": args.profile,
        "settings": settings,
        "micro_check": check.name,
        "window": args.window,
        "side": args.side,
        "revision": args.revision,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "capture_seconds": round(capture_s, 4),
        "artifacts": ["trace.json.gz", "ops.json", "meta.json"],
    }


def _self_device_us(avg: FunctionEventAvg) -> float:
    return float(getattr(avg, "self_device_time_total", 0.0) or 0.0)


def operator_summary(prof: profile, device: torch.device) -> dict[str, object]:
    averages = list(prof.key_averages())
    by_key = {a.key: a for a in averages}

    def count(names: tuple[str, ...]) -> int:
        return sum(by_key[n].count for n in by_key if n.startswith(names))

    # Every operator, busiest first: a truncated list would show an operator as absent
    # on one side when it merely fell below the cut there.
    ranked = sorted(averages, key=lambda a: (-_self_device_us(a), -a.self_cpu_time_total, a.key))
    return {
        "kind": "profiled operator summary: not a performance result",
        "device_times": device.type == "cuda",
        "launches": count(_LAUNCHES),
        "copies": {"aten": count(_ATEN_COPIES), "runtime_memcpy": count(("cudaMemcpy", "cuMemcpy"))},
        "syncs": {"aten": count(_ATEN_SYNCS), "runtime": count(_RUNTIME_SYNCS)},
        "operators": [
            {"name": a.key, "count": a.count, "self_cpu_us": round(a.self_cpu_time_total, 3),
             "self_device_us": round(_self_device_us(a), 3)}
            for a in ranked
        ],
    }
