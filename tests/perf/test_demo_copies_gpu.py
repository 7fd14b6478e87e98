"""What copies cost, on a copy of the demo engine and a real CUDA device: a large pageable
non-blocking upload is an added sync with its reason and a small one is not, a host read
of a non-blocking download before a wait is a race and not after the fix, a host write
into a pinned staging buffer while its upload is in flight is a race, and the refactor PR
gives no delta. Skipped, with the reason printed, where there is no CUDA device."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from rltrefactor.change.changeset import collect_changes
from rltrefactor.perf import perf_findings, run_perf

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the demo engine's copies are not measured here"),
]

PROJECT = Path(__file__).resolve().parents[2]
ENGINE = PROJECT / "examples" / "demo_engine"
RUNNER = "loopy/worker/model_runner.py"
INIT_ANCHOR = "        self.exit_depth_rows = torch.zeros(config.max_num_sequences, dtype=torch.int64, device=self.device)\n"
STEP_ANCHOR = "        count = batch.num_requests\n"
RETURN_ANCHOR = "        logits = self.model.compute_logits(hidden)\n"

UPLOADS = {
    INIT_ANCHOR: INIT_ANCHOR + "        self.host_table = torch.ones(1 << 24)\n        self.host_small = torch.ones(16)\n",
    STEP_ANCHOR: STEP_ANCHOR + "        table = self.host_table.to(self.device, non_blocking=True)\n"
                               "        small = self.host_small.to(self.device, non_blocking=True)\n",
}
RACY = {
    RETURN_ANCHOR: "        depths_host = exit_depths.to(\"cpu\", non_blocking=True)\n"
                   "        self.last_depths = depths_host.tolist()\n" + RETURN_ANCHOR,
}
FIXED = {
    RETURN_ANCHOR: "        depths_host = exit_depths.to(\"cpu\", non_blocking=True)\n"
                   "        torch.cuda.current_stream().synchronize()\n"
                   "        self.last_depths = depths_host.tolist()\n" + RETURN_ANCHOR,
}
STAGING = {
    INIT_ANCHOR: INIT_ANCHOR + "        self.staging = torch.zeros(16, pin_memory=True)\n",
    STEP_ANCHOR: STEP_ANCHOR + "        self.staging.fill_(1.0)\n"
                               "        staged = self.staging.to(self.device, non_blocking=True)\n"
                               "        self.staging.fill_(0.0)\n",
}


def _edited(edits: dict[str, str]) -> str:
    text = (ENGINE / RUNNER).read_text()
    for anchor, replacement in edits.items():
        assert anchor in text, anchor
        text = text.replace(anchor, replacement, 1)
    return text


def _line(text: str, code: str) -> int:
    return text.splitlines().index(code) + 1


@pytest.fixture(scope="module")
def demo_repo(make_repo):
    repo = make_repo("loopy-engine-gpu")
    shutil.copytree(ENGINE, repo.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    repo.commit("base")
    for name, edits in (("uploads", UPLOADS), ("racy", RACY), ("fixed", FIXED), ("staging", STAGING)):
        repo.git("checkout", "-q", "-b", name, "main")
        repo.write(RUNNER, _edited(edits))
        repo.commit(name)
    repo.git("checkout", "-q", "-b", "refactor", "main")
    subprocess.run(["git", "-C", str(repo.path), "apply", str(PROJECT / "examples" / "demo_prs" / "refactor.patch")], check=True)
    repo.commit("refactor")
    repo.git("checkout", "-q", "main")
    return repo


def _measured(repo, diff: str):
    change = collect_changes(str(repo.path), diff=diff)
    summary = run_perf(change, device="cuda", timeout=300)
    assert summary.errors == ()
    return change, summary


def test_a_large_pageable_upload_is_an_added_sync_with_its_reason_and_a_small_one_is_not(demo_repo):
    change, summary = _measured(demo_repo, "main..uploads")
    text = _edited(UPLOADS)
    large = _line(text, "        table = self.host_table.to(self.device, non_blocking=True)")
    syncs = [d for d in summary.deltas if d.category == "sync" and d.added]
    assert [d.line for d in syncs] == [large]
    finding = next(f for f in perf_findings(summary, change=change) if f.span.line == large)
    assert "non_blocking upload of 67108864 bytes from pageable memory waits for the stream" in finding.evidence


def test_a_read_of_a_non_blocking_download_before_a_wait_is_a_race(demo_repo):
    change, summary = _measured(demo_repo, "main..racy")
    text = _edited(RACY)
    read = _line(text, "        self.last_depths = depths_host.tolist()")
    races = [d for d in summary.deltas if d.category == "race" and d.added]
    assert [d.line for d in races] == [read]
    finding = next(f for f in perf_findings(summary, change=change) if f.rule_id == "perf-copy-race")
    assert finding.span.line == read


def test_after_the_fix_the_read_is_no_race(demo_repo):
    _, summary = _measured(demo_repo, "main..fixed")
    assert not [d for d in summary.deltas if d.category == "race" and d.added]


def test_a_write_into_a_pinned_staging_buffer_while_its_upload_is_in_flight_is_a_race(demo_repo):
    _, summary = _measured(demo_repo, "main..staging")
    text = _edited(STAGING)
    write = _line(text, "        self.staging.fill_(0.0)")
    assert write in [d.line for d in summary.deltas if d.category == "race" and d.added]


def test_the_refactor_pr_gives_no_delta_on_the_device(demo_repo):
    _, summary = _measured(demo_repo, "main..refactor")
    assert summary.deltas == ()
