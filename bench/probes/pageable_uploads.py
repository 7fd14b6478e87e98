"""Where a non_blocking upload from pageable memory starts to wait for the stream.

Each size is copied with ``.to("cuda", non_blocking=True)`` behind about 50 ms of queued
matrix products; the host time spent in the call says whether it waited for them, and
``stream.query()`` right after it whether the device was still busy (the call returned
early). Pinned sources and downloads are measured beside it for reference.

    python3 bench/probes/pageable_uploads.py [--repeats 5] [--sizes BYTES,...] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from queued_work import per_matmul_ms

SIZES = [64 << (2 * i) for i in range(11)]  # 64 B, 256 B, ... 64 MiB
SIZES = sorted(set(SIZES + [16 << 10, 32 << 10, 48 << 10, 96 << 10, 128 << 10, 192 << 10, 512 << 10]))


def _queue_work(a: torch.Tensor, ms: float, matmul_ms: float) -> None:
    for _ in range(max(1, round(ms / matmul_ms))):
        torch.mm(a, a)


def measure(source: torch.Tensor, queued_ms: float, a: torch.Tensor, per_mm: float, download: bool = False) -> tuple[float, bool]:
    """(host ms in the call, device still busy right after it)."""
    torch.cuda.synchronize()
    _queue_work(a, queued_ms, per_mm)
    started = time.perf_counter()
    if download:
        source.to("cpu", non_blocking=True)
    else:
        source.to("cuda", non_blocking=True)
    host_ms = (time.perf_counter() - started) * 1e3
    busy = not torch.cuda.current_stream().query()
    torch.cuda.synchronize()
    return host_ms, busy


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--queued-ms", type=float, default=50.0)
    parser.add_argument("--sizes", help="comma-separated byte counts instead of the default sweep")
    parser.add_argument("--json")
    args = parser.parse_args()
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    per_mm = per_matmul_ms(a)
    rows = []
    for nbytes in [int(n) for n in args.sizes.split(",")] if args.sizes else SIZES:
        pageable = torch.ones(nbytes, dtype=torch.uint8)
        pinned = pageable.pin_memory()
        on_device = pageable.to("cuda")
        row: dict[str, object] = {"bytes": nbytes}
        for label, source, download in (("pageable", pageable, False), ("pinned", pinned, False),
                                        ("download", on_device, True)):
            runs = [measure(source, args.queued_ms, a, per_mm, download) for _ in range(args.repeats)]
            row[f"{label}_ms"] = round(statistics.median(ms for ms, _ in runs), 3)
            row[f"{label}_returned_early"] = sum(busy for _, busy in runs)
        rows.append(row)
        print(json.dumps(row), flush=True)
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "queued_ms": args.queued_ms,
            "matmul_ms": round(per_mm, 3), "repeats": args.repeats}
    print(json.dumps(meta))
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"meta": meta, "rows": rows}, out, indent=1)


if __name__ == "__main__":
    main()
