"""The README's demo, end to end: one finding per planted defect, none for the refactor."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]
DEFECTS_MD = ROOT / "examples" / "demo_prs" / "defects.md"
_ROW = re.compile(r"^\| \((?P<tag>[a-e]′?)\) \| (?P<area>[a-z-]+) \| (?P<path>[\w/.]+) \| (?P<line>\d+) \|", re.M)


def _demo_repo(tmp_path: Path, patch: str | None) -> Path:
    repo = tmp_path / "loopy-engine"
    shutil.copytree(ROOT / "examples" / "demo_engine", repo, ignore=shutil.ignore_patterns("__pycache__"))
    git = ["git", "-C", str(repo), "-c", "user.name=demo", "-c", "user.email=demo@example.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    if patch:
        subprocess.run([*git, "checkout", "-q", "-b", "feature"], check=True)
        subprocess.run([*git, "apply", str(ROOT / "examples" / "demo_prs" / f"{patch}.patch")], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", patch], check=True)
    return repo


def test_defect_pr_gets_one_finding_per_planted_line(tmp_path, cli):
    planted = {(m["path"], int(m["line"])): m["area"] for m in _ROW.finditer(DEFECTS_MD.read_text())}
    assert len(planted) == 6  # five defects, (e) at its call and at its definition
    result = cli("review", "--diff", "main", "--format", "json", cwd=_demo_repo(tmp_path, "defects"))
    assert result.code == 1, result.err
    found = [(f["path"], f["line"], f["area"]) for f in result.json()["findings"]]
    assert sorted((path, line) for path, line, _ in found) == sorted(planted)
    assert all(planted[(path, line)] == area for path, line, area in found)


def test_refactor_pr_gets_no_finding(tmp_path, cli):
    result = cli("review", "--diff", "main", "--format", "json", cwd=_demo_repo(tmp_path, "refactor"))
    assert result.code == 0 and result.json()["findings"] == []


def test_demo_engine_is_clean_on_its_own(tmp_path, cli):
    repo = _demo_repo(tmp_path, None)
    result = cli("review", "loopy", "--format", "json", cwd=repo)
    assert result.code == 0 and result.json()["findings"] == [], result.out


@pytest.mark.parametrize("fmt", ["sarif", "github", "markdown"])
def test_every_format_renders_the_defect_pr(tmp_path, fmt, cli):
    result = cli("review", "--diff", "main", "--format", fmt, cwd=_demo_repo(tmp_path, "defects"))
    assert result.code == 1 and "host-sync-in-hot-path" in result.out
