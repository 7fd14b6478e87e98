"""``measure_tests``: the repository's tests as micro-checks of a change, base vs head.

The tests reaching a touched function are found at the head (``testmap``), the head's
copies of their files (and the ``conftest.py`` files above them) are put into the base
worktree, as the head's micro-checks are, and each test then runs in a process of its
own on both sides at once (``sides.run_tests_side``), twice per side.
"""

from __future__ import annotations

import os
import shutil
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

from ..types import ChangeSet
from .coverage import touched_definitions
from .environment import RunnerSetup
from .records import PerfSummary
from .sides import SideRun, run_tests_side
from .testmap import trace_tests
from .testsummary import summarize_tests


def measure_tests(change: ChangeSet, head_root: str, base_root: str, pytest_args: list[str], *, device: str,
                  timeout: float, memory_mb: int, cache_dir: str | None,
                  setup: RunnerSetup = RunnerSetup()) -> PerfSummary:
    touched = touched_definitions(change)
    mapped = trace_tests(change, head_root, touched, pytest_args, timeout=timeout, memory_mb=memory_mb,
                         cache_dir=cache_dir, setup=setup)
    selected = sorted(mapped.tests)
    copy_test_files(head_root, base_root, selected)
    head, base = _run_both(head_root, base_root, selected, ["--device", device], timeout, memory_mb, setup)
    return summarize_tests(change, touched, mapped, head, base)


def copy_test_files(source_root: str, target_root: str, tests: list[str]) -> None:
    """The head's test files, and the ``conftest.py`` files of their folders up to the
    root, replace the base's: both revisions run the same test code."""
    files: set[str] = set()
    for nodeid in tests:
        path = nodeid.split("::", 1)[0]
        files.add(path)
        folder = os.path.dirname(path)
        while True:
            files.add(os.path.join(folder, "conftest.py"))
            if not folder:
                break
            folder = os.path.dirname(folder)
    if os.path.realpath(source_root) == os.path.realpath(target_root):
        return
    for path in sorted(files):
        source = os.path.join(source_root, path)
        if os.path.isfile(source):
            os.makedirs(os.path.dirname(os.path.join(target_root, path)) or target_root, exist_ok=True)
            shutil.copyfile(source, os.path.join(target_root, path))


def _run_both(head_root: str, base_root: str, tests: list[str], extra: list[str], timeout: float,
              memory_mb: int, setup: RunnerSetup) -> tuple[SideRun, SideRun]:
    """Both sides at once; Ctrl-C kills the test processes of both (as for micro-checks)."""
    if not tests:
        return SideRun(head_root, label="test"), SideRun(base_root, label="test")
    cancel = threading.Event()
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="rltrefactor-perf-tests") as pool:
        try:
            head, base = (pool.submit(run_tests_side, root, extra, [], tests=tests, timeout=timeout, cancel=cancel,
                                      memory_mb=memory_mb, setup=setup) for root in (head_root, base_root))
            for finished in wait([head, base], return_when=FIRST_EXCEPTION).done:
                finished.result()
            return head.result(), base.result()
        except BaseException:
            cancel.set()
            raise
