"""ops-only and full captures on the CPU: readable artifacts with exactly the settings
each mode promises, never inside the repository, and a first capture over the limits
stops the matrix."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from rltrefactor.change.changeset import collect_changes
from rltrefactor.errors import ConfigError
from rltrefactor.perf import profiles, run_perf

pytest.importorskip("torch")

ENGINE = """\
import torch


def step(x):
    y = x @ x
    return y.sum()
"""
CHECK = """\
import torch
from rltrefactor.perf import micro_check
from eng import step


@micro_check
def matmul(device):
    x = torch.randn(8, 8, device=device)
    return lambda: step(x)
"""


@pytest.fixture(scope="module")
def change(make_repo):
    repo = make_repo()
    repo.write("eng/__init__.py", ENGINE)
    repo.write("perf_hooks/checks.py", CHECK)
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("eng/__init__.py", ENGINE.replace("    return y.sum()", "    y = y.relu()\n    return y.sum()"))
    repo.commit("feature")
    return collect_changes(str(repo.path), diff="main..feature")


@pytest.fixture(scope="module")
def captured(change, tmp_path_factory):
    return run_perf(change, profile="both", out_dir=str(tmp_path_factory.mktemp("profiles")), timeout=60)


def _trace(directory: Path) -> list[dict]:
    with gzip.open(directory / "trace.json.gz", "rt") as handle:
        return json.load(handle)["traceEvents"]


@pytest.mark.parametrize("side", ["base", "head"])
@pytest.mark.parametrize("mode", ["ops-only", "full"])
def test_each_capture_has_readable_artifacts_with_its_settings(captured, side, mode):
    assert captured.errors == ()
    folder = Path(captured.artifacts_dir) / side / "perf_hooks.checks.matmul" / mode
    meta = json.loads((folder / "meta.json").read_text())
    full = mode == "full"
    assert meta["settings"] == {"activities": ["cpu"], "record_shapes": full, "profile_memory": full,
                                "with_stack": full, "with_flops": False}
    assert meta["capture"].startswith("cpu-only") and "device" not in meta["kind"]
    assert (meta["side"], meta["window"], meta["micro_check"]) == (side, 1, "perf_hooks.checks:matmul")
    events = _trace(folder)
    shapes = [e for e in events if "Input Dims" in e.get("args", {})]
    memory = [e for e in events if e.get("name") == "[memory]"]
    stacks = [e for e in events if e.get("cat") == "python_function"]
    assert bool(shapes) == bool(memory) == bool(stacks) == full
    ops = json.loads((folder / "ops.json").read_text())
    assert any(op["name"] == "aten::mm" for op in ops["operators"])


def test_the_operator_table_compares_ops_only_counts_and_is_labelled(captured):
    rows = {r.operator: r for r in captured.profile_rows}
    assert (rows["aten::relu"].base_count, rows["aten::relu"].head_count) == (0, 1)
    assert rows["aten::mm"].base_count == rows["aten::mm"].head_count == 1
    assert {r.label for r in captured.profile_rows} == {"profiled (not a performance result)"}


def test_an_output_directory_inside_the_repository_is_refused(change):
    inside = str(Path(change.repo_root) / "traces")
    with pytest.raises(ConfigError, match=r"^.*traces: profile output directory: inside the repository"):
        run_perf(change, profile="ops-only", out_dir=inside)
    assert not Path(inside).exists()


def test_a_first_capture_over_the_limits_stops_the_matrix(change, tmp_path, monkeypatch):
    monkeypatch.setattr(profiles, "LIMITS", profiles.ProfileLimits(trace_bytes=1))
    summary = run_perf(change, profile="both", out_dir=str(tmp_path), timeout=60)
    first, stopped = summary.errors
    assert "head: ops-only capture of perf_hooks.checks:matmul: first capture over the limits (trace_bytes" in first.message
    assert stopped.message.startswith("profile matrix stopped after the first capture")
    assert summary.profile_rows == ()
    assert not (Path(summary.artifacts_dir) / "base").exists()
