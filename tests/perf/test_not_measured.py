"""Changed code that runs per step, or might, and that no check reached is listed as "not
measured" in every report of ``perf`` and ``review --perf``, so a clean result is never
read as coverage; code a check reached, and code that runs once, is not listed."""

from __future__ import annotations

import json

import pytest

from rltrefactor.api import MeasureRequest, PerfRequest, ReviewRequest, measure, review_change
from rltrefactor.change.changeset import collect_changes
from rltrefactor.config import Config
from rltrefactor.report.perf import render_perf_json, render_perf_text
from rltrefactor.perf.unmeasured import classifier, not_measured
from rltrefactor.report.json import render_json
from rltrefactor.report.markdown import render_markdown
from rltrefactor.report.text import render_text

pytest.importorskip("torch")

BASE = """\
import torch


class Runner:
    def __init__(self, device):
        self.device = device
        self.scale = 2

    def step(self, x):
        return x * self.scale

    def forward(self, x):
        return x + 1

    def load_weights(self, path):
        return path
"""

HEAD = """\
import torch


class Runner:
    def __init__(self, device):
        self.device = device
        self.scale = 3

    def step(self, x):
        scaled = x * self.scale
        return scaled

    def forward(self, x):
        return x + 2

    def load_weights(self, path):
        return str(path)


def helper(x):
    return x - 1
"""

CHECKS = """\
import torch
from rltrefactor.perf import micro_check
from eng.runner import Runner


@micro_check(device="cpu")
def step(device):
    runner, x = Runner(device), torch.ones(4, device=device)
    return lambda: runner.step(x)
"""

FORWARD_LINE = HEAD.splitlines().index("    def forward(self, x):") + 1
HELPER_LINE = HEAD.splitlines().index("def helper(x):") + 1
STEP = "perf_hooks.checks:step"


@pytest.fixture(scope="module")
def repo(make_repo):
    repo = make_repo("unmeasured")
    repo.write("eng/__init__.py", "")
    repo.write("eng/runner.py", BASE)
    repo.write("perf_hooks/checks.py", CHECKS)
    repo.commit("base")
    repo.write("eng/runner.py", HEAD)
    repo.write("tests/test_runner.py", "def test_forward():\n    assert True\n")
    return repo


@pytest.fixture(scope="module")
def measured(repo):
    return measure(MeasureRequest(repo=str(repo.path), diff="main", perf=PerfRequest(device="cpu")))


@pytest.fixture(scope="module")
def reviewed(repo):
    return review_change(ReviewRequest(repo=str(repo.path), diff="main", use_cache=False,
                                       perf=PerfRequest(device="cpu"))).result


def test_per_step_code_no_check_reached_is_listed_and_reached_or_one_time_code_is_not(measured):
    summary = measured.summary
    assert summary.checks == (STEP,) and summary.deltas == () and summary.errors == ()
    listed = [(f.path, f.line, f.qualname, f.execution) for f in summary.not_measured]
    assert listed == [("eng/runner.py", FORWARD_LINE, "Runner.forward", "per-step"),
                      ("eng/runner.py", HELPER_LINE, "helper", "unknown")]
    assert summary.not_measured[0].evidence == "forward of Runner runs per step"


def test_perf_text_says_not_measured_for_each_and_names_the_scaffold_command(measured):
    text = render_perf_text(measured.summary)
    assert "no added or removed syncs, copies or allocations in the code the checks reached\n" in text
    assert f"  not measured  eng/runner.py:{FORWARD_LINE}  Runner.forward  (per-step: forward of Runner runs per step)\n" in text
    assert f"  not measured  eng/runner.py:{HELPER_LINE}  helper  (unknown)\n" in text
    assert "  write a micro-check for the first: rltrefactor perf scaffold eng/runner.py::Runner.forward\n" in text
    assert text.count("not measured  ") == 2  # Runner.step was reached; __init__ and load_weights run once


def test_perf_json_lists_what_nothing_measured(measured):
    document = json.loads(render_perf_json(measured.summary, measured.findings))
    assert [(f["qualname"], f["line"], f["status"]) for f in document["not_measured"]] == [
        ("Runner.forward", FORWARD_LINE, "not measured"), ("helper", HELPER_LINE, "not measured")]
    assert document["not_measured"][0]["scaffold"] == "rltrefactor perf scaffold eng/runner.py::Runner.forward"


def test_review_text_json_and_markdown_list_what_nothing_measured(reviewed):
    assert [f.qualname for f in reviewed.perf.not_measured] == ["Runner.forward", "helper"]
    text = render_text(reviewed)
    assert "Perf hook, not measured (2): changed functions that run per step, or might, and that no check reached" in text
    assert f"  not measured  eng/runner.py:{FORWARD_LINE}  Runner.forward  (per-step: forward of Runner runs per step)\n" in text
    perf = json.loads(render_json(reviewed))["perf"]
    assert [(f["path"], f["qualname"], f["execution"]) for f in perf["not_measured"]] == [
        ("eng/runner.py", "Runner.forward", "per-step"), ("eng/runner.py", "helper", "unknown")]
    markdown = render_markdown(reviewed)
    assert "No device synchronization, copy or allocation was added or removed in the code the checks reached." in markdown
    assert "#### Not measured" in markdown
    assert f"- `eng/runner.py:{FORWARD_LINE}` `Runner.forward` (per-step: forward of Runner runs per step): **not measured**" in markdown
    assert f"- `eng/runner.py:{HELPER_LINE}` `helper` (unknown): **not measured**" in markdown
    assert "`rltrefactor perf scaffold eng/runner.py::Runner.forward`" in markdown
    assert "Runner.step" not in markdown.split("#### Not measured")[1]


def test_what_was_reached_is_an_input_and_counts_for_the_enclosing_function(repo):
    change = collect_changes(str(repo.path), diff="main")
    classify = classifier(Config())
    nothing = [f.qualname for f in not_measured(change, frozenset(), classify)]
    assert nothing == ["Runner.step", "Runner.forward", "helper"]
    nested = {"eng/runner.py::Runner.forward.<locals>.inner", "eng/runner.py::Runner.step"}
    assert [f.qualname for f in not_measured(change, nested, classify)] == ["helper"]
    elsewhere = {"eng/other.py::helper", "eng/runner.py::Runner.forwarded"}  # another file; a name that only starts alike
    assert [f.qualname for f in not_measured(change, elsewhere, classify)] == nothing


def test_declared_cold_functions_are_not_listed(repo):
    change = collect_changes(str(repo.path), diff="main")
    cold = Config(cold_functions=("forward",))
    assert [f.qualname for f in not_measured(change, frozenset(), classifier(cold))] == ["Runner.step", "helper"]
