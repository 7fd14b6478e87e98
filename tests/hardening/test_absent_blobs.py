"""A change whose object store lacks some blobs (a partial clone whose remote cannot be
reached, a pruned repository): the files git can give are reviewed, an absent Python
file is one entry under errors, and an absent file the review does not read is skipped."""

from __future__ import annotations

import os
import shutil

HOT = "model_executor/runner.py"
CLEAN = "import torch\n\n\ndef forward(x):\n    return x * 2\n"
SYNCING = "import torch\n\n\ndef forward(x):\n    y = x * 2\n    return y.sum().item()\n"
OTHER = "model_executor/other.py"


def _range(repo) -> str:
    repo.write(HOT, CLEAN)
    repo.write(OTHER, "x = 1\n")
    repo.write("assets/logo.jpg", b"\xff\xd8\xff\xe0 first")
    base = repo.commit("base")
    repo.write(HOT, SYNCING)
    repo.write(OTHER, "x = 2\n")
    repo.write("assets/logo.jpg", b"\xff\xd8\xff\xe0 second")
    return f"{base}..{repo.commit('head')}"


def _drop_blob(repo, rev_path: str) -> str:
    """Delete the loose object of ``rev:path`` from the store; its id."""
    oid = repo.git("rev-parse", rev_path).strip()
    os.unlink(repo.path / ".git" / "objects" / oid[:2] / oid[2:])
    return oid


def test_an_absent_image_blob_is_skipped_and_the_range_reviewed(repo, cli):
    spec = _range(repo)
    _drop_blob(repo, "HEAD:assets/logo.jpg")
    result = cli("review", "--diff", spec, "--format", "json", cwd=repo.path)
    assert result.code == 1, result.err  # the finding, not git's message
    document = result.json()
    assert [(f["rule"], f["path"], f["line"]) for f in document["findings"]] == [("host-sync-in-hot-path", HOT, 6)]
    assert sorted(document["reviewed"]["files"]) == sorted([HOT, OTHER]) and document["errors"] == []


def test_an_absent_python_blob_is_one_error_and_the_rest_is_reviewed(repo, cli):
    spec = _range(repo)
    oid = _drop_blob(repo, f"HEAD~1:{OTHER}")  # its base side: the diff cannot be made
    result = cli("review", "--diff", spec, cwd=repo.path)
    assert result.code == 1, result.err
    errors = [line for line in result.out.splitlines() if line.startswith("error ")]
    assert errors == [f"error {OTHER}: blob {oid[:10]} is absent from the object store (a partial clone whose "
                      "remote cannot be reached, or a pruned repository); not reviewed; fetch it (git fetch) and "
                      "review again"]
    assert f"{HOT}:6:12" in result.out
    assert "1 file reviewed · 1 file could not be fully reviewed" in result.out.splitlines()[-1]
    document = cli("review", "--diff", spec, "--format", "json", cwd=repo.path).json()
    assert document["reviewed"]["unreviewable"] == [OTHER]


def test_a_partial_clone_without_its_remote_reviews_what_it_holds(repo, cli, tmp_path):
    spec = _range(repo)
    repo.git("config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "clone"
    repo.git("clone", "-q", "--filter=blob:none", f"file://{repo.path}", str(clone))
    shutil.move(repo.path, tmp_path / "remote-gone")  # every lazy fetch now fails
    # The clone checked out the head: its blobs are there, the base's are not.
    document = cli("review", "--diff", spec, "--format", "json", cwd=clone).json()
    assert sorted(e["path"] for e in document["errors"]) == sorted([HOT, OTHER])
    assert all("absent from the object store" in e["message"] for e in document["errors"])
    # Reviewed as a whole at the head, which the clone holds, the file is read all the same.
    head_only = cli("review", HOT, "--format", "json", "--show-unknown-frequency", cwd=clone).json()
    assert [(f["rule"], f["line"]) for f in head_only["findings"]] == [("host-sync-in-hot-path", 6)]


def test_a_staged_change_over_an_absent_base_blob_is_reviewed(repo, cli):
    _range(repo)
    _drop_blob(repo, "HEAD:assets/logo.jpg")
    repo.write("assets/logo.jpg", b"\xff\xd8\xff\xe0 third")
    repo.write("model_executor/new.py", SYNCING)
    repo.git("add", "-A")
    result = cli("review", "--staged", "--format", "json", cwd=repo.path)
    assert result.code == 1, result.err
    assert [(f["path"], f["line"]) for f in result.json()["findings"]] == [("model_executor/new.py", 6)]
