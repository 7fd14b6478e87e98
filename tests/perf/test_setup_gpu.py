"""On CUDA: a staging buffer unpinned in ``__init__`` turns an unchanged per-step
``copy_(..., non_blocking=True)`` of 8 MiB into a sync, named at the copy's line with the
set-up line as its cause; a 1 MiB upload, under the staging size, stays a copy (no delta).
Skipped without a CUDA device (the CPU side of this is ``test_setup_coverage.py``)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rltrefactor.change.changeset import collect_changes  # noqa: E402
from rltrefactor.perf import run_perf  # noqa: E402
from rltrefactor.perf.delta_findings import perf_findings  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: pinned and pageable uploads differ only there"),
]

LOADER = """\
import torch


class Loader:
    \"\"\"Uploads a host staging buffer of FLOATS float32 values every step.\"\"\"

    def __init__(self, device):
        self.device = device
        self.host = torch.empty(FLOATS, pin_memory=True)
        self.dev = torch.empty(FLOATS, device=device)

    def step(self):
        self.dev.copy_(self.host, non_blocking=True)
        return self.dev
"""

CHECK = """\
from rltrefactor.perf import micro_check
from eng.loader import Loader


@micro_check(device="cuda")
def upload_step(device):
    loader = Loader(device)
    return loader.step
"""

PINNED = "        self.host = torch.empty(FLOATS, pin_memory=True)\n"
PAGEABLE = "        self.host = torch.empty(FLOATS)\n"
COPY = "        self.dev.copy_(self.host, non_blocking=True)"


def _repo(make_repo, floats: int):
    repo = make_repo(f"loader-{floats}")
    repo.write("eng/__init__.py", "")
    repo.write("eng/loader.py", LOADER.replace("FLOATS", str(floats)))
    repo.write("perf_hooks/checks.py", CHECK)
    repo.commit("pinned")
    repo.git("checkout", "-q", "-b", "unpinned")
    repo.write("eng/loader.py", LOADER.replace(PINNED, PAGEABLE).replace("FLOATS", str(floats)))
    repo.commit("unpinned")
    return repo


def _line(text: str) -> int:
    return LOADER.replace(PINNED, PAGEABLE).splitlines().index(text.rstrip("\n")) + 1


def test_an_8_mib_upload_from_a_buffer_unpinned_in_init_is_a_sync_caused_by_the_set_up_line(make_repo):
    repo = _repo(make_repo, 2 * 1024 * 1024)  # 8 MiB of float32
    change = collect_changes(str(repo.path), diff="main..unpinned")
    summary = run_perf(change, device="cuda", timeout=300)
    cause = f"`self.host` is no longer pinned: eng/loader.py:{_line(PAGEABLE)}"
    assert summary.checks == ("perf_hooks.checks:upload_step",)
    assert [(d.category, d.line, d.base_count, d.head_count, d.cause) for d in summary.deltas] == [
        ("sync", _line(COPY), 0, 1, cause)]
    finding = perf_findings(summary, change=change)[0]
    assert finding.rule_id == "perf-added-sync" and finding.span.line == _line(COPY)
    assert "non_blocking upload of 8388608 bytes from pageable memory waits for the stream" in finding.evidence
    assert cause in finding.evidence


def test_a_1_mib_upload_from_a_buffer_unpinned_in_init_stays_a_copy(make_repo):
    repo = _repo(make_repo, 256 * 1024)  # 1 MiB of float32, under the 2 MiB staging size
    summary = run_perf(collect_changes(str(repo.path), diff="main..unpinned"), device="cuda", timeout=300)
    assert summary.checks == ("perf_hooks.checks:upload_step",)  # measured: its set-up runs changed code
    assert summary.deltas == ()
    totals = summary.device_evidence.totals["perf_hooks.checks:upload_step"]
    assert (totals.base.sync, totals.head.sync, totals.base.copy, totals.head.copy) == (0, 0, 1, 1)
