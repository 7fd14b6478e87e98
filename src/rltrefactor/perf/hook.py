"""``plan`` and ``run_perf``: a change in, a PerfSummary out. Never prints.

The base side always runs from a temporary detached worktree of the change's base
commit; the head side runs in the repository's working tree, or in a temporary worktree
of the head commit when the change is a range ``A..B``. The head's micro-checks run on
both sides, so both revisions are measured by the same code. With ``tests``, the
repository's pytest tests that reach the change are measured in the same two trees
(``testhook``) and their deltas join the checks'.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import Literal

from ..change import git as gitio
from ..errors import ChangeInputError, ConfigError
from ..types import ChangeSet
from .records import PerfSummary
from .scaffold import TEMPLATE  # noqa: F401 - the template's installed path, named where the hook is
from .coverage import touched_definitions
from .environment import RunnerSetup
from .loading import hook_files
from .sides import DEFAULT_MEMORY_MB, SideRun, run_side
from .summary import select, set_up_only, summarize
from .worktree import copy_hooks, detached_worktree

Profile = Literal["ops-only", "full", "both"]


@dataclass(frozen=True)
class PerfPlan:
    """What the hook will execute, for the CLI to say before it does."""

    repo_root: str
    base: str  # commit
    head: str  # commit, or "working tree"
    hooks_dir: str
    files: tuple[str, ...]  # micro-check files (repo-relative), imported and run on both sides
    note: str = ""
    tests: tuple[str, ...] | None = None  # PYTEST ARGS of the tests measured beside them; None: no tests


def plan(change: ChangeSet, *, hooks_dir: str = "perf_hooks", tests: tuple[str, ...] | None = None) -> PerfPlan:
    """What will run; ``ConfigError`` when there is nothing to run (a gate must not pass):
    no micro-checks, and no tests asked for."""
    if change.repo_root is None or change.base is None:
        raise ChangeInputError(
            f"perf: needs a git repository and a base commit (got {change.description or 'no base'}); "
            "run rltrefactor perf --diff REF inside the repository, not on a patch file or a path scan"
        )
    note = ""
    if change.head.kind == "git" and change.head.ref:
        head = change.head.ref
        listing = gitio.git(change.repo_root, "ls-tree", "--name-only", head, hooks_dir.rstrip("/") + "/")
        files = [p for p in listing.splitlines() if p.endswith(".py") and not os.path.basename(p).startswith("_")]
    else:
        head = "working tree"
        files = hook_files(change.repo_root, hooks_dir)
        if change.head.kind == "index":
            note = "staged changes are measured from the working tree, which may hold unstaged edits"
    if not files and tests is None:
        raise ConfigError(
            f"{hooks_dir}/: perf hook: no micro-checks found (got no {hooks_dir}/*.py at {head[:12]}); "
            f"write one for a changed function with rltrefactor perf scaffold PATH::QUALNAME (it fills the "
            f"template installed with rltrefactor into {hooks_dir}/), run your tests as checks with --tests, "
            "or set perf-hooks under [tool.rltrefactor] to where your checks are"
        )
    return PerfPlan(change.repo_root, change.base, head, hooks_dir, tuple(sorted(files)), note, tests)


def run_perf(change: ChangeSet, *, hooks_dir: str = "perf_hooks", timeout: float = 60.0,
             profile: Profile | None = None, out_dir: str | None = None, window: int = 1,
             device: str = "auto", repeats: int = 3, memory_mb: int = DEFAULT_MEMORY_MB,
             temp_dir: str | None = None, tests: tuple[str, ...] | None = None,
             cache_dir: str | None = None, setup: RunnerSetup = RunnerSetup()) -> PerfSummary:
    """Run the micro-checks covering the change at base and head and compare their counts;
    with ``tests`` (PYTEST ARGS), also the repository's tests that reach the change.

    The temporary worktrees go under ``temp_dir`` (None: the system temporary directory);
    the map of which tests reach the change is cached under ``cache_dir`` (None: not cached).
    Every process starts as ``setup`` says: a scrubbed environment, the configured stubs.
    """
    started = time.perf_counter()
    the_plan = plan(change, hooks_dir=hooks_dir, tests=tests)
    if profile is not None:
        out_dir = _checked_out_dir(out_dir, the_plan.repo_root)
    extra = ["--device", device, "--repeats", str(repeats)]
    with ExitStack() as stack:
        head_root = the_plan.repo_root
        if the_plan.head != "working tree":
            head_root = stack.enter_context(detached_worktree(the_plan.repo_root, the_plan.head, "head",
                                                                   parent=temp_dir))
        base_root = stack.enter_context(detached_worktree(the_plan.repo_root, the_plan.base, "base", parent=temp_dir))
        summary = None
        if the_plan.files:
            copy_hooks(head_root, base_root, hooks_dir)
            head, base = _run_both(head_root, base_root, hooks_dir, extra, timeout, memory_mb, setup)
            touched = touched_definitions(change)
            summary = summarize(change, head, base, select(head, touched), set_up_only(head, touched))
        if summary is not None and profile is not None and out_dir is not None and summary.checks:  # out_dir: checked above
            from .profiles import profile_matrix

            sides = {"base": (base_root, the_plan.base), "head": (head_root, _head_revision(the_plan))}
            summary = profile_matrix(summary, sides, hooks_dir=hooks_dir, mode=profile, out_dir=out_dir,
                                     window=window, device=device, timeout=timeout, setup=setup)
        if tests is not None:
            from .testhook import measure_tests
            from .testsummary import merge

            measured = measure_tests(change, head_root, base_root, list(tests), device=device, timeout=timeout,
                                     memory_mb=memory_mb, cache_dir=cache_dir, setup=setup)
            summary = merge(summary, measured)
    assert summary is not None  # plan: micro-checks, or tests, or a ConfigError
    return replace(summary, wall_seconds=time.perf_counter() - started)


def _run_both(head_root: str, base_root: str, hooks_dir: str, extra: list[str], timeout: float,
              memory_mb: int, setup: RunnerSetup) -> tuple[SideRun, SideRun]:
    """Both sides at once, every check on each: counts do not depend on timing, and the
    base result of a check that covers nothing is simply not used."""
    cancel = threading.Event()
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="rltrefactor-perf") as pool:
        try:
            head = pool.submit(run_side, head_root, hooks_dir, [*extra, "--trace"], checks=None,
                               timeout=timeout, cancel=cancel, memory_mb=memory_mb, setup=setup)
            base = pool.submit(run_side, base_root, hooks_dir, extra, checks=None, timeout=timeout, cancel=cancel,
                               memory_mb=memory_mb, setup=setup)
            for finished in wait([head, base], return_when=FIRST_EXCEPTION).done:
                finished.result()  # the first failure raises here, before waiting on the other
            return head.result(), base.result()
        except BaseException:
            cancel.set()  # Ctrl-C: the runner processes are in their own sessions, kill them
            raise


def _head_revision(the_plan: PerfPlan) -> str:
    if the_plan.head != "working tree":
        return the_plan.head
    return gitio.git(the_plan.repo_root, "rev-parse", "HEAD").strip() + " + working tree"


def _checked_out_dir(out_dir: str | None, repo_root: str) -> str:
    if not out_dir:
        raise ConfigError("perf: --profile needs --out DIR (got none); pass a directory outside the repository")
    real = os.path.realpath(out_dir)
    root = os.path.realpath(repo_root)
    if real == root or real.startswith(root + os.sep):
        raise ConfigError(
            f"{out_dir}: profile output directory: inside the repository (got {real}); "
            "traces are large and never belong in the repository, pass a directory outside it"
        )
    return real
