"""A static finding is confirmed only by a measurement of the kind its rule claims, through
``review --perf`` on the CPU: a copy rule is not confirmed by an allocation measured on its
line (the measurement is shown for what it is), a sync rule is confirmed by a sync."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

RUNNER = """\
import torch


class Runner:
    def __init__(self, device):
        self.device = device

    def step(self, batch, lengths):
        total = lengths.sum()
        return total
"""
CHECKS = """\
import torch
from rltrefactor.perf import micro_check
from eng.runner import Runner


@micro_check
def step(device):
    runner = Runner(device)
    lengths = torch.ones(4, dtype=torch.long, device=device)
    return lambda: runner.step([1, 2, 3], lengths)
"""
# On the CPU, ``torch.tensor(n, device=...)`` allocates and copies nothing; ``.item()`` syncs.
HEAD = RUNNER.replace(
    "        total = lengths.sum()\n",
    "        total = lengths.sum()\n"
    "        count = torch.tensor(len(batch), device=self.device)\n"
    "        first = lengths.max().item()\n",
)


def _line(needle: str) -> int:
    return next(n for n, line in enumerate(HEAD.splitlines(), start=1) if needle in line)


@pytest.fixture(scope="module")
def kinds_repo(make_repo):
    repo = make_repo("kinds")
    repo.write("eng/__init__.py", "")
    repo.write("eng/runner.py", RUNNER)
    repo.write("perf_hooks/checks.py", CHECKS)
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "head")
    repo.write("eng/runner.py", HEAD)
    repo.commit("head")
    return repo


_RUNS: dict[str, tuple] = {}  # one measurement for the module: each run imports torch twice


@pytest.fixture
def measured(kinds_repo, cli):
    if not _RUNS:
        review = ("review", "--diff", "main..head", "--perf", "--no-cache")
        _RUNS["kinds"] = (cli(*review, "--format", "json", cwd=kinds_repo.path), cli(*review, cwd=kinds_repo.path))
    return _RUNS["kinds"]


def test_an_allocation_measured_on_a_copy_finding_is_shown_and_does_not_confirm_it(measured):
    json_run, text_run = measured
    assert json_run.code == 1, json_run.err
    by_line = {f["line"]: f for f in json_run.json()["findings"]}
    copy = by_line[_line("torch.tensor(len(batch)")]
    assert copy["rule"] == "host-to-device-copy-per-call" and copy["confirmed"] is False and "perf" not in copy
    assert copy["evidence"] == (
        "Measured on this line: +1 allocation per call of `perf_hooks.checks:step` on cpu; no copy, which this rule claims.")
    assert copy["also_rules"] == ["perf-added-alloc"]  # one problem, one finding: the measurement is not a second one
    text = text_run.out
    copy_header = next(line for line in text.splitlines() if "host-to-device-copy-per-call" in line)
    assert "confirmed by perf hook" not in copy_header
    assert "evidence: Measured on this line: +1 allocation" in text


def test_a_sync_measured_on_a_sync_finding_confirms_it(measured):
    json_run, text_run = measured
    (read,) = [f for f in json_run.json()["findings"] if f["line"] == _line(".item()")]
    assert read["rule"] == "host-sync-in-hot-path" and read["confirmed"] is True
    assert read["perf"]["category"] == "sync"
    assert read["evidence"].startswith("Measured by the perf hook: +1 sync")
    read_header = next(line for line in text_run.out.splitlines() if "host-sync-in-hot-path" in line)
    assert "[confirmed by perf hook]" in read_header
