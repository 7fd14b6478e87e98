"""The bundled demo: the looped engine, its two PR patches and their documentation.

Every revision (base, defects head, refactor head) is built as a real git repository in
a tmp dir and exercised in a fresh interpreter, because each revision has its own
``loopy`` package.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEMO_ENGINE = PROJECT_ROOT / "examples" / "demo_engine"
DEMO_PRS = PROJECT_ROOT / "examples" / "demo_prs"
PATCHES = ("defects", "refactor")
GIT_IDENTITY = ("-c", "user.name=demo", "-c", "user.email=demo@example.invalid", "-c", "commit.gpgsign=false")

# Runs inside the revision's repository root; prints one JSON object.
PROBE = r"""
import json, sys
sys.path.insert(0, ".")
import torch
from torch.overrides import TorchFunctionMode
from loopy.config import EngineConfig
from loopy.core.request import SamplingParams
from loopy.engine import LLMEngine


class CallRecorder(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.names = set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.add(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


def generate():
    engine = LLMEngine(EngineConfig(device="cpu", seed=7))
    engine.add_request("greedy", (1, 2, 3), SamplingParams(max_tokens=4))
    engine.add_request("sampled", (5, 6), SamplingParams(max_tokens=3, temperature=0.8))
    outputs, steps = {}, 0
    while engine.has_unfinished_requests() and steps < 20:
        steps += 1
        for output in engine.step():
            if output.finished:
                outputs[output.request_id] = list(output.output_token_ids)
    return outputs


def decode_step_calls():
    # The same batch as perf_hooks/demo_checks.py:decode_step.
    engine = LLMEngine(EngineConfig(device="cpu"))
    for index in range(4):
        prompt = (index + 1, index + 2, index + 3)
        temperature = 0.0 if index % 2 == 0 else 0.7
        engine.add_request(f"request-{index}", prompt, SamplingParams(max_tokens=8, temperature=temperature))
    for _ in range(3):
        engine.step()
    batch = engine.scheduler.schedule()
    with CallRecorder() as recorder:
        output = engine.model_runner.execute_model(batch)
    return sorted(recorder.names), sorted(set(output.exit_depths.tolist()))


def micro_checks():
    try:
        from rltrefactor.perf import micro_check  # noqa: F401
    except ImportError:
        return None
    import importlib.util, inspect
    spec = importlib.util.spec_from_file_location("demo_checks", "perf_hooks/demo_checks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ran = []
    for name in ("scheduler_step", "decode_step", "sampler"):
        check = inspect.unwrap(getattr(module, name))
        run = check(torch.device("cpu"))
        run()
        run()
        ran.append(name)
    return ran


names, exit_depths = decode_step_calls()
print(json.dumps({
    "first": generate(),
    "second": generate(),
    "decode_calls": names,
    "exit_depths": exit_depths,
    "micro_checks": micro_checks(),
}))
"""


def _git(repo: Path, *args: str) -> str:
    completed = subprocess.run(
        ["git", *GIT_IDENTITY, *args], cwd=repo, capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, f"git {' '.join(args)} failed: {completed.stderr}"
    return completed.stdout


def _base_repo(destination: Path) -> Path:
    shutil.copytree(DEMO_ENGINE, destination, ignore=shutil.ignore_patterns("__pycache__"))
    _git(destination, "init", "-q", "-b", "main")
    _git(destination, "add", "-A")
    _git(destination, "commit", "-q", "-m", "base")
    return destination


def _revision(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    repo = _base_repo(tmp_path_factory.mktemp(name) / "repo")
    if name != "base":
        _git(repo, "apply", str(DEMO_PRS / f"{name}.patch"))
    return repo


@pytest.fixture(scope="module")
def probes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """PROBE's result at the base and at the head of each patch."""
    search_path = [entry for entry in (os.environ.get("PYTHONPATH"), str(PROJECT_ROOT / "src")) if entry]
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(search_path), PYTHONWARNINGS="ignore")
    results = {}
    for name in ("base", *PATCHES):
        repo = _revision(tmp_path_factory, name)
        completed = subprocess.run(
            [sys.executable, "-c", PROBE], cwd=repo, env=environment,
            capture_output=True, text=True, timeout=300, check=False,
        )
        assert completed.returncode == 0, f"{name}: probe failed:\n{completed.stderr}"
        results[name] = json.loads(completed.stdout.splitlines()[-1])
    return results


@pytest.mark.parametrize("name", PATCHES)
def test_patch_applies_cleanly_to_the_demo_engine(tmp_path: Path, name: str) -> None:
    repo = _base_repo(tmp_path / "repo")
    _git(repo, "apply", "--check", str(DEMO_PRS / f"{name}.patch"))


@pytest.mark.parametrize("name", ("base", *PATCHES))
def test_engine_generates_tokens_deterministically(probes: dict[str, dict], name: str) -> None:
    result = probes[name]
    assert result["first"] == result["second"]
    assert len(result["first"]["greedy"]) == 4
    assert len(result["first"]["sampled"]) == 3
    assert all(0 <= token < 64 for tokens in result["first"].values() for token in tokens)


def test_refactor_preserves_generated_tokens(probes: dict[str, dict]) -> None:
    assert probes["refactor"]["first"] == probes["base"]["first"]


def test_decode_step_exits_at_different_depths(probes: dict[str, dict]) -> None:
    assert len(probes["base"]["exit_depths"]) > 1


@pytest.mark.parametrize("name", ("base", "refactor"))
def test_clean_decode_step_neither_syncs_nor_builds_tensors_from_lists(
    probes: dict[str, dict], name: str
) -> None:
    calls = probes[name]["decode_calls"]
    assert "item" not in calls
    assert "tensor" not in calls


def test_planted_defects_run_on_the_decode_step(probes: dict[str, dict]) -> None:
    calls = probes["defects"]["decode_calls"]
    assert "item" in calls
    assert "tensor" in calls


@pytest.mark.parametrize("name", ("base", *PATCHES))
def test_micro_checks_run_at_every_revision(probes: dict[str, dict], name: str) -> None:
    perf = pytest.importorskip("rltrefactor.perf")
    if not hasattr(perf, "micro_check"):
        pytest.skip("rltrefactor.perf has no micro_check yet")
    assert probes[name]["micro_checks"] == ["scheduler_step", "decode_step", "sampler"]


def _documented_defects() -> list[tuple[str, str, int, str]]:
    rows = []
    for line in (DEMO_PRS / "defects.md").read_text().splitlines():
        match = re.match(r"\| (\S+) \| ([a-z-]+) \| (\S+\.py) \| (\d+) \| `(.+)` \|$", line)
        if match:
            label, _area, path, number, code = match.groups()
            rows.append((label, path, int(number), code))
    return rows


def test_defects_md_lists_each_planted_defect_once() -> None:
    labels = [label for label, *_ in _documented_defects()]
    assert labels == ["(a)", "(b)", "(c)", "(d)", "(e)"]


def test_defects_md_line_numbers_point_at_added_planted_lines(tmp_path: Path) -> None:
    repo = _base_repo(tmp_path / "repo")
    _git(repo, "apply", str(DEMO_PRS / "defects.patch"))
    _git(repo, "add", "-A")
    added = _added_lines(_git(repo, "diff", "--cached", "-U0"))
    for label, path, number, code in _documented_defects():
        line = (repo / path).read_text().splitlines()[number - 1]
        assert line.strip() == code, f"{label}: {path}:{number} holds {line.strip()!r}"
        assert number in added[path], f"{label}: {path}:{number} is not added by the patch"


def _added_lines(diff: str) -> dict[str, set[int]]:
    added: dict[str, set[int]] = {}
    path, number = "", 0
    for line in diff.splitlines():
        if line.startswith("+++ b/"):
            path = line[len("+++ b/"):]
            added[path] = set()
        elif hunk := re.match(r"@@ -\S+ \+(\d+)", line):
            number = int(hunk.group(1))
        elif line.startswith("+") and not line.startswith("+++"):
            added[path].add(number)
            number += 1
    return added
