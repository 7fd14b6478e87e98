"""The bundled demo PRs through the perf hook, on the CPU (as CI runs them).

defects.md promises, for the decode micro-check and nothing else: a sync and an
allocation per depth at defect (a), one allocation at defect (b); refactor.patch must
measure as no change at all.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from demo_defects import planted

from rltrefactor.change.changeset import collect_changes
from rltrefactor.perf import perf_findings, run_perf

pytest.importorskip("torch")

PROJECT = Path(__file__).resolve().parents[2]
ENGINE = PROJECT / "examples" / "demo_engine"
PRS = PROJECT / "examples" / "demo_prs"
DECODE = "perf_hooks.demo_checks:decode_step"
pytestmark = pytest.mark.skipif(not (ENGINE / "perf_hooks").is_dir(), reason="demo engine not present")


@pytest.fixture(scope="module")
def demo_repo(make_repo):
    repo = make_repo("loopy-engine")
    shutil.copytree(ENGINE, repo.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    repo.commit("base")
    for name in ("defects", "refactor"):
        repo.git("checkout", "-q", "-b", name, "main")
        subprocess.run(["git", "-C", str(repo.path), "apply", str(PRS / f"{name}.patch")], check=True)
        repo.commit(name)
    return repo


def test_defects_pr_reports_the_planted_sync_and_allocations(demo_repo):
    change = collect_changes(str(demo_repo.path), diff="main..defects")
    summary = run_perf(change, device="cpu")
    assert summary.errors == ()
    # decode_step runs the changed step; scheduler_step only builds a runner whose changed
    # __init__ its set-up runs, so it is measured too, and adds nothing
    assert summary.checks == ("perf_hooks.demo_checks:scheduler_step", DECODE)
    assert set(summary.device_evidence.set_up) == {"perf_hooks.demo_checks:scheduler_step"}
    a, b = planted()["a"].line, planted()["b"].line
    added = {(d.category, d.path, d.line, d.head_count - d.base_count) for d in summary.deltas if d.added}
    assert added == {
        ("sync", "loopy/worker/model_runner.py", a, 4),
        ("alloc", "loopy/worker/model_runner.py", a, 4),
        ("alloc", "loopy/worker/model_runner.py", b, 1),
    }
    findings = perf_findings(summary, change=change)
    assert [(f.rule_id, f.span.line) for f in findings] == [("perf-added-sync", a), ("perf-added-alloc", b)]
    assert findings[0].perf.detail == f"+4 sync at loopy/worker/model_runner.py:{a} — if exited.all().item():"
    assert findings[0].definition == "ModelRunner.execute_model"
    assert findings[0].snippet == "            if exited.all().item():"
    assert (findings[0].span.column, findings[0].span.end_column) == (13, len(findings[0].snippet) + 1)
    sample = f"{findings[0].path}:{a}:13  error  perf-added-sync  {findings[0].title}\n"
    assert sample in (PROJECT / "perf_hooks" / "README.md").read_text(), "perf_hooks/README.md shows a stale sample"


def test_refactor_pr_measures_as_no_change(demo_repo):
    summary = run_perf(collect_changes(str(demo_repo.path), diff="main..refactor"), device="cpu")
    assert DECODE in summary.checks
    assert summary.deltas == () and summary.errors == ()
