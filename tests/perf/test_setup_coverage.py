"""Checks and tests whose set-up alone runs changed code are measured, and their deltas
name the changed set-up line as the cause (on CPU: an allocation the set-up change adds
to an unchanged step; the pinned-memory sync itself is ``test_setup_gpu.py``'s)."""

from __future__ import annotations

import pytest

from rltrefactor.change.changeset import collect_changes
from rltrefactor.perf import run_perf
from rltrefactor.perf.delta_findings import perf_findings
from rltrefactor.perf.deltas import compare
from rltrefactor.perf.protocol import CountRow
from rltrefactor.perf.records import PerfDelta
from rltrefactor.perf.setup_causes import SetUpLine, cause_of
from rltrefactor.perf.testsummary import set_up_only

ENGINE = """\
import torch


class Runner:
    def __init__(self):
        self.ids = torch.arange(4)
        self.weight = torch.ones(4)

    def step(self, x):
        ids = torch.as_tensor(self.ids)
        return x[ids] * self.weight


class Other:
    def __init__(self):
        self.bias = torch.zeros(4)

    def step(self, x):
        return x[:4] + self.bias
"""

CHECKS = """\
import torch

from eng.runner import Other, Runner
from rltrefactor.perf import micro_check


@micro_check(device="cpu")
def runner_step():
    runner = Runner()
    x = torch.arange(8.0)
    return lambda: runner.step(x)


@micro_check(device="cpu")
def other_step():
    other = Other()
    x = torch.arange(8.0)
    return lambda: other.step(x)
"""

TESTS = """\
import torch

from eng.runner import Runner


def test_runner_step():
    assert Runner().step(torch.arange(8.0)).tolist() == [0.0, 1.0, 2.0, 3.0]
"""

LISTED = ENGINE.replace("        self.ids = torch.arange(4)\n", "        self.ids = list(range(4))\n")
# The step changes too: its own deltas are the change's, no set-up cause is named.
BOTH = LISTED.replace("        return x[ids] * self.weight\n", "        return (x[ids] * self.weight).clone()\n")


def _line(text: str, source: str = LISTED) -> int:
    return source.splitlines().index(text) + 1


@pytest.fixture(scope="module")
def repo(make_repo):
    pytest.importorskip("torch")
    repo = make_repo("set-up")
    repo.write("eng/__init__.py", "")
    repo.write("eng/runner.py", ENGINE)
    repo.write("perf_hooks/checks.py", CHECKS)
    repo.write("tests/test_runner.py", TESTS)
    repo.commit("base")
    for branch, text in (("listed", LISTED), ("both", BOTH)):
        repo.git("checkout", "-q", "-b", branch, "main")
        repo.write("eng/runner.py", text)
        repo.commit(branch)
    return repo


@pytest.fixture(scope="module")
def listed(repo):
    change = collect_changes(str(repo.path), diff="main..listed")
    return change, run_perf(change, device="cpu", tests=("tests",))


CAUSE = f"set-up changed, `self.ids = list(range(4))`: eng/runner.py:{_line('        self.ids = list(range(4))')}"


def test_a_check_whose_set_up_alone_runs_changed_code_is_measured_and_names_the_cause(listed):
    change, summary = listed
    assert "perf_hooks.checks:runner_step" in summary.checks
    assert "perf_hooks.checks:other_step" not in summary.checks  # its set-up runs no changed code
    assert summary.device_evidence.set_up["perf_hooks.checks:runner_step"] == ("eng/runner.py::Runner.__init__",)
    step = _line("        ids = torch.as_tensor(self.ids)")
    by_check = [d for d in summary.deltas if d.check == "perf_hooks.checks:runner_step"]
    assert [(d.category, d.line, d.head_count - d.base_count, d.cause) for d in by_check] == [
        ("alloc", step, 1, CAUSE)]
    finding = next(f for f in perf_findings(summary, change=change) if f.span.line == step)
    assert finding.rule_id == "perf-added-alloc"
    assert f"Cause, in set-up (this line did not change): {CAUSE}." in finding.evidence


def test_a_test_whose_set_up_alone_runs_changed_code_is_compared_on_every_line(listed):
    _, summary = listed
    by_test = [d for d in summary.deltas if d.check.endswith("::test_runner_step")]
    assert [(d.line, d.head_count - d.base_count, d.cause) for d in by_test] == [
        (_line("        ids = torch.as_tensor(self.ids)"), 1, CAUSE)]


def test_set_up_code_is_not_counted_as_measured_per_step_code(listed):
    from rltrefactor.perf.unmeasured import reached_by_checks

    _, summary = listed
    assert "eng/runner.py::Runner.__init__" not in reached_by_checks(summary)


def test_when_the_measured_call_runs_changed_code_too_no_set_up_cause_is_named(repo):
    summary = run_perf(collect_changes(str(repo.path), diff="main..both"), device="cpu", tests=("tests",))
    assert summary.device_evidence.set_up == {}
    assert summary.deltas and not [d for d in summary.deltas if d.cause]
    clone = _line("        return (x[ids] * self.weight).clone()", BOTH)
    assert ("copy", clone) in {(d.category, d.line) for d in summary.deltas if d.added}


def test_the_command_line_reports_the_delta_at_its_line_with_its_set_up_cause(repo, cli):
    result = cli("perf", "--diff", "main..listed", cwd=repo.path)
    step = _line("        ids = torch.as_tensor(self.ids)")
    assert result.code == 1, result.err
    assert "perf_hooks.checks:runner_step  covers eng/runner.py::Runner.__init__ (by its set-up only" in result.out
    assert (f"+1 alloc at eng/runner.py:{step} — ids = torch.as_tensor(self.ids) (cause, in set-up: {CAUSE})"
            in result.out)
    review = cli("review", "--diff", "main..listed", "--perf", "--format", "json", cwd=repo.path)
    found = [f for f in review.json()["findings"] if f["rule"] == "perf-added-alloc"]
    assert [f["line"] for f in found] == [step] and CAUSE in found[0]["evidence"]


# Pure parts: the cause's words, the line chosen, the set-up-only test, the re-categorized op.

def test_a_line_that_lost_its_pinning_is_named_so():
    unpinned = SetUpLine("eng/loader.py", 9, "self.host = torch.empty(n)", "self.host = torch.empty(n, pin_memory=True)")
    assert unpinned.describe() == "`self.host` is no longer pinned: eng/loader.py:9"
    removed = SetUpLine("eng/loader.py", 10, "", "self.host = self.host.pin_memory()")
    assert removed.describe() == "`self.host` is no longer pinned: eng/loader.py:10"
    pinned = SetUpLine("eng/loader.py", 9, "self.host = torch.empty(n, pin_memory=True)", "self.host = torch.empty(n)")
    assert pinned.describe() == "`self.host` is now pinned: eng/loader.py:9"
    other = SetUpLine("eng/loader.py", 9, "self.host = torch.empty(2 * n, pin_memory=True)",
                      "self.host = torch.empty(n, pin_memory=True)")
    assert other.describe() == "set-up changed, `self.host = torch.empty(2 * n, pin_memory=True)`: eng/loader.py:9"


def _delta(source: str, category: str = "sync") -> PerfDelta:
    return PerfDelta("c", category, "eng/loader.py", 20, source, 0, 1, "cuda:0")  # type: ignore[arg-type]


def test_the_cause_is_the_changed_line_assigning_what_the_delta_line_uses():
    lines = [SetUpLine("eng/loader.py", 8, "self.hostile = torch.zeros(4)", ""),
             SetUpLine("eng/loader.py", 9, "self.host = torch.empty(n)", "self.host = torch.empty(n, pin_memory=True)"),
             SetUpLine("eng/loader.py", 10, "self.scale = 2.0", "self.scale = 1.0")]
    ops = "aten.copy_ h2d pageable->device non_blocking"
    assert cause_of(_delta("self.dev.copy_(self.host, non_blocking=True)"), ops, lines) == (
        "`self.host` is no longer pinned: eng/loader.py:9")
    assert cause_of(_delta("y = x * self.scale", "alloc"), "aten.mul", lines) == (
        "set-up changed, `self.scale = 2.0`: eng/loader.py:10")
    # Nothing the delta's line names: a pageable copy still points at the pinning change.
    assert cause_of(_delta("self.dev.copy_(buf, non_blocking=True)"), ops, lines).startswith(
        "`self.host` is no longer pinned: eng/loader.py:9")
    assert cause_of(_delta("z = w + 1", "alloc"), "aten.add", lines) == (
        "set-up changed, `self.hostile = torch.zeros(4)`: eng/loader.py:8 (or one of 2 more changed set-up lines)")


def test_a_test_counts_as_set_up_only_when_every_engine_hit_is_set_up():
    assert set_up_only(["eng/loader.py::Loader.__init__", "tests/test_loader.py::test_step"]) == (
        "eng/loader.py::Loader.__init__",)
    assert set_up_only(["eng/loader.py::Loader.__init__", "eng/loader.py::Loader.step"]) == ()
    assert set_up_only(["eng/loader.py::Loader.step"]) == ()


def _row(category: str, direction: str, source: str = "self.dev.copy_(self.host, non_blocking=True)",
         line: int = 12) -> CountRow:
    return CountRow(category, "aten.copy_", direction, "eng/loader.py", line, source, "Loader.step", 1, 8 << 20)


def test_a_copy_that_became_a_sync_is_one_added_sync_not_also_a_removed_copy():
    pinned, pageable = _row("copy", "h2d pinned->device non_blocking"), _row("sync", "h2d pageable->device non_blocking")
    deltas, _ = compare("c", "cuda:0", [pinned], [pageable], {})
    assert [(d.category, d.base_count, d.head_count) for d in deltas] == [("sync", 0, 1)]
    deltas, _ = compare("c", "cuda:0", [pageable], [pinned], {})
    assert [(d.category, d.base_count, d.head_count) for d in deltas] == [("sync", 1, 0)]
    # Another statement is another op: a removed copy and an added sync.
    moved = _row("sync", "h2d pageable->device non_blocking", "self.dev.copy_(self.other, non_blocking=True)", 13)
    deltas, _ = compare("c", "cuda:0", [pinned], [moved], {})
    assert sorted((d.category, d.head_count - d.base_count) for d in deltas) == [("copy", -1), ("sync", 1)]
    # Under the staging size the copy stays a copy: pinned or pageable, no delta at all.
    small = _row("copy", "h2d pageable->device non_blocking")
    assert compare("c", "cuda:0", [pinned], [small], {})[0] == []
