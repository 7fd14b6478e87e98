"""One side's micro-checks, run in their own process: ``python -m rltrefactor.perf.runner``.

The parent reads this process's stdout: one ``protocol`` event per line. The check
code's own output (Python or C level) goes to stderr, so it can never corrupt the
protocol.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
import warnings
from typing import TYPE_CHECKING

from .records import PerfTotals
from .attribution import RepoFrames
from .loading import LoadedCheck, load_checks
from .protocol import (Captured, CheckInfo, CountRow, Done, Event, Failed, Loaded, LoadFailure, Measured,
                       Measurement, Skipped, Started, to_line)
from .grad_modes import measure_through_inference_mode
from .stubs import install_stubs

if TYPE_CHECKING:
    import torch

    from .counting import OpCounter


class Channel:
    """The protocol stream: the original stdout; fd 1 now points at stderr."""

    def __init__(self) -> None:
        self._stream = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
        os.dup2(2, 1)
        sys.stdout = sys.stderr

    def emit(self, event: Event) -> None:
        self._stream.write(to_line(event) + "\n")
        self._stream.flush()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="rltrefactor.perf.runner")
    parser.add_argument("--root", required=True)
    parser.add_argument("--hooks", required=True)
    parser.add_argument("--check", action="append", default=[])
    parser.add_argument("--stub", action="append", default=[], metavar="MODULE", help="import a stub for MODULE")
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


def resolve_device(declared: str, override: str) -> torch.device | None:
    """The torch.device a check runs on, or None when it needs cuda and there is none."""
    import torch

    choice = override if declared == "auto" else declared
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    if choice == "cuda" and not torch.cuda.is_available():  # rltrefactor: ignore[branch-on-accelerator-type] the perf hook measures on the device it was given; which counters exist depends on its type
        return None
    return torch.device(choice)


def failure(check: str, exc: BaseException, frames: RepoFrames) -> Failed:
    """Where in the repository a check failed, and the exception's one-line form."""
    path, line = "", None
    for frame in traceback.extract_tb(exc.__traceback__):
        code_site = frames.root + os.sep
        if os.path.realpath(frame.filename).startswith(code_site):
            path = os.path.relpath(os.path.realpath(frame.filename), frames.root).replace(os.sep, "/")
            line = frame.lineno
    message = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return Failed(check, path, line, message)


def measure(check: LoadedCheck, device: torch.device, args: argparse.Namespace, frames: RepoFrames) -> Measurement:
    import torch

    from .counting import counting
    from .tracing import tracing

    set_up: set[tuple[str, str]] = set()
    if args.trace:
        with tracing(frames) as set_up:  # a set-up that reaches changed code selects the check too
            body = check.start(device)
    else:
        body = check.start(device)
    if not callable(body):
        raise TypeError(f"the micro-check must return a zero-argument callable (got {type(body).__name__})")
    with tracing(frames) as called:
        body()  # the warm-up run: excluded from the counts, traced for coverage
    if device.type == "cuda":  # rltrefactor: ignore[branch-on-accelerator-type] the perf hook measures on the device it was given; which counters exist depends on its type
        torch.cuda.synchronize()  # rltrefactor: ignore[device-synchronize-in-hot-path] measurement: counters are read once the device has drained
    runs = []
    for _ in range(max(args.repeats, 1)):
        with counting(frames, device) as counter:
            body()
        runs.append(count_rows(counter))
    evidence = None
    if device.type == "cuda":  # rltrefactor: ignore[branch-on-accelerator-type] the perf hook measures on the device it was given; which counters exist depends on its type
        from .evidence import cuda_evidence

        evidence = cuda_evidence(body, frames)
    return Measurement(
        device=str(device),
        coverage=tuple(sorted(called)) if args.trace else (),
        counts=runs[0],
        deterministic=all(run == runs[0] for run in runs),
        run_totals=tuple(totals_of(run) for run in runs),
        evidence=evidence,
        setup_coverage=tuple(sorted(set_up)),
    )


def count_rows(counter: OpCounter) -> tuple[CountRow, ...]:
    rows = [
        CountRow(key.category, key.op, key.direction, key.site.path, key.site.line, key.site.source,
                 key.site.function, count, counter.bytes[key])
        for key, count in counter.counts.items()
    ]
    return tuple(sorted(rows, key=lambda r: (r.path, r.line, r.category, r.op, r.direction)))


def totals_of(rows: tuple[CountRow, ...]) -> PerfTotals:
    per = {"sync": 0, "copy": 0, "alloc": 0, "race": 0}
    for row in rows:
        per[row.category] += row.count
    return PerfTotals(**per)


def run_check(check: LoadedCheck, args: argparse.Namespace, frames: RepoFrames, channel: Channel) -> None:
    channel.emit(Started(check.name))
    started = time.perf_counter()
    try:
        device = resolve_device(check.spec.device, args.device)
        if device is None:
            channel.emit(Skipped(check.name, "needs cuda, which this machine does not have"))
            return
        if args.profile:
            from .capture import capture

            captured = capture(check, device, args, frames)
        else:
            measured = measure(check, device, args, frames)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a failing check is reported, not fatal
        channel.emit(failure(check.name, exc, frames))
        return
    seconds = round(time.perf_counter() - started, 4)
    channel.emit(Captured(check.name, captured, seconds) if args.profile else Measured(check.name, measured, seconds))


def main(argv: list[str] | None = None) -> int:
    channel = Channel()
    args = parse_args(argv)
    install_stubs(args.stub)
    measure_through_inference_mode()
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    root = os.path.realpath(args.root)
    frames = RepoFrames(root)
    checks, load_errors = load_checks(root, args.hooks)
    import torch

    channel.emit(Loaded(
        torch=torch.__version__,
        cuda=torch.cuda.is_available(),
        checks=tuple(CheckInfo(c.name, c.path, c.line, c.spec.device, c.spec.covers) for c in checks),
        load_errors=tuple(LoadFailure(e.path, e.line, e.message) for e in load_errors),
    ))
    wanted = set(args.check)
    for check in checks:
        if not wanted or check.name in wanted:
            run_check(check, args, frames, channel)
    channel.emit(Done())
    return 0


if __name__ == "__main__":
    sys.exit(main())
