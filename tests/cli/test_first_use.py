"""What a new user hits first: errors that blame the right thing, gates, and outputs."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOT = "model_executor/runner.py"
CLEAN = "import torch\n\n\ndef forward(x):\n    return x * 2\n"
SYNCING = "import torch\n\n\ndef forward(x):\n    y = x * 2\n    return y.sum().item()\n"


def _base(repo):
    repo.write(HOT, CLEAN)
    return repo.commit("base")


def _one_line(result) -> str:
    assert result.code == 2 and "Traceback" not in result.err, result.err
    (line,) = result.err.strip().splitlines()
    return line


def test_output_to_a_directory_is_a_usage_error(repo, cli, tmp_path):
    _base(repo)
    line = _one_line(cli("review", "--diff", "HEAD", "-o", str(tmp_path), cwd=repo.path))
    assert line == f"rltrefactor: {tmp_path}: cannot write: is a directory; give a file name, e.g. {tmp_path}/report.txt"


def test_output_files_respect_the_umask(repo, cli, tmp_path):
    repo.write(HOT, SYNCING)
    repo.commit("base")
    baseline, body = tmp_path / "baseline.json", tmp_path / "body.md"
    assert cli("baseline", "-o", str(baseline), cwd=repo.path).code == 0
    cli("review", "model_executor", "--format", "markdown", "--update-pr-body", str(body), cwd=repo.path)
    umask = os.umask(0)
    os.umask(umask)
    for path in (baseline, body):
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, path
    os.chmod(body, 0o600)  # an existing file keeps its mode
    cli("review", "model_executor", "--format", "markdown", "--update-pr-body", str(body), cwd=repo.path)
    assert stat.S_IMODE(body.stat().st_mode) == 0o600
