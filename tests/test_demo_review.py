"""The README's demo, end to end: one finding per planted defect, none for the refactor."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from demo_defects import planted

ROOT = Path(__file__).resolve().parents[1]
DEFECTS = planted()


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
    planted = {(d.path, d.line): d.area for d in DEFECTS.values()}
    assert len(planted) == 5
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
    findings = result.json()["findings"]
    assert result.code == 0 and [f for f in findings if not f["suppressed"]] == [], result.out
    # The step's one device-to-host read is expected, and says why where it stands.
    assert [(f["path"], f["rule"]) for f in findings] == [("loopy/engine.py", "host-sync-in-hot-path")]
    assert "the scheduler needs the tokens" in findings[0]["disposition"]


def test_sarif_of_the_defect_pr_is_valid_and_complete(tmp_path, cli):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "tests" / "vendor" / "sarif-2.1.0.json").read_text())
    result = cli("review", "--diff", "main", "--format", "sarif", cwd=_demo_repo(tmp_path, "defects"))
    document = json.loads(result.out)
    jsonschema.validate(document, schema)
    results = document["runs"][0]["results"]
    assert len(results) == 5 and all(r["partialFingerprints"] for r in results)


def test_github_annotations_of_the_defect_pr(tmp_path, cli):
    result = cli("review", "--diff", "main", "--format", "github", cwd=_demo_repo(tmp_path, "defects"))
    lines = result.out.strip().splitlines()
    assert len(lines) == 5
    assert all(re.match(r"^::(error|warning|notice) file=loopy/[\w/]+\.py,line=\d+,", line) for line in lines)


def test_markdown_summary_links_lines_at_the_head_sha(tmp_path, cli):
    repo = _demo_repo(tmp_path, "defects")
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", "git@github.com:acme/loopy.git"], check=True)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    result = cli("review", "--diff", "main", "--format", "markdown", "--docs-url", "https://docs.test/rules.md", cwd=repo)
    links = re.findall(r"https://github\.com/acme/loopy/blob/([0-9a-f]{40})/([\w/.]+)#L(\d+)", result.out)
    assert {(sha, path, int(line)) for sha, path, line in links} == {(head, d.path, d.line) for d in DEFECTS.values()}
    assert "(https://docs.test/rules.md#host-sync-in-hot-path)" in result.out
    # The checklist: manual rules of the findings' areas, and loop semantics (a looped engine).
    checklist = result.out.split("### Manual checklist", 1)[1]
    assert "per-depth-kv-validity" in checklist and "staging-buffer-not-persistent" in checklist
    assert "duplicated-computation-diverging-state" not in checklist and "partial-failure-leaves-state" not in checklist
