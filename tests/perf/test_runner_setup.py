"""The perf hook on a repository laid out as real engines are: its package under ``src/``,
a module importing ``flash_attn`` at the top (absent here), and the caller's environment
holding a secret. Measured once, through the API (``perf-stubs`` and ``perf-env`` read
from pyproject.toml), with micro-checks and ``--tests``.
"""

from __future__ import annotations

import pytest

from rltrefactor.api import MeasureRequest, PerfRequest, measure
from rltrefactor.perf.sides import run_side, run_tests_side

pytest.importorskip("torch")

PYPROJECT = """\
[project]
name = "eng"

[tool.setuptools.packages.find]
where = ["src"]

[tool.rltrefactor]
perf-stubs = ["flash_attn"]
perf-env = ["MYAPP_*"]
"""

ATTENTION = """\
import flash_attn
import torch
from flash_attn import flash_attn_func


def attend(x):
    return torch.softmax(x, -1)


def fused(x):
    return flash_attn_func(x, x, x)
"""

CHECKS = """\
import os

import torch
from rltrefactor.perf import micro_check
from eng.attention import attend, fused


@micro_check
def attention(device):
    x = torch.ones(2, 4, device=device)
    return lambda: attend(x)


@micro_check
def flash(device):
    x = torch.ones(2, 4, device=device)
    return lambda: fused(x)


@micro_check
def environment(device):
    seen = {name: os.environ.get(name) for name in ("MY_SECRET_TOKEN", "MYAPP_REGION")}
    raise RuntimeError(f"saw {seen}")
"""

TESTS = """\
import os

import torch
from eng.attention import attend


def test_attend_sees_the_kept_variable_and_no_secret():
    attend(torch.ones(2, 4))
    seen = {name: os.environ.get(name) for name in ("MY_SECRET_TOKEN", "MYAPP_REGION")}
    assert seen == {"MY_SECRET_TOKEN": None, "MYAPP_REGION": "eu-west-1"}, seen
"""

HEAD = ATTENTION.replace("    return torch.softmax(x, -1)\n",
                         "    scratch = torch.zeros(2, 4, device=x.device)\n    return torch.softmax(x + scratch, -1)\n")
TEST_ID = "tests/test_attention.py::test_attend_sees_the_kept_variable_and_no_secret"


@pytest.fixture(scope="module")
def repo(make_repo):
    repo = make_repo("src-layout")
    repo.write("pyproject.toml", PYPROJECT)
    repo.write("src/eng/__init__.py", "")
    repo.write("src/eng/attention.py", ATTENTION)
    repo.write("perf_hooks/checks.py", CHECKS)
    repo.write("tests/test_attention.py", TESTS)
    repo.commit("base")
    repo.write("src/eng/attention.py", HEAD)
    return repo


@pytest.fixture(scope="module")
def summary(repo):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MY_SECRET_TOKEN", "do-not-leak")
        patch.setenv("MYAPP_REGION", "eu-west-1")
        request = PerfRequest(device="cpu", tests=("tests",), use_cache=False)
        return measure(MeasureRequest(repo=str(repo.path), diff="main", perf=request)).summary


def _head_errors(summary) -> dict[str, tuple[str, int | None, str]]:
    return {e.message.split(" failed:")[0]: (e.path, e.line, e.message) for e in summary.errors}


def test_a_check_of_a_src_layout_package_importing_a_stubbed_module_is_measured(summary):
    assert "perf_hooks.checks:attention" in summary.checks
    added = [(d.check, d.path, d.line, d.category) for d in summary.deltas if d.added]
    assert ("perf_hooks.checks:attention", "src/eng/attention.py", 7, "alloc") in added


def test_calling_the_stubbed_module_fails_its_check_naming_the_module_and_line(summary):
    path, line, message = _head_errors(summary)["head: micro-check perf_hooks.checks:flash"]
    assert (path, line) == ("src/eng/attention.py", 12)
    assert message.endswith(
        "failed: StubbedModuleError: flash_attn.flash_attn_func was called, but flash_attn is an import stub here "
        "(perf-stubs under [tool.rltrefactor]); run this code where flash_attn is installed, "
        "or keep it out of the check")


def test_a_check_sees_no_secret_of_the_caller_and_the_variable_perf_env_keeps(summary):
    _, _, message = _head_errors(summary)["head: micro-check perf_hooks.checks:environment"]
    assert message.endswith("failed: RuntimeError: saw {'MY_SECRET_TOKEN': None, 'MYAPP_REGION': 'eu-west-1'}")


def test_a_test_run_through_tests_sees_the_same_environment_and_imports_from_src(summary):
    assert summary.tests is not None
    assert summary.tests.selected == (TEST_ID,) and dict(summary.tests.left_out) == {}
    assert TEST_ID in summary.checks  # passed at base and head: the assertion on what it saw held on both


def test_without_perf_stubs_the_check_file_cannot_be_imported_and_the_error_says_why(repo):
    side = run_side(str(repo.path), "perf_hooks", ["--device", "cpu"], checks=None, timeout=60)
    assert [(e.path, e.line, e.message) for e in side.errors] == [(
        "perf_hooks/checks.py", 5,
        "cannot import micro-check file: ModuleNotFoundError: No module named 'flash_attn' "
        "(imported by src/eng/attention.py:1); install flash_attn where the perf hook runs, or name it in "
        "perf-stubs under [tool.rltrefactor] to import a stub in its place",
    )]
    assert side.results == {}


def test_without_perf_stubs_a_test_file_that_cannot_be_imported_is_listed_not_skipped_quietly(repo):
    side = run_tests_side(str(repo.path), ["--map", "--touched=src/eng/attention.py::attend"], ["tests"],
                          tests=None, timeout=60)
    assert [(e.path, e.line, e.message) for e in side.errors] == [(
        "tests/test_attention.py", None,
        "test tests/test_attention.py failed: cannot be collected: ModuleNotFoundError: No module named "
        "'flash_attn'; fix its imports (a module this machine lacks can be named in perf-stubs under "
        "[tool.rltrefactor])",
    )]
    assert side.results == {}
