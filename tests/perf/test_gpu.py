"""The demo defects PR measured on CUDA: the same sync as on the CPU, plus real-device
evidence beside it. Skipped, with the reason printed, where there is no CUDA device."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from demo_defects import planted

from rltrefactor.change.changeset import collect_changes
from rltrefactor.perf import run_perf

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the perf hook's GPU evidence is not checked here"),
]

PROJECT = Path(__file__).resolve().parents[2]
DECODE = "perf_hooks.demo_checks:decode_step"


@pytest.fixture(scope="module")
def summary(make_repo):
    repo = make_repo("loopy-engine")
    shutil.copytree(PROJECT / "examples" / "demo_engine", repo.path, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "defects")
    subprocess.run(["git", "-C", str(repo.path), "apply", str(PROJECT / "examples/demo_prs/defects.patch")], check=True)
    repo.commit("defects")
    return run_perf(collect_changes(str(repo.path), diff="main..defects"), device="cuda", timeout=300)


def test_the_planted_item_is_a_sync_per_depth_on_cuda(summary):
    assert summary.device.startswith("cuda")
    sync = [d for d in summary.deltas if d.category == "sync" and d.added]
    assert [(d.path, d.line, d.head_count - d.base_count) for d in sync] == [
        ("loopy/worker/model_runner.py", planted()["a"].line, 4)]


def test_the_list_built_tensor_is_a_host_to_device_copy_on_cuda(summary):
    ops = summary.device_evidence.ops
    label = ops[f"{DECODE}|copy|loopy/worker/model_runner.py:{planted()['b'].line}"]
    assert "h2d" in label


def test_device_evidence_sits_beside_the_counts(summary):
    evidence = summary.device_evidence.cuda[DECODE]
    base, head = evidence.base, evidence.head
    assert head.sync_debug_warnings.count >= base.sync_debug_warnings.count + 4
    assert head.allocator.requests > base.allocator.requests  # the defects allocate per step
