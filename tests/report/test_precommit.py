"""The pre-commit integration, run through the real ``pre-commit`` tool.

The hook manifest is checked with pre-commit's own schema. The end-to-end test runs
``git commit`` in a throwaway repository with the hook installed; its config is a
``repo: local`` hook with ``language: system`` calling the installed ``rltrefactor``
(a ``language: python`` hook would build an environment from the network).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PRE_COMMIT = BIN / "pre-commit"
RLTREFACTOR = BIN / "rltrefactor"

DEFECT = '''\
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        scale = x.abs().max().item()
        return x / scale
'''
CLEAN = '''\
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2
'''


def test_manifest_is_valid_for_pre_commit():
    clientlib = pytest.importorskip("pre_commit.clientlib")
    hooks = {h["id"]: h for h in clientlib.load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))}
    assert set(hooks) == {"rltrefactor", "rltrefactor-perf"}
    review, perf = hooks["rltrefactor"], hooks["rltrefactor-perf"]
    assert review["entry"] == "rltrefactor review --staged"
    assert review["pass_filenames"] is False and review["types"] == ["python"]
    assert perf["entry"] == "rltrefactor perf --diff HEAD"
    assert perf["stages"] == ["manual"] and perf["pass_filenames"] is False


def _run(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def hooked_repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    if not (PRE_COMMIT.exists() and RLTREFACTOR.exists()) or shutil.which("git") is None:
        pytest.skip(f"needs git, {PRE_COMMIT} and the installed CLI at {RLTREFACTOR}")
    repo = tmp_path / "engine"
    repo.mkdir()
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "GIT_CONFIG_NOSYSTEM": "1",
           "HOME": str(tmp_path)}
    (repo / ".pre-commit-config.yaml").write_text(
        "repos:\n"
        "  - repo: local\n"
        "    hooks:\n"
        "      - id: rltrefactor\n"
        "        name: rltrefactor review\n"
        f"        entry: {RLTREFACTOR} review --staged\n"
        "        language: system\n"
        "        pass_filenames: false\n"
        "        types: [python]\n"
    )
    (repo / "model_executor").mkdir()
    (repo / "model_executor" / "__init__.py").write_text("")
    for args in (
        ("git", "init", "-q", "-b", "main"),
        ("git", "config", "user.email", "dev@example.com"),
        ("git", "config", "user.name", "Dev"),
        ("git", "add", "."),
        ("git", "commit", "-q", "--no-verify", "-m", "init"),
        (str(PRE_COMMIT), "install"),
    ):
        proc = _run(repo, env, *args)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return repo, env


def _commit(repo: Path, env: dict[str, str], source: str) -> subprocess.CompletedProcess[str]:
    (repo / "model_executor" / "x.py").write_text(source)
    assert _run(repo, env, "git", "add", "model_executor/x.py").returncode == 0
    return _run(repo, env, "git", "commit", "-m", "change")


def _head_count(repo: Path, env: dict[str, str]) -> int:
    return int(_run(repo, env, "git", "rev-list", "--count", "HEAD").stdout)


def test_staged_defect_blocks_the_commit(hooked_repo):
    repo, env = hooked_repo
    proc = _commit(repo, env, DEFECT)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert _head_count(repo, env) == 1  # nothing was committed
    assert "rltrefactor review" in output and "Failed" in output
    assert "model_executor/x.py:6" in output
    assert "host-sync-in-hot-path" in output


def test_clean_change_is_committed(hooked_repo):
    repo, env = hooked_repo
    proc = _commit(repo, env, CLEAN)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _head_count(repo, env) == 2
