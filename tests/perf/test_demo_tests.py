"""The demo PRs measured by the demo engine's own tests, with no micro-check at all.

``perf_hooks/`` is removed from the demo repository; ``perf --diff main --tests`` must
still report defect (a), the ``.item()`` in the depth loop, as added syncs at its line
and defect (b), the per-step ``torch.tensor(list, device=...)``, as an added allocation;
twice, the second time from the cached map, with the same result; and the refactor PR
as no delta.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from demo_defects import planted

pytest.importorskip("torch")

PROJECT = Path(__file__).resolve().parents[2]
ENGINE = PROJECT / "examples" / "demo_engine"
PRS = PROJECT / "examples" / "demo_prs"
RUNNER = "loopy/worker/model_runner.py"


@pytest.fixture(scope="module")
def demo_repo(make_repo):
    repo = make_repo("loopy-engine")
    shutil.copytree(ENGINE, repo.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.rmtree(repo.path / "perf_hooks")
    repo.commit("base")
    for name in ("defects", "refactor"):
        repo.git("checkout", "-q", "-b", name, "main")
        subprocess.run(["git", "-C", str(repo.path), "apply", "--exclude=perf_hooks/*", str(PRS / f"{name}.patch")],
                       check=True)
        repo.commit(name)
    return repo


def _perf(repo, branch: str) -> tuple[int, dict]:
    repo.git("checkout", "-q", branch)
    env = {**os.environ, "PYTHONPATH": str(PROJECT / "src"), "NO_COLOR": "1",
           "RLTREFACTOR_CACHE_DIR": str(repo.path.parent / "cache")}
    proc = subprocess.run([sys.executable, "-m", "rltrefactor", "perf", "--diff", "main", "--format", "json", "--tests"],
                          cwd=repo.path, capture_output=True, text=True, env=env, timeout=600)
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _added(document: dict) -> set[tuple[str, str, int, int]]:
    return {(d["category"], d["path"], d["line"], d["head_count"] - d["base_count"])
            for d in document["deltas"] if d["added"]}


def test_the_defects_pr_measured_by_the_tests_alone_twice(demo_repo):
    a, b = planted()["a"].line, planted()["b"].line
    first_code, first = _perf(demo_repo, "defects")
    second_code, second = _perf(demo_repo, "defects")
    for code, document in ((first_code, first), (second_code, second)):
        assert code == 1 and document["errors"] == []
        assert _added(document) == {("sync", RUNNER, a, 4), ("alloc", RUNNER, a, 4), ("alloc", RUNNER, b, 1)}
        assert [(f["rule"], f["line"]) for f in document["findings"]] == [("perf-added-sync", a), ("perf-added-alloc", b)]
        assert document["tests"]["left_out"] == {} and document["tests"]["unstable"] == []
    assert first["tests"]["traced"] and not second["tests"]["traced"]
    assert first["deltas"] == second["deltas"] and first["checks"] == second["checks"]
    assert all(name.startswith("tests/") for name in first["checks"])


def test_the_refactor_pr_measured_by_the_tests_is_no_delta(demo_repo):
    code, document = _perf(demo_repo, "refactor")
    assert code == 0 and document["errors"] == []
    assert document["checks"] and document["deltas"] == []
