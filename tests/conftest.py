"""Shared fixtures: real git repositories built in temporary directories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gitrepo import GitRepo  # noqa: E402


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> dict:
        return json.loads(self.out)


def run_cli(*args: str, cwd: Path, stdin: str | None = None, env: dict | None = None) -> Run:
    """The real command line in a subprocess, as a user runs it."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1", **(env or {})}
    environment.setdefault("RLTREFACTOR_CACHE_DIR", str(cwd.parent / ".rltrefactor-test-cache"))
    proc = subprocess.run(
        [sys.executable, "-m", "rltrefactor", *args],
        cwd=cwd, input=stdin, capture_output=True, text=True, env=environment, timeout=120,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def cli():
    return run_cli



@pytest.fixture
def review_added(repo: GitRepo):
    """Reviews the change that adds files over a committed base (a README unless given):
    the findings of ``review --diff main --format json``."""

    def review(added: dict[str, str], base: dict[str, str] | None = None) -> list[dict]:
        for path, text in (base or {"README.md": "engine\n"}).items():
            repo.write(path, text)
        repo.commit("base")
        for path, text in added.items():
            repo.write(path, text)
        run = run_cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
        assert run.code in (0, 1), run.err
        return run.json()["findings"]
    return review


@pytest.fixture
def review_new_file(repo: GitRepo):
    """Reviews the change that fills a path, committed empty, with a text: the rule of
    each finding, by line (the lines a finding also stands for included)."""

    def review(path: str, text: str) -> dict[int, str]:
        repo.write(path, "")
        repo.commit("base")
        repo.write(path, text)
        run = run_cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
        assert run.code in (0, 1), run.err
        return {line: f["rule"] for f in run.json()["findings"] for line in (f["line"], *f.get("also_at", []))}
    return review
