"""Hostile and broken input: one-line errors (exit 2) or recorded per-file errors."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path


HOT = "model_executor/runner.py"
SYNCING = "def forward(x):\n    return x.sum().item()\n"


def _one_line_error(result, fragment):
    assert result.code == 2, (result.out, result.err)
    assert fragment in result.err
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err


def test_shallow_clone_without_merge_base_says_how_to_fetch(repo, tmp_path, cli):
    repo.write("a.py", "a = 1\n")
    repo.commit("one")
    repo.git("checkout", "-q", "-b", "topic")
    for n in range(3):
        repo.write("a.py", f"a = {n}\n")
        repo.commit(f"topic {n}")
    repo.git("checkout", "-q", "main")
    repo.write("b.py", "b = 1\n")
    repo.commit("main moves")
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", "--no-single-branch", f"file://{repo.path}", str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", "topic"], check=True)
    _one_line_error(cli("review", "--diff", "origin/main", cwd=clone), "git fetch --unshallow")


def test_submodule_change_is_skipped_not_fatal(repo, tmp_path, cli):
    sub = tmp_path / "sub"
    sub.mkdir()
    subprocess.run(["git", "-C", str(sub), "init", "-q", "-b", "main"], check=True)
    (sub / "s.py").write_text("s = 1\n")
    subprocess.run(["git", "-C", str(sub), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(sub), "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "s"], check=True)
    repo.write(HOT, "x = 1\n")
    repo.commit("base")
    repo.git("-c", "protocol.file.allow=always", "submodule", "-q", "add", str(sub), "vendor/sub")
    repo.write(HOT, SYNCING)
    result = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path)
    assert result.code == 1, result.err
    assert result.json()["reviewed"]["files"] == [HOT]


def test_huge_file_is_reported_with_the_cap(repo, cli):
    repo.write(HOT, "x = 1\n")
    repo.commit("base")
    repo.write("model_executor/huge.py", "x = 1\n" * 400_000)
    repo.git("add", "-A")
    document = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path).json()
    assert [(e["path"], "size cap" in e["message"]) for e in document["errors"]] == [("model_executor/huge.py", True)]


def test_non_utf8_and_mixed_line_endings(repo, cli):
    repo.write(HOT, "x = 1\n")
    repo.commit("base")
    repo.write("model_executor/latin.py", b"s = '\xff'\n")
    repo.write("model_executor/mixed.py", b"def forward(x):\r\n    y = 1\n    return x.sum().item()\r\n")
    result = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path)
    document = result.json()
    assert [e["path"] for e in document["errors"]] == ["model_executor/latin.py"]
    assert [(f["path"], f["line"]) for f in document["findings"]] == [("model_executor/mixed.py", 3)]


def test_deeply_nested_code_does_not_crash(repo, cli):
    repo.write(HOT, "x = 1\n")
    repo.commit("base")
    nested = "[" * 3000 + "]" * 3000
    repo.write("model_executor/deep.py", f"def forward(x):\n    return x.sum().item(), {nested}\n")
    result = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path)
    assert result.code in (0, 1) and "Traceback" not in result.err
    assert [e["path"] for e in result.json()["errors"]] == ["model_executor/deep.py"]


def test_patch_escaping_the_repository_is_refused(repo, cli):
    repo.write(HOT, "x = 1\n")
    repo.commit("base")
    patch = "--- a/../../etc/passwd\n+++ b/../../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n"
    _one_line_error(cli("review", "--diff-file", "-", cwd=repo.path, stdin=patch), "escapes the repository")


def test_symlink_pointing_outside_is_not_read(repo, tmp_path, cli):
    outside = tmp_path / "outside.py"
    outside.write_text(SYNCING)
    repo.write(HOT, "x = 1\n")
    repo.commit("base")
    (repo.path / "model_executor" / "link.py").symlink_to(outside)
    patch = "--- /dev/null\n+++ b/model_executor/link.py\n@@ -0,0 +1,2 @@\n+def forward(x):\n+    return x.sum().item()\n"
    document = cli("review", "--diff-file", "-", "--format", "json", cwd=repo.path, stdin=patch).json()
    assert document["findings"] == []
    assert "outside the repository" in document["errors"][0]["message"]


def _snapshot(root: Path) -> tuple[str, dict[str, str]]:
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--ignored"], capture_output=True, text=True).stdout
    hashes = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = Path(dirpath) / name
            hashes[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    index = hashlib.sha256((root / ".git" / "index").read_bytes()).hexdigest()
    return status + index, hashes


def test_review_never_modifies_the_working_tree_or_index(repo, tmp_path, cli):
    repo.write(HOT, "x = 1\n")
    repo.commit("base")
    repo.write(HOT, SYNCING)
    repo.git("add", HOT)
    repo.write("model_executor/untracked.py", SYNCING)
    body = tmp_path / "body.md"
    body.write_text("Intro\n")
    before = _snapshot(repo.path)
    for args in (
        ("review", "--diff", "HEAD"),
        ("review", "--staged", "--format", "sarif"),
        ("review", "--diff", "HEAD", "--format", "markdown", "--update-pr-body", str(body)),
        ("review", "model_executor", "--format", "json", "--output", str(tmp_path / "out.json")),
        ("baseline", "--output", str(tmp_path / "baseline.json")),
    ):
        assert cli(*args, cwd=repo.path).code in (0, 1)
    assert _snapshot(repo.path) == before
    assert body.read_text().startswith("Intro\n") and "rltrefactor:start" in body.read_text()
