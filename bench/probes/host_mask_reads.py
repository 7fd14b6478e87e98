"""Whether indexing a device tensor with a mask the host holds waits for the device.

Each form runs behind about 50 ms of queued matrix products: the host time spent in the
call says whether it waited for them, and ``stream.query()`` right after it whether the
device was still busy (the call returned early). Each form also runs once under
``torch.cuda.set_sync_debug_mode("warn")``. Controls: the same mask on the device (a
``nonzero`` the host must size), ``.item()`` and a blocking ``.cpu()``.

    python3 bench/probes/host_mask_reads.py [--repeats 5] [--elements N] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings

import torch

from queued_work import per_matmul_ms


def _timed(form, a: torch.Tensor, matmuls: int) -> tuple[float, bool]:
    """(host ms in the call, device still busy right after it)."""
    torch.cuda.synchronize()
    for _ in range(matmuls):
        torch.mm(a, a)
    started = time.perf_counter()
    form()
    host_ms = (time.perf_counter() - started) * 1e3
    busy = not torch.cuda.current_stream().query()
    torch.cuda.synchronize()
    return host_ms, busy


def _sync_reported(form) -> bool:
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            form()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()
    return any("synchroniz" in str(w.message) for w in caught)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--queued-ms", type=float, default=50.0)
    parser.add_argument("--elements", type=int, default=1 << 20, help="elements of the tensor and its mask")
    parser.add_argument("--json")
    args = parser.parse_args()
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    matmuls = max(1, round(args.queued_ms / per_matmul_ms(a)))
    x = torch.randn(args.elements, device="cuda")
    host_mask = torch.rand(args.elements) > 0.5
    device_mask = host_mask.to("cuda")
    host_index = host_mask.nonzero().squeeze(1)
    forms = {
        "x[host_mask] (read)": lambda: x[host_mask],
        "x[~host_mask] (read, mask computed on the host)": lambda: x[~host_mask],
        "x[host_index] (read, host long index)": lambda: x[host_index],
        "x[host_mask] = 0 (write a number)": lambda: x.__setitem__(host_mask, 0.0),
        "x.to('cpu', non_blocking=True)": lambda: x.to("cpu", non_blocking=True),
        "control: x[device_mask] (read)": lambda: x[device_mask],
        "control: x.sum().item()": lambda: x.sum().item(),
        "control: x.cpu()": lambda: x.cpu(),
    }
    rows = []
    for name, form in forms.items():
        form()  # warm-up: caches, allocator
        runs = [_timed(form, a, matmuls) for _ in range(args.repeats)]
        row = {"form": name, "host_ms": round(statistics.median(ms for ms, _ in runs), 3),
               "returned_early": f"{sum(busy for _, busy in runs)}/{len(runs)}", "sync_reported": _sync_reported(form)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "queued_ms": args.queued_ms,
            "matmuls": matmuls, "repeats": args.repeats, "elements": args.elements}
    print(json.dumps(meta))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"rows": rows, "meta": meta}, handle, indent=1)


if __name__ == "__main__":
    main()
