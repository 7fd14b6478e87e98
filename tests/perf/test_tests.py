"""A repository's pytest tests as micro-checks (``perf --tests``), on real git repositories.

One change, measured once at module scope (a tracing process, then two processes per
selected test), serves the scenarios: selection by tracing, tests left out, unstable
lines, and deltas on the lines of touched functions only.
"""

from __future__ import annotations

import pytest

from rltrefactor.change.changeset import collect_changes
from rltrefactor.perf import run_perf
from rltrefactor.perf import testmap
from rltrefactor.perf.coverage import touched_definitions
from rltrefactor.report.perf import render_perf_text

pytest.importorskip("torch")

ENGINE = """\
import torch

_CALLS = [0]


def scratch(x):
    return x * 3


def other(x):
    return x + 2


def flaky(x):
    _CALLS[0] += 1
    return x + 1


class Runner:
    def __init__(self):
        self.out = torch.zeros(4, dtype=torch.long)

    def step(self, logits):
        tokens = logits.argmax(-1)
        self.out.copy_(tokens)
        return tokens
"""

TESTS = """\
import pytest
import torch

from eng.runner import Runner, flaky, other


def _logits():
    return torch.arange(8.0).reshape(4, 2)


def test_step():
    assert Runner().step(_logits()).tolist() == [1, 1, 1, 1]


def test_other():
    assert other(torch.ones(2)).tolist() == [3.0, 3.0]


def test_flaky():
    flaky(torch.ones(2))


def test_skips():
    Runner().step(_logits())
    pytest.skip("needs a device this machine does not have")


def test_new_api():
    runner = Runner()
    runner.step(_logits())
    assert runner.stats == 0
"""


CHECKS = """\
import torch

from eng.runner import Runner
from rltrefactor.perf import micro_check


@micro_check(device="cpu")
def step():
    runner = Runner()
    logits = torch.arange(8.0).reshape(4, 2)
    return lambda: runner.step(logits)
"""


def _changed(text: str) -> str:
    return (text
            .replace("        self.out = torch.zeros(4, dtype=torch.long)\n",
                     "        self.out = torch.zeros(4, dtype=torch.long)\n"
                     "        self.scratch = torch.zeros(16)\n"
                     "        self.stats = 0\n")
            .replace("        self.out.copy_(tokens)\n",
                     "        self.out.copy_(tokens)\n"
                     "        if tokens.max().item() > 8:\n"
                     "            return tokens\n"
                     "        scratch(logits)\n")
            .replace("    _CALLS[0] += 1\n    return x + 1\n",
                     "    _CALLS[0] += 1\n    if _CALLS[0] % 2 == 0:  # every second call only\n        return x + 1\n    return x\n"))


@pytest.fixture(scope="module")
def repo(make_repo):
    repo = make_repo()
    repo.write("eng/__init__.py", "")
    repo.write("eng/runner.py", ENGINE)
    repo.write("tests/test_runner.py", TESTS)
    repo.write("perf_hooks/checks.py", CHECKS)
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "change")
    repo.write("eng/runner.py", _changed(ENGINE))
    repo.commit("change")
    return repo


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def measured(repo, cache_dir):
    change = collect_changes(str(repo.path), diff="main..change")
    return change, run_perf(change, device="cpu", tests=("tests",), cache_dir=cache_dir)


def _line(repo, text: str) -> int:
    rows = (repo.path / "eng" / "runner.py").read_text().splitlines()
    return rows.index(text) + 1


def test_only_the_tests_reaching_a_touched_function_are_selected(measured):
    _, summary = measured
    assert summary.tests is not None and summary.tests.traced
    names = {name.split("::")[1] for name in summary.tests.selected}
    assert names == {"test_step", "test_flaky", "test_skips", "test_new_api"}  # not test_other


def test_a_test_that_fails_or_skips_on_either_side_is_listed_and_left_out(measured):
    _, summary = measured
    assert summary.tests is not None
    left_out = {name.split("::")[1]: reason for name, reason in summary.tests.left_out.items()}
    assert set(left_out) == {"test_skips", "test_new_api"}
    assert left_out["test_skips"].startswith("base: skipped: needs a device")
    assert left_out["test_new_api"].startswith("base: failed: AttributeError")
    assert "head:" not in left_out["test_new_api"]  # it passes at the head
    assert {name.split("::")[-1] for name in summary.checks if "::" in name} == {"test_step", "test_flaky"}
    assert not any(d.check.endswith(("test_skips", "test_new_api")) for d in summary.deltas)


def test_a_line_whose_counts_differ_between_runs_is_dropped_and_listed(repo, measured):
    _, summary = measured
    assert summary.tests is not None
    line = _line(repo, "        return x + 1")
    unstable = {(u.side, u.path, u.line, u.runs) for u in summary.tests.unstable}
    assert unstable == {("head", "eng/runner.py", line, (0, 1))}
    # Its first run alone would read as a removed allocation: dropped on both sides, it is none.
    assert not [d for d in summary.deltas if d.check.endswith("::test_flaky")]
    assert f"unstable eng/runner.py:{line} (head, alloc 0 then 1)" in render_perf_text(summary)


def test_deltas_are_reported_on_lines_of_touched_functions_only(repo, measured):
    _, summary = measured
    sync = _line(repo, "        if tokens.max().item() > 8:")
    # scratch() is untouched: the allocation its new call adds there is not reported; the
    # allocation added in __init__ is construction, the test's set-up.
    by_tests = [d for d in summary.deltas if "::" in d.check]
    assert {(d.category, d.line, d.head_count - d.base_count) for d in by_tests} == {
        ("sync", sync, 1), ("alloc", sync, 1),
    }
    assert summary.errors == ()
    assert all(d.check.endswith("::test_step") for d in by_tests)


def test_a_function_that_a_check_and_a_test_reach_is_measured_by_both(repo, measured):
    _, summary = measured
    sync = _line(repo, "        if tokens.max().item() > 8:")
    assert {name.split("::")[-1] for name in summary.checks} == {"perf_hooks.checks:step", "test_step", "test_flaky"}
    measured_by = {d.check.split("::")[-1] for d in summary.deltas if (d.category, d.line) == ("sync", sync)}
    assert measured_by == {"perf_hooks.checks:step", "test_step"}
    # A check reports every line it measures, the helper's too; the tests only touched functions'.
    helper = _line(repo, "    return x * 3")
    assert {d.check for d in summary.deltas if d.line == helper} == {"perf_hooks.checks:step"}


def test_the_map_is_read_from_the_cache_while_the_blobs_are_the_same(repo, measured, cache_dir, monkeypatch):
    change, summary = measured
    traced: list[list[str]] = []
    real = testmap.run_tests_side

    def spy(*args, **kwargs):
        traced.append(list(args[2]))
        return real(*args, **kwargs)

    monkeypatch.setattr(testmap, "run_tests_side", spy)
    touched = touched_definitions(change)
    again = testmap.trace_tests(change, str(repo.path), touched, ["tests"], timeout=60, memory_mb=8192,
                                cache_dir=cache_dir)
    assert traced == [] and not again.traced
    assert summary.tests is not None and tuple(sorted(again.tests)) == tuple(sorted(summary.tests.selected))
    other = testmap.trace_tests(change, str(repo.path), touched, ["tests/test_runner.py"], timeout=60,
                                memory_mb=8192, cache_dir=cache_dir)
    assert traced == [["tests/test_runner.py"]] and other.traced


def test_the_plan_names_what_it_runs_with_and_without_checks() -> None:
    from rltrefactor.perf.hook import PerfPlan
    from rltrefactor.report.perf import plan_text

    tests_only = plan_text(PerfPlan("/r", "a" * 40, "working tree", "perf_hooks", (), tests=("tests",)))
    assert tests_only.splitlines()[0] == "perf: executing the tests reaching the change, of pytest tests"
    both = plan_text(PerfPlan("/r", "a" * 40, "working tree", "perf_hooks", ("perf_hooks/c.py",), tests=()))
    assert both.splitlines()[:2] == ["perf: executing micro-checks from perf_hooks/c.py",
                                     "  and the tests reaching the change, of pytest (its own discovery)"]
    checks_only = plan_text(PerfPlan("/r", "a" * 40, "working tree", "perf_hooks", ("perf_hooks/c.py",)))
    assert "tests" not in checks_only.splitlines()[1]
