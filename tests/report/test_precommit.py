"""The pre-commit integration, run through the real ``pre-commit`` tool.

The hook manifest is checked with pre-commit's own schema. The end-to-end test runs
``git commit`` in a throwaway repository whose ``.pre-commit-config.yaml`` is the
README's snippet, byte for byte: ``repo: local`` hooks with ``language: system``
calling ``rltrefactor`` on ``PATH`` (here a shim that runs this checkout).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

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


def readme_snippet() -> str:
    """The ``.pre-commit-config.yaml`` the README tells users to write."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("- **pre-commit**", 1)[1]
    block = re.search(r"```yaml\n(.*?)\n *```", section, re.S)
    assert block, "README: no yaml block in the pre-commit item"
    return textwrap.dedent(block.group(1)) + "\n"


def test_readme_snippet_declares_the_manifest_hooks():
    yaml = pytest.importorskip("yaml")
    (local,) = yaml.safe_load(readme_snippet())["repos"]
    assert local["repo"] == "local"
    manifest = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    for hook in local["hooks"]:
        shipped = {k: v for k, v in manifest[hook["id"]].items() if k not in ("description", "language")}
        assert {k: v for k, v in hook.items() if k != "language"} == shipped


def _run(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _cli_shim(directory: Path) -> Path:
    """An ``rltrefactor`` executable that runs this checkout's sources."""
    directory.mkdir()
    shim = directory / "rltrefactor"
    shim.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT / "src"}" exec "{sys.executable}" -m rltrefactor "$@"\n')
    shim.chmod(0o755)
    return directory


@pytest.fixture
def hooked_repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    pytest.importorskip("pre_commit")
    if shutil.which("git") is None:
        pytest.skip("needs git")
    repo = tmp_path / "engine"
    repo.mkdir()
    path = f"{_cli_shim(tmp_path / 'bin')}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "GIT_CONFIG_NOSYSTEM": "1",
           "HOME": str(tmp_path), "PATH": path, "NO_COLOR": "1",
           "RLTREFACTOR_CACHE_DIR": str(tmp_path / "cache")}
    (repo / ".pre-commit-config.yaml").write_text(readme_snippet())
    (repo / "model_executor").mkdir()
    (repo / "model_executor" / "__init__.py").write_text("")
    for args in (
        ("git", "init", "-q", "-b", "main"),
        ("git", "config", "user.email", "dev@example.com"),
        ("git", "config", "user.name", "Dev"),
        ("git", "add", "."),
        ("git", "commit", "-q", "--no-verify", "-m", "init"),
        (sys.executable, "-m", "pre_commit", "install"),
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
    # What to do about it: the suppression comment, and how to commit once without the hook.
    assert ("commit blocked by 1 finding: fix it, or keep it with a reason at the end of its line: "
            "# rltrefactor: ignore[host-sync-in-hot-path] <why it is not adopted>; "
            "to commit once without the review: git commit --no-verify") in output


def test_a_file_the_review_cannot_read_blocks_the_commit_unless_the_project_says_warn(hooked_repo):
    repo, env = hooked_repo
    (repo / "model_executor" / "x.py").write_bytes(b"x = 1\n\0y = 2\n")  # NUL bytes: git calls it binary
    assert _run(repo, env, "git", "add", "model_executor/x.py").returncode == 0
    proc = _run(repo, env, "git", "commit", "-m", "change")
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and _head_count(repo, env) == 1, output
    assert "error model_executor/x.py: binary content (a NUL byte at byte 6); not reviewed" in output
    assert "commit blocked: 1 staged file could not be reviewed (model_executor/x.py;" in output
    (repo / "pyproject.toml").write_text('[tool.rltrefactor]\nunreviewable = "warn"\n')
    assert _run(repo, env, "git", "add", "pyproject.toml").returncode == 0
    proc = _run(repo, env, "git", "commit", "-m", "change")
    assert proc.returncode == 0 and _head_count(repo, env) == 2, proc.stdout + proc.stderr


def test_clean_change_is_committed(hooked_repo):
    repo, env = hooked_repo
    proc = _commit(repo, env, CLEAN)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _head_count(repo, env) == 2


def test_the_adoption_section_shows_a_valid_remote_hook_beside_an_existing_one(tmp_path):
    clientlib = pytest.importorskip("pre_commit.clientlib")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use it in your repository\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```yaml\n(.*?)```", section, re.S)
    config = tmp_path / ".pre-commit-config.yaml"
    config.write_text(block)
    repos = clientlib.load_config(str(config))["repos"]
    assert len(repos) == 2  # the project's own hook stays, rltrefactor's comes beside it
    ours = repos[1]
    assert re.fullmatch(r"[0-9a-f]{40}", ours["rev"])  # no release tags: a commit SHA
    manifest = {h["id"] for h in clientlib.load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))}
    assert {hook["id"] for hook in ours["hooks"]} <= manifest
    assert "pre-commit install -c .pre-commit-rltrefactor.yaml" in section
