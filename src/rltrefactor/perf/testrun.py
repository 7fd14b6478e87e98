"""A repository's pytest tests as micro-checks, in their own process: ``python -m rltrefactor.perf.testrun``.

pytest is used as a library (``pytest.main``) with a plugin that takes over each test's
run protocol. Two modes, one protocol (``protocol``) on stdout, as the micro-check runner:

- ``--map``: collect once (the PYTEST ARGS given after ``--``), run every test once under
  the call tracer and say, per test, which of the ``--touched`` functions it reached;
- measure (the default): run the test ``--check NODEID`` twice, each run under the
  dispatch counter, fixtures included (a test's fixtures of every scope are torn down
  after each run, so the two runs do the same work). Ops dispatched under a set-up
  function of the repository are attributed to no line (``SetUpFrames``).

A test that fails, errors or skips is a ``Skipped`` event with the reason: it is left
out of the comparison, never a failure of the hook.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from .attribution import RepoFrames, Site
from .coverage import covered_by_trace
from .protocol import CheckInfo, Done, Failed, Loaded, Measured, Measurement, Skipped, Started
from .runner import Channel, count_rows, resolve_device, totals_of
from .grad_modes import measure_through_inference_mode
from .stubs import install_stubs

if TYPE_CHECKING:
    from types import CodeType, FrameType

    import pytest
    import torch

    from .protocol import CountRow

SET_UP = Site("", 0, "", "<set-up>")


class SetUpFrames(RepoFrames):
    """Attribution for tests: an op dispatched while a set-up function of the repository
    is on the stack (construction, loading, warm-up: the execution stage's set-up names,
    ``__init__`` first) is the test's set-up, attributed to no line, as a micro-check's
    set-up is never measured. Test files' own functions never count as set-up."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self._set_up: dict[CodeType, bool] = {}

    def site(self, frame: FrameType | None) -> Site:
        walk = frame
        # Frames from here up are pytest's and this runner's: the test's stack ends below them.
        while walk is not None and walk.f_code.co_filename != __file__:
            if self._is_set_up(walk.f_code):
                return SET_UP
            walk = walk.f_back
        return super().site(frame)

    def _is_set_up(self, code: CodeType) -> bool:
        known = self._set_up.get(code)
        if known is None:
            from ..config import DEFAULT_TEST_PATHS
            from ..context.execution import is_setup_name
            from ..library.globs import matches

            path = self.relpath(code)
            known = path is not None and not matches(path, DEFAULT_TEST_PATHS) and is_setup_name(code.co_name)
            self._set_up[code] = known
        return known


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="rltrefactor.perf.testrun")
    parser.add_argument("--root", required=True)
    parser.add_argument("--map", action="store_true", help="trace which tests reach --touched")
    parser.add_argument("--touched", action="append", default=[], metavar="PATH::QUALNAME")
    parser.add_argument("--check", action="append", default=[], metavar="NODEID", help="the test to measure")
    parser.add_argument("--stub", action="append", default=[], metavar="MODULE", help="import a stub for MODULE")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("pytest_args", nargs="*")
    return parser.parse_args(argv)


@dataclass(frozen=True)
class Outcome:
    """How one run of a test ended: ``reason`` is "" when every phase passed."""

    reason: str


def outcome(reports: list[pytest.TestReport]) -> Outcome:
    for report in reports:
        if report.failed:
            what = "failed" if report.when == "call" else f"errored in {report.when}"
            return Outcome(f"{what}: {_first_line(report)}")
        if report.skipped:
            return Outcome(f"skipped: {_first_line(report)}")
    return Outcome("")


def _first_line(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (path, line, reason)
        return str(longrepr[2]).removeprefix("Skipped: ")
    crash = getattr(longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) or str(longrepr or getattr(report, "wasxfail", ""))
    return (text.strip().splitlines() or [""])[0][:200]


Run = Callable[["pytest.Item"], list["pytest.TestReport"]]


class _TakeOver:
    """The pytest plugin: runs each collected test through ``handle`` instead of pytest's
    own protocol; fixtures of every scope are torn down after each run (``nextitem=None``).
    Files that could not be collected are kept with their error's last line."""

    def __init__(self, handle: Callable[[pytest.Item, Run], None]) -> None:
        self.handle = handle
        self.seen: list[str] = []
        self.uncollected: dict[str, str] = {}  # node id -> "ModuleNotFoundError: No module named 'x'"

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            lines = [line.strip() for line in str(report.longrepr).splitlines() if line.strip()]
            self.uncollected[report.nodeid] = (lines[-1].removeprefix("E").strip() if lines else "")[:200]

    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool:
        from _pytest.runner import runtestprotocol

        self.seen.append(item.nodeid)
        self.handle(item, lambda it: runtestprotocol(it, log=False, nextitem=None))
        return True


def _traced(channel: Channel, frames: RepoFrames, touched: dict[str, frozenset[str]]) -> Callable[[pytest.Item, Run], None]:
    from .tracing import tracing

    def handle(item: pytest.Item, run: Run) -> None:
        channel.emit(Started(item.nodeid))
        with tracing(frames) as called:
            ended = outcome(run(item))
        hits = covered_by_trace(called, touched)
        if ended.reason and not hits:
            channel.emit(Skipped(item.nodeid, ended.reason))
            return
        # A failing test that reached the change is still selected: measuring it lists it.
        coverage = tuple((path, name) for path, _, name in (hit.partition("::") for hit in hits))
        channel.emit(Measured(item.nodeid, Measurement("", coverage, (), True, ()), 0.0))

    return handle


def _counted(channel: Channel, frames: RepoFrames, device: torch.device) -> Callable[[pytest.Item, Run], None]:
    import time

    from .counting import counting

    def handle(item: pytest.Item, run: Run) -> None:
        channel.emit(Started(item.nodeid))
        started = time.perf_counter()
        runs: list[tuple[CountRow, ...]] = []
        for _ in range(2):
            with counting(frames, device) as counter:
                ended = outcome(run(item))
            if ended.reason:
                channel.emit(Skipped(item.nodeid, ended.reason))
                return
            runs.append(count_rows(counter))
        measured = Measurement(str(device), (), runs[0], runs[0] == runs[1], tuple(totals_of(r) for r in runs),
                               repeat_counts=runs[1])
        channel.emit(Measured(item.nodeid, measured, round(time.perf_counter() - started, 4)))

    return handle


def _touched(entries: list[str]) -> dict[str, frozenset[str]]:
    by_path: dict[str, set[str]] = {}
    for entry in entries:
        path, _, name = entry.partition("::")
        by_path.setdefault(path, set()).add(name)
    return {path: frozenset(names) for path, names in by_path.items()}


def main(argv: list[str] | None = None) -> int:
    channel = Channel()
    args = parse_args(argv)
    install_stubs(args.stub)
    measure_through_inference_mode()
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    root = os.path.realpath(args.root)
    frames = RepoFrames(root) if args.map else SetUpFrames(root)
    import pytest
    import torch

    wanted = args.check if not args.map else []
    channel.emit(Loaded(torch.__version__, torch.cuda.is_available(),
                        tuple(CheckInfo(n, n.split("::", 1)[0], 0, args.device, ()) for n in wanted), ()))
    if args.map:
        plugin = _TakeOver(_traced(channel, frames, _touched(args.touched)))
        # One file that cannot be imported must not hide the tests of the others: it is listed.
        pytest.main([*args.pytest_args, *_QUIET, "--continue-on-collection-errors"], plugins=[plugin])
        for nodeid, error in plugin.uncollected.items():
            channel.emit(Failed(nodeid, nodeid.split("::", 1)[0], None, (
                f"cannot be collected: {error}; fix its imports (a module this machine lacks can be "
                "named in perf-stubs under [tool.rltrefactor])")))
    else:
        device = resolve_device("auto", args.device)
        for nodeid in wanted:
            if device is None:
                channel.emit(Skipped(nodeid, "needs cuda, which this machine does not have"))
                continue
            plugin = _TakeOver(_counted(channel, frames, device))
            code = pytest.main([nodeid, *_QUIET], plugins=[plugin])
            if nodeid not in plugin.seen:
                channel.emit(Started(nodeid))
                channel.emit(Skipped(nodeid, f"not collected at this revision (pytest exit code {int(code)})"))
    channel.emit(Done())
    return 0


# No cache directory written into the reviewed tree, no output on the protocol stream.
# Collections after every test that pytest does to find unraisable exceptions cost more
# than the demo's tests themselves; a test's verdict does not depend on them.
_QUIET = ("-p", "no:cacheprovider", "-q", "--no-header", "-p", "no:randomly", "-p", "no:unraisableexception",
          "--assert=plain")


if __name__ == "__main__":
    sys.exit(main())
