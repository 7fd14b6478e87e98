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


class GitRepo:
    """A throwaway repository with helpers to write files and commit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
        proc = subprocess.run(["git", "-C", str(self.path), *args], capture_output=True, text=True, env=env, check=True)
        return proc.stdout

    def write(self, rel: str, text: str | bytes) -> Path:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            target.write_bytes(text)
        else:
            target.write_text(text)
        return target

    def commit(self, message: str = "change") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").strip()


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
