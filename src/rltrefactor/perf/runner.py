"""One side's micro-checks, run in their own process: ``python -m rltrefactor.perf.runner``.

The parent reads JSON lines from this process's stdout: ``loaded``, then per check
``start`` and ``result`` | ``error`` | ``skipped``, then ``done``. The check code's own
output (Python or C level) goes to stderr, so it can never corrupt the protocol; a
``start`` without its end tells the parent which check hung or killed the process.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
import warnings

from .attribution import RepoFrames
from .loading import LoadedCheck, load_checks


class Channel:
    """The protocol stream: the original stdout; fd 1 now points at stderr."""

    def __init__(self) -> None:
        self._stream = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
        os.dup2(2, 1)
        sys.stdout = sys.stderr

    def emit(self, event: str, **fields: object) -> None:
        self._stream.write(json.dumps({"event": event, **fields}, sort_keys=True) + "\n")
        self._stream.flush()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="rltrefactor.perf.runner")
    parser.add_argument("--root", required=True)
    parser.add_argument("--hooks", required=True)
    parser.add_argument("--check", action="append", default=[])
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--profile", choices=("ops-only", "full"))
    parser.add_argument("--out-dir")
    parser.add_argument("--window", type=int, default=1)
    parser.add_argument("--flops", action="store_true")
    parser.add_argument("--revision", default="")
    parser.add_argument("--side", default="")
    return parser.parse_args(argv)


def resolve_device(declared: str, override: str):
    """The torch.device a check runs on, or None when it needs cuda and there is none."""
    import torch

    choice = override if declared == "auto" else declared
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    if choice == "cuda" and not torch.cuda.is_available():
        return None
    return torch.device(choice)


def failure(exc: BaseException, frames: RepoFrames) -> dict[str, object]:
    """Where in the repository a check failed, and the exception's one-line form."""
    path, line = "", None
    for frame in traceback.extract_tb(exc.__traceback__):
        code_site = frames.root + os.sep
        if os.path.realpath(frame.filename).startswith(code_site):
            path = os.path.relpath(os.path.realpath(frame.filename), frames.root).replace(os.sep, "/")
            line = frame.lineno
    message = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return {"path": path, "line": line, "message": message}


def measure(check: LoadedCheck, device, args, frames: RepoFrames) -> dict[str, object]:
    import torch

    from .counting import counting
    from .tracing import tracing

    body = check.start(device)
    if not callable(body):
        raise TypeError(f"the micro-check must return a zero-argument callable (got {type(body).__name__})")
    with tracing(frames) as called:
        body()  # the warm-up run: excluded from the counts, traced for coverage
    if device.type == "cuda":
        torch.cuda.synchronize()
    runs = []
    for _ in range(max(args.repeats, 1)):
        with counting(frames, device) as counter:
            body()
        runs.append(_serialize(counter))
    result: dict[str, object] = {
        "device": str(device),
        "coverage": sorted(called) if args.trace else [],
        "counts": runs[0],
        "deterministic": all(run == runs[0] for run in runs),
        "run_totals": [_totals(run) for run in runs],
    }
    if device.type == "cuda":
        from .evidence import cuda_evidence

        result["evidence"] = cuda_evidence(body, frames)
    return result


def _serialize(counter) -> list[dict[str, object]]:
    rows = [
        {
            "category": key.category, "op": key.op, "direction": key.direction,
            "path": key.site.path, "line": key.site.line, "source": key.site.source,
            "function": key.site.function,
            "count": count, "bytes": counter.bytes[key],
        }
        for key, count in counter.counts.items()
    ]
    return sorted(rows, key=lambda r: (r["path"], r["line"], r["category"], r["op"], r["direction"]))


def _totals(rows: list[dict[str, object]]) -> dict[str, int]:
    totals = {"sync": 0, "copy": 0, "alloc": 0}
    for row in rows:
        totals[str(row["category"])] += int(row["count"])  # type: ignore[arg-type]
    return totals


def run_check(check: LoadedCheck, args, frames: RepoFrames, channel: Channel) -> None:
    channel.emit("start", check=check.name)
    started = time.perf_counter()
    try:
        device = resolve_device(check.spec.device, args.device)
        if device is None:
            channel.emit("skipped", check=check.name, reason="needs cuda, which this machine does not have")
            return
        if args.profile:
            from .capture import capture

            payload = capture(check, device, args, frames)
        else:
            payload = measure(check, device, args, frames)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a failing check is reported, not fatal
        channel.emit("error", check=check.name, **failure(exc, frames))
        return
    payload["seconds"] = round(time.perf_counter() - started, 4)
    channel.emit("result", check=check.name, **payload)


def main(argv: list[str] | None = None) -> int:
    channel = Channel()
    args = parse_args(argv)
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    root = os.path.realpath(args.root)
    frames = RepoFrames(root)
    checks, load_errors = load_checks(root, args.hooks)
    import torch

    channel.emit(
        "loaded",
        torch=torch.__version__,
        cuda=torch.cuda.is_available(),
        checks=[{"name": c.name, "path": c.path, "line": c.line, "device": c.spec.device,
                 "covers": list(c.spec.covers)} for c in checks],
        load_errors=[e.__dict__ for e in load_errors],
    )
    wanted = set(args.check)
    for check in checks:
        if not wanted or check.name in wanted:
            run_check(check, args, frames, channel)
    channel.emit("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
