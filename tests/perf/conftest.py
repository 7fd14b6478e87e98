"""Fixtures for the perf hook's tests: module-scoped git repositories (runner processes
import torch, so scenarios share one repository and one measurement each)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

_IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
             "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}


class Repo:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        proc = subprocess.run(["git", "-C", str(self.path), *args], capture_output=True, text=True,
                              env={**os.environ, **_IDENTITY}, check=True)
        return proc.stdout

    def write(self, rel: str, text: str) -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def commit(self, message: str) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD").strip()


@pytest.fixture(scope="module")
def make_repo(tmp_path_factory):
    return lambda name="repo": Repo(tmp_path_factory.mktemp("perf") / name)
