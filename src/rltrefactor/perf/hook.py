"""``plan`` and ``run_perf``: a change in, a PerfSummary out. Never prints.

The base side always runs from a temporary detached worktree of the change's base
commit; the head side runs in the repository's working tree, or in a temporary worktree
of the head commit when the change is a range ``A..B``. The head's micro-checks run on
both sides, so both revisions are measured by the same code.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import Literal

from .. import gitio, source
from ..errors import ChangeInputError, ConfigError
from ..types import ChangeSet, FileError, PerfDelta, PerfSummary
from .coverage import covered_by_declaration, covered_by_trace, touched_definitions
from .deltas import compare
from .loading import hook_files
from .sides import DEFAULT_MEMORY_MB, SideError, SideRun, run_side
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


def plan(change: ChangeSet, *, hooks_dir: str = "perf_hooks") -> PerfPlan:
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
    return PerfPlan(change.repo_root, change.base, head, hooks_dir, tuple(sorted(files)), note)


def run_perf(change: ChangeSet, *, hooks_dir: str = "perf_hooks", timeout: float = 60.0,
             profile: Profile | None = None, out_dir: str | None = None, window: int = 1,
             device: str = "auto", repeats: int = 3, memory_mb: int = DEFAULT_MEMORY_MB,
             temp_dir: str | None = None) -> PerfSummary:
    """Run the micro-checks covering the change at base and head and compare their counts.

    The temporary worktrees go under ``temp_dir`` (None: the system temporary directory).
    """
    started = time.perf_counter()
    the_plan = plan(change, hooks_dir=hooks_dir)
    if profile is not None:
        out_dir = _checked_out_dir(out_dir, the_plan.repo_root)
    if not the_plan.files:
        error = FileError(hooks_dir, f"{hooks_dir}: no micro-check files found (got none at {the_plan.head}); "
                          "copy perf_hooks/template_check.py from rltrefactor into the repository")
        return PerfSummary(device="", checks=(), deltas=(), errors=(error,), wall_seconds=time.perf_counter() - started)
    extra = ["--device", device, "--repeats", str(repeats)]
    with ExitStack() as stack:
        head_root = the_plan.repo_root
        if the_plan.head != "working tree":
            head_root = stack.enter_context(detached_worktree(the_plan.repo_root, the_plan.head, "head",
                                                                   parent=temp_dir))
        base_root = stack.enter_context(detached_worktree(the_plan.repo_root, the_plan.base, "base", parent=temp_dir))
        copy_hooks(head_root, base_root, hooks_dir)
        head, base = _run_both(head_root, base_root, hooks_dir, extra, timeout, memory_mb)
        coverage = _select(head, touched_definitions(change))
        summary = _summarize(change, head, base, coverage)
        if profile is not None and summary.checks:
            from .profiles import profile_matrix

            sides = {"base": (base_root, the_plan.base), "head": (head_root, _head_revision(the_plan))}
            summary = profile_matrix(summary, sides, hooks_dir=hooks_dir, mode=profile, out_dir=out_dir,
                                     window=window, device=device, timeout=timeout)
    return replace(summary, wall_seconds=time.perf_counter() - started)


def _run_both(head_root: str, base_root: str, hooks_dir: str, extra: list[str], timeout: float,
              memory_mb: int) -> tuple[SideRun, SideRun]:
    """Both sides at once, every check on each: counts do not depend on timing, and the
    base result of a check that covers nothing is simply not used."""
    cancel = threading.Event()
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="rltrefactor-perf") as pool:
        try:
            head = pool.submit(run_side, head_root, hooks_dir, [*extra, "--trace"], checks=None,
                               timeout=timeout, cancel=cancel, memory_mb=memory_mb)
            base = pool.submit(run_side, base_root, hooks_dir, extra, checks=None, timeout=timeout, cancel=cancel,
                               memory_mb=memory_mb)
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


def _select(head: SideRun, touched) -> dict[str, list[str]]:
    """Checks covering the change -> the touched ``path::qualname`` entries they cover."""
    selected: dict[str, list[str]] = {}
    for name, result in head.results.items():
        declared = head.loaded.get(name, {}).get("covers") or []
        hits = (covered_by_declaration(declared, touched) if declared
                else covered_by_trace([tuple(c) for c in result["coverage"]], touched))
        if hits:
            selected[name] = hits
    return selected


def _summarize(change: ChangeSet, head: SideRun, base: SideRun, coverage: dict[str, list[str]]) -> PerfSummary:
    renames = {f.old_path: f.path for f in change.files if f.old_path and f.old_path != f.path}
    head_only = _head_only(change, head, base, coverage)
    errors = [FileError(e.path, f"head: {e.message}", e.line) for e in head.errors]
    errors += [FileError(e.path, f"base: {e.message}", e.line) for e in base.errors
               if _concerns(e, head, coverage) and e.check not in head_only]
    deltas: list[PerfDelta] = []
    ops: dict[str, str] = {}
    checks, devices, cuda = [], set(), {}
    for name in coverage:
        sides = {"base": base.results.get(name), "head": head.results.get(name)}
        if sides["base"] is None or sides["head"] is None:
            continue  # its failure is already in errors, or the code it covers is new
        unstable = [side for side, result in sides.items() if not result["deterministic"]]
        if unstable:
            errors.append(_unstable(head, name, unstable, sides))
            continue
        device = sides["head"]["device"]
        found, labels = compare(name, device, sides["base"]["counts"], sides["head"]["counts"], renames)
        deltas += found
        ops.update(labels)
        checks.append(name)
        devices.add(device)
        if "evidence" in sides["head"]:
            cuda[name] = {side: result.get("evidence") for side, result in sides.items()}
    devices.update(head.results[name]["device"] for name in head_only)
    totals = {n: {"base": base.results[n]["run_totals"][0], "head": head.results[n]["run_totals"][0]}
              for n in checks}
    totals.update({n: {"base": None, "head": head.results[n]["run_totals"][0]} for n in head_only})
    evidence = {
        "ops": ops,
        "coverage": coverage,
        "skipped": {**base.skipped, **head.skipped},
        "totals": totals,
        "cuda": cuda,
        "torch": head.torch_version,
    }
    return PerfSummary(
        device=", ".join(sorted(devices)),
        checks=tuple(checks),
        deltas=tuple(sorted(deltas, key=lambda d: (d.path, d.line, d.category, d.check))),
        errors=tuple(errors),
        device_evidence=evidence,
        head_only=tuple(head_only),
        all_failed=bool(errors) and not checks and not head_only and (bool(coverage) or not head.results),
    )


def _head_only(change: ChangeSet, head: SideRun, base: SideRun, coverage: dict[str, list[str]]) -> list[str]:
    """Covering checks that ran at head and failed at base only because everything they
    cover is new in the change: counts shown, nothing to compare, not a failure."""
    failed_at_base = {e.check for e in base.errors if e.check}
    wanted = [n for n in coverage if n in head.results and n in failed_at_base]
    if not wanted:
        return []
    old_paths = {f.path: f.old_path for f in change.files if f.old_path}  # added files have none
    paths = sorted({hit.split("::", 1)[0] for n in wanted for hit in coverage[n]})
    texts = source.read_base_sources(change, [old_paths[p] for p in paths if p in old_paths])
    existing: dict[str, set[str]] = {}
    for path in paths:
        text = texts.get(old_paths.get(path, ""))
        existing[path] = ({d.qualname for d in source.definitions(text).all()} | {"<module>"}
                          if isinstance(text, str) else set())
    return [n for n in wanted
            if all(hit.split("::", 1)[1] not in existing[hit.split("::", 1)[0]] for hit in coverage[n])]


def _concerns(error: SideError, head: SideRun, coverage: dict[str, list[str]]) -> bool:
    """A base-side failure matters only for a check that covers the change."""
    if error.check:
        return error.check in coverage
    files = {head.loaded[name]["path"] for name in coverage if name in head.loaded}
    return not error.path or error.path in files


def _unstable(head: SideRun, name: str, unstable: list[str], sides) -> FileError:
    where = head.loaded.get(name, {})
    totals = "; ".join(f"{side}: {sides[side]['run_totals']}" for side in unstable)
    return FileError(
        where.get("path", ""),
        f"micro-check {name}: counts differ between repeated runs ({totals}); make the body "
        "deterministic (fixed inputs, no time- or order-dependent paths); no delta reported",
        where.get("line"),
    )
