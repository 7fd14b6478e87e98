"""The perf hook end to end on real git repositories, on the CPU.

One repository serves every scenario: each scenario is a branch off ``main`` and is
measured once (two runner processes, ~2 s each), shared at module scope.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from rltrefactor.change.changeset import collect_changes
from rltrefactor.errors import ChangeInputError, ConfigError
from rltrefactor.perf import plan, run_perf
from rltrefactor.perf import hook as hook_module
from rltrefactor.report.perf import render_perf_text
from rltrefactor.perf.sides import SideRun
from rltrefactor.perf.records import PerfCheckTotals, PerfTotals

pytest.importorskip("torch")

RUNNER = """\
import torch


class Runner:
    def __init__(self, device):
        self.device = device
        self.out = torch.zeros(4, dtype=torch.long, device=device)
        self.calls = 0

    def step(self, logits):
        tokens = logits.argmax(-1)
        done = bool(tokens[0] == -1)
        self.out.copy_(tokens)
        return tokens

    def flaky(self, x):
        self.calls += 1
        if self.calls % 2:
            return x + 1
        return x

    def other(self, x):
        return x * 2

    def mix(self, x):
        if bool(x[0, 0] > 100):
            x = x * 0
        return torch.relu(x * 2 + 1).sum(-1)
"""

FEED_FORWARD = """\
import torch


class FeedForward(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = torch.nn.Linear(8, 16)
        self.w2 = torch.nn.Linear(16, 8)

    def forward(self, x):
        return self.w2(torch.relu(self.w1(x)))
"""

CHECKS = """\
import torch
from rltrefactor.perf import micro_check
from eng.runner import Runner


def _setup(device):
    return Runner(device), torch.randn(4, 16, device=device)


@micro_check
def step(device):
    runner, logits = _setup(device)
    return lambda: runner.step(logits)


@micro_check(covers=["eng/runner.py::Runner.extra"])
def needs_extra(device):
    runner, logits = _setup(device)
    return lambda: runner.extra(logits)


@micro_check
def flaky(device):
    runner, logits = _setup(device)
    return lambda: runner.flaky(logits)


@micro_check
def other(device):
    runner, logits = _setup(device)
    return lambda: runner.other(logits)


@micro_check
def mix(device):
    runner, logits = _setup(device)
    return lambda: runner.mix(logits)


@micro_check
def feed_forward(device):
    from eng.ff import FeedForward

    torch.manual_seed(0)
    block, x = FeedForward().to(device), torch.randn(2, 8, device=device)
    return lambda: block(x)
"""

FAILING = """\
import os
import time
from rltrefactor.perf import micro_check
from eng.runner import Runner
import torch


@micro_check
def crashes(device):
    runner = Runner(device)
    return lambda: (runner.step(torch.randn(4, 16)), os._exit(3))


@micro_check
def hangs(device):
    runner = Runner(device)
    return lambda: (runner.step(torch.randn(4, 16)), time.sleep(600))


@micro_check
def segfaults(device):
    import ctypes

    return lambda: ctypes.string_at(0)


@micro_check
def hogs_memory(device):
    hoard = []
    return lambda: [hoard.append(b"\\x01" * (256 << 20)) for _ in range(100)]


@micro_check
def fine(device):
    runner = Runner(device)
    logits = torch.randn(4, 16)
    return lambda: runner.step(logits)
"""


def _edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


DEFECTS = _edit(
    _edit(_edit(RUNNER, "        return x\n", "        return x.view(-1)\n"), "        if bool(x[0, 0] > 100):\n            x = x * 0\n", ""),
    "        self.out.copy_(tokens)\n",
    "        first = tokens[0].item()\n"
    "        scratch = torch.zeros(4, device=self.device)\n"
    "        self.out.copy_(tokens)\n"
    "        host = tokens.cpu()\n",
) + "\n    def extra(self, logits):\n        return logits.sum(-1)\n"

REFACTOR = _edit(
    _edit(RUNNER, "        tokens = logits.argmax(-1)\n", "        next_ids = self._pick(logits)\n"),
    "        done = bool(tokens[0] == -1)\n        self.out.copy_(tokens)\n        return tokens\n",
    "        self.out.copy_(next_ids)\n        done = bool(next_ids[0] == -1)\n        return next_ids\n\n"
    "    def _pick(self, logits):\n        return logits.argmax(-1)\n",
)


# The one-line return of FeedForward.forward split in two statements, beside a new scratch.
SPLIT = _edit(
    FEED_FORWARD,
    "        return self.w2(torch.relu(self.w1(x)))\n",
    "        scratch = torch.zeros(2, 16, device=x.device)\n"
    "        activated = torch.relu(self.w1(x))\n"
    "        return self.w2(activated)\n",
)


# The statement of Runner.mix reflowed across four lines, beside one new allocation.
REFLOW = _edit(
    RUNNER,
    "        return torch.relu(x * 2 + 1).sum(-1)\n",
    "        scratch = torch.zeros(4, device=self.device)\n"
    "        return torch.relu(\n            x * 2\n            + 1\n        ).sum(-1)\n",
)


@pytest.fixture(scope="module")
def demo(make_repo):
    repo = make_repo()
    repo.write("eng/__init__.py", "")
    repo.write("eng/runner.py", RUNNER)
    repo.write("eng/ff.py", FEED_FORWARD)
    repo.write("perf_hooks/checks.py", CHECKS)
    repo.write("failing_hooks/checks.py", FAILING)
    repo.commit("base")
    for branch, text in (("defects", DEFECTS), ("refactor", REFACTOR), ("reflow", REFLOW)):
        repo.git("checkout", "-q", "-b", branch, "main")
        repo.write("eng/runner.py", text)
        repo.commit(branch)
    repo.git("checkout", "-q", "-b", "split", "main")
    repo.write("eng/ff.py", SPLIT)
    repo.commit("split")
    repo.git("checkout", "-q", "-b", "broken", "defects")
    repo.write("perf_hooks/checks.py", "import not_a_module\n")
    repo.commit("broken")
    repo.git("checkout", "-q", "main")
    return repo


def _leftovers(temp: Path) -> list[str]:
    """What the hook left in its own temporary directory (others' runs never write there)."""
    return sorted(os.listdir(temp))


@pytest.fixture(scope="module")
def defects(demo, tmp_path_factory):
    temp = tmp_path_factory.mktemp("perf-temp")
    summary = run_perf(collect_changes(str(demo.path), diff="main..defects"), timeout=60, temp_dir=str(temp))
    assert _leftovers(temp) == []
    return summary


def _lines(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), start=1) if needle in line)


def _added(summary, category):
    return [(d.line, d.source) for d in summary.deltas if d.added and d.category == category]


def test_added_item_copy_and_allocation_each_appear_once_at_their_line(defects):
    step = [d for d in defects.deltas if d.check == "perf_hooks.checks:step"]
    assert {(d.category, d.line) for d in step if d.added} == {
        ("sync", _lines(DEFECTS, "tokens[0].item()")),
        ("alloc", _lines(DEFECTS, "torch.zeros(4, device=self.device)")),
        ("copy", _lines(DEFECTS, "tokens.cpu()")),
    }
    assert all(d.head_count - d.base_count == 1 for d in step if d.added)


def test_a_removed_sync_is_an_improvement_at_its_base_line(defects):
    removed = [d for d in defects.deltas if not d.added and d.category == "sync"]
    assert [(d.line, d.base_count, d.head_count) for d in removed] == [(_lines(RUNNER, "bool(x[0, 0] > 100)"), 1, 0)]


def test_a_check_of_code_new_in_the_change_is_measured_at_head_only_not_failed(defects):
    assert not [e for e in defects.errors if "needs_extra" in e.message]
    assert defects.head_only == ("perf_hooks.checks:needs_extra",)
    assert defects.device_evidence.totals["perf_hooks.checks:needs_extra"] == PerfCheckTotals(
        base=None, head=PerfTotals(sync=0, copy=0, alloc=1))
    assert not [d for d in defects.deltas if d.check.endswith(":needs_extra")]
    assert "perf_hooks.checks:step" in defects.checks and not defects.all_failed
    assert "perf_hooks.checks:needs_extra  covers eng/runner.py::Runner.extra (new code: measured at head only)\n" \
           "    per call: head sync 0 copy 0 alloc 1" in render_perf_text(defects)


def test_when_every_check_fails_the_command_says_so_and_exits_2(demo, cli):
    result = cli("perf", "--diff", "main..broken", cwd=demo.path)
    assert result.code == 2, result.err
    assert result.out.startswith("perf: every micro-check failed (1 error(s)); nothing was compared")
    assert "error perf_hooks/checks.py:1: head: cannot import micro-check file: ModuleNotFoundError" in result.out
    review = cli("review", "--diff", "main..broken", "--perf", "--select", "device-residency", cwd=demo.path)
    assert review.code == 2, review.err


def test_nondeterministic_counts_are_reported_not_compared(defects):
    (error,) = [e for e in defects.errors if "flaky" in e.message]
    assert "counts differ between repeated runs" in error.message
    assert not [d for d in defects.deltas if d.check.endswith(":flaky")]


def test_only_checks_covering_the_change_run_on_both_sides(defects):
    assert "perf_hooks.checks:other" not in defects.checks
    coverage = defects.device_evidence.coverage
    assert coverage["perf_hooks.checks:step"] == ("eng/runner.py::Runner.step",)
    assert coverage["perf_hooks.checks:needs_extra"] == ("eng/runner.py::Runner.extra",)


def test_unchanged_code_counts_the_same_in_every_repeat(defects):
    totals = defects.device_evidence.totals["perf_hooks.checks:step"]
    assert totals.base == PerfTotals(sync=1, copy=1, alloc=2)  # bool(), copy_, argmax, eq


def test_a_pure_refactor_gives_no_delta(demo):
    summary = run_perf(collect_changes(str(demo.path), diff="main..refactor"), timeout=60)
    assert "perf_hooks.checks:step" in summary.checks
    assert summary.deltas == ()


def test_a_statement_reflowed_across_lines_is_no_delta_and_new_work_beside_it_is(demo):
    summary = run_perf(collect_changes(str(demo.path), diff="main..reflow"), timeout=60)
    assert "perf_hooks.checks:mix" in summary.checks
    assert [(d.category, d.line, d.base_count, d.head_count) for d in summary.deltas] == [
        ("alloc", _lines(REFLOW, "scratch = torch.zeros"), 0, 1)
    ]


def test_a_statement_split_in_two_beside_a_new_scratch_gives_exactly_the_scratch(demo):
    summary = run_perf(collect_changes(str(demo.path), diff="main..split"), timeout=60)
    assert summary.checks == ("perf_hooks.checks:feed_forward",)
    assert [(d.category, d.line, d.base_count, d.head_count) for d in summary.deltas] == [
        ("alloc", _lines(SPLIT, "scratch = torch.zeros"), 0, 1)
    ]


def test_review_with_perf_times_the_whole_run_and_lists_a_failed_check_once(demo, cli):
    text = cli("review", "--diff", "main..defects", "--perf", "--select", "device-residency", cwd=demo.path)
    seconds = float(re.search(r"· ([0-9.]+) s$", text.out.strip()).group(1))
    assert seconds > 1.0, text.out  # two runner processes importing torch: never the static 0.x s
    markdown = cli("review", "--diff", "main..defects", "--perf", "--format", "markdown", cwd=demo.path)
    assert markdown.out.count("perf_hooks.checks:flaky: counts differ") == 1, markdown.out


def test_perf_json_keeps_its_shape_with_typed_records(demo, cli):
    result = cli("perf", "--diff", "main..defects", "--format", "json", cwd=demo.path)
    document = result.json()
    assert document["schema"] == "rltrefactor/perf/v1"
    totals = document["device_evidence"]["totals"]["perf_hooks.checks:step"]
    assert totals["base"] == {"sync": 1, "copy": 1, "alloc": 2, "race": 0}
    assert document["device_evidence"]["coverage"]["perf_hooks.checks:step"] == ["eng/runner.py::Runner.step"]
    assert {f["rule"] for f in document["findings"]} >= {"perf-added-sync"}


def test_hangs_and_crashes_are_killed_and_reported_without_leftovers(demo, tmp_path):
    change = collect_changes(str(demo.path), diff="main..defects")
    summary = run_perf(change, hooks_dir="failing_hooks", timeout=6, memory_mb=1024, temp_dir=str(tmp_path))
    messages = sorted(e.message for e in summary.errors)
    assert any("failing_hooks.checks:crashes: crashed (exit code 3)" in m for m in messages), messages
    assert any("failing_hooks.checks:hangs: timed out after 6 s (process killed)" in m for m in messages)
    assert any("failing_hooks.checks:segfaults: crashed (killed by signal SIGSEGV)" in m for m in messages), messages
    assert any("failing_hooks.checks:hogs_memory: used more than 1024 MiB of memory" in m for m in messages), messages
    assert summary.checks == ("failing_hooks.checks:fine",)
    assert _leftovers(tmp_path) == []
    assert demo.git("worktree", "list").count("\n") == 1


def test_worktrees_are_removed_on_keyboard_interrupt(demo, monkeypatch, tmp_path):
    def fake_run_side(root, hooks_dir, extra, *, checks, timeout, cancel, memory_mb, setup):
        assert os.path.isdir(os.path.join(root, "eng"))
        if "--trace" not in extra:
            raise KeyboardInterrupt  # Ctrl-C while the base side runs
        assert cancel.wait(10)  # the head side is told to stop
        return SideRun(root=root)

    monkeypatch.setattr(hook_module, "run_side", fake_run_side)
    made = []
    real = hook_module.detached_worktree

    def recording_worktree(*args, **kwargs):
        made.append(kwargs["parent"])
        return real(*args, **kwargs)

    monkeypatch.setattr(hook_module, "detached_worktree", recording_worktree)
    with pytest.raises(KeyboardInterrupt):
        run_perf(collect_changes(str(demo.path), diff="main..refactor"), temp_dir=str(tmp_path))
    assert made == [str(tmp_path)] * 2  # head and base were both made here, then removed
    assert _leftovers(tmp_path) == []
    assert demo.git("worktree", "list").count("\n") == 1


def test_plan_names_the_files_it_executes_and_refuses_a_patch(demo, tmp_path: Path):
    the_plan = plan(collect_changes(str(demo.path), diff="main..defects"))
    assert the_plan.files == ("perf_hooks/checks.py",)
    patch = tmp_path / "x.patch"
    patch.write_text(demo.git("diff", "main", "defects"))
    with pytest.raises(ChangeInputError, match=r"^perf: needs a git repository and a base commit"):
        plan(collect_changes(str(demo.path), diff_file=str(patch)))


def test_a_missing_hooks_directory_is_a_config_error_naming_the_shipped_template(demo):
    with pytest.raises(ConfigError, match=r"^nowhere/: perf hook: no micro-checks found \(got no nowhere/\*\.py at "):
        run_perf(collect_changes(str(demo.path), diff="main..defects"), hooks_dir="nowhere")
    assert os.path.isfile(hook_module.TEMPLATE)
    assert hook_module.TEMPLATE.startswith(os.path.dirname(hook_module.__file__))  # inside the installed package


@pytest.mark.parametrize("command", [["perf"], ["review", "--perf"]])
def test_no_micro_checks_is_exit_2_with_one_line_naming_what_to_do(make_repo, cli, command):
    repo = make_repo("no-checks")
    repo.write("eng/runner.py", "def step(x):\n    return x\n")
    repo.commit("base")
    repo.write("eng/runner.py", "def step(x):\n    return x.item()\n")
    result = cli(*command, "--diff", "HEAD", cwd=repo.path)
    assert result.code == 2, result.out
    assert result.err.count("\n") == 1, result.err
    assert result.err.startswith("rltrefactor: perf_hooks/: perf hook: no micro-checks found "
                                 "(got no perf_hooks/*.py at working tree); write one for a changed function with "
                                 "rltrefactor perf scaffold PATH::QUALNAME (it fills the template installed with "
                                 "rltrefactor into perf_hooks/)")
    assert "template_check.py" not in result.err  # a command to run, not a file to find
    assert "perf-hooks under [tool.rltrefactor]" in result.err
