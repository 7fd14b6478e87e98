"""File names that are not UTF-8 (git allows any bytes): every report stays valid UTF-8
and writes such a name as git quotes it; valid UTF-8 names are written as they are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rltrefactor.report.json import render_json
from rltrefactor.report.markdown import render_markdown
from rltrefactor.report.paths import escape_document, escape_undecodable, quote_path
from rltrefactor.report.text import render_text
from rltrefactor.types import FileError

ROOT = Path(__file__).resolve().parents[2]
CLEAN = "import torch\n\n\ndef forward(x):\n    return x * 2\n"
SYNCING = "import torch\n\n\ndef forward(x):\n    y = x * 2\n    return y.sum().item()\n"
LATIN1 = os.fsdecode(b"caf\xe9.py")  # the byte 0xE9 alone is not UTF-8
LATIN1_QUOTED = '"caf\\351.py"'  # as `git -c core.quotePath=true diff --name-only` prints it
UTF8 = "café.py"  # valid UTF-8: written as it is


def _review(repo_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """The real command line, its output kept as bytes; stdout encodes strictly, so a
    name that cannot be written as UTF-8 fails the run instead of passing through."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8:strict",
           "RLTREFACTOR_CACHE_DIR": str(repo_path.parent / ".rltrefactor-test-cache")}
    return subprocess.run([sys.executable, "-m", "rltrefactor", "review", *args], cwd=repo_path,
                          capture_output=True, env=env, timeout=120)


@pytest.fixture
def named(repo):
    """A commit that adds the same host sync in a Latin-1 named and a UTF-8 named file."""
    repo.write("base.py", CLEAN)
    repo.commit("base")
    repo.write(LATIN1, SYNCING)
    repo.write(UTF8, SYNCING)
    repo.commit("add")
    return repo


def _decoded(proc: subprocess.CompletedProcess[bytes]) -> str:
    assert proc.returncode == 1, proc.stderr.decode("utf-8", "replace")  # findings, no crash
    assert proc.stderr == b""
    return proc.stdout.decode("utf-8")  # raises on any byte that is not UTF-8


def test_json_gives_the_name_git_quoted_and_the_utf8_name_as_it_is(named):
    document = json.loads(_decoded(_review(named.path, "--diff", "HEAD~1..HEAD", "--format", "json")))
    found = sorted((f["path"], f["rule"], f["line"]) for f in document["findings"])
    assert found == [(LATIN1_QUOTED, "host-sync-in-hot-path", 6), (UTF8, "host-sync-in-hot-path", 6)]
    assert sorted(document["reviewed"]["files"]) == [LATIN1_QUOTED, UTF8]
    assert {f["path"] for f in document["changed_functions"]} == {LATIN1_QUOTED, UTF8}


def test_sarif_points_at_the_names_bytes_and_describes_only_the_quoted_name(named):
    log = json.loads(_decoded(_review(named.path, "--diff", "HEAD~1..HEAD", "--format", "sarif")))
    locations = [r["locations"][0]["physicalLocation"] for r in log["runs"][0]["results"]]
    artifacts = sorted((p["artifactLocation"]["uri"], p["artifactLocation"].get("description")) for p in locations)
    assert artifacts == [("caf%C3%A9.py", None), ("caf%E9.py", {"text": LATIN1_QUOTED})]
    # The blob was read through the raw name: the snippet is the file's own line.
    assert {p["region"]["snippet"]["text"].strip() for p in locations} == {"return y.sum().item()"}


@pytest.mark.parametrize(("format_", "latin1", "utf8"), [
    ("text", f"  {LATIN1_QUOTED}:6:12  warning", f"  {UTF8}:6:12  warning"),
    ("github", f"::warning file={LATIN1_QUOTED},line=6,", f"::warning file={UTF8},line=6,"),
    ("markdown", f"`{LATIN1_QUOTED}:6`", f"`{UTF8}:6`"),
])
def test_line_formats_write_the_name_git_quoted_and_the_utf8_name_as_it_is(named, format_, latin1, utf8):
    lines = _decoded(_review(named.path, "--diff", "HEAD~1..HEAD", "--format", format_)).splitlines()
    assert [line for line in lines if latin1 in line]
    assert [line for line in lines if utf8 in line]


def test_markdown_permalink_encodes_the_names_own_bytes(named):
    named.git("remote", "add", "origin", "git@github.com:owner/engine.git")
    head = named.git("rev-parse", "HEAD").strip()
    out = _decoded(_review(named.path, "--diff", "HEAD~1..HEAD", "--format", "markdown"))
    assert f"[`{LATIN1_QUOTED}:6`](https://github.com/owner/engine/blob/{head}/caf%E9.py#L6)" in out
    assert f"[`{UTF8}:6`](https://github.com/owner/engine/blob/{head}/caf%C3%A9.py#L6)" in out


def test_a_report_written_to_a_file_is_utf8(named, tmp_path):
    target = tmp_path / "report.json"
    _decoded(_review(named.path, "--diff", "HEAD~1..HEAD", "--format", "json", "--output", str(target)))
    document = json.loads(target.read_bytes().decode("utf-8"))
    assert LATIN1_QUOTED in {f["path"] for f in document["findings"]}


def test_a_full_scan_reviews_the_file_and_reads_its_cached_result_back(named):
    for _ in range(2):  # the second run answers from the result cache
        document = json.loads(_decoded(_review(named.path, ".", "--format", "json", "--show-unknown-frequency")))
        assert sorted(f["path"] for f in document["findings"]) == [LATIN1_QUOTED, UTF8]


def test_quoting_is_gits_own_for_every_kind_of_byte(repo):
    # A tab, a backslash, a double quote, valid UTF-8, a byte that is not UTF-8 and DEL.
    raw = b'a\tb\\"c\xc3\xa9\xe9\x7f.py'
    (repo.path / os.fsdecode(raw)).write_text("x = 1\n")
    repo.git("add", "-A")
    printed = subprocess.run(["git", "-C", str(repo.path), "-c", "core.quotePath=true", "ls-files"],
                             capture_output=True, check=True).stdout.decode("ascii").strip()
    assert quote_path(os.fsdecode(raw)) == printed == '"a\\tb\\\\\\"c\\303\\251\\351\\177.py"'


@pytest.mark.parametrize("name", ["model_executor/runner.py", UTF8, "dir with space/a#b.py", 'say "hi".py'])
def test_a_valid_utf8_name_is_left_as_it_is(name):
    assert quote_path(name) == name


def test_a_name_inside_a_message_gets_its_bytes_escaped_without_quotes():
    message = f"called from {LATIN1}::forward"
    assert escape_undecodable(message) == "called from caf\\351.py::forward"
    assert escape_undecodable(f"called from {UTF8}::forward") == f"called from {UTF8}::forward"
    assert escape_document({"evidence": [message], LATIN1: 3}) == {
        "evidence": ["called from caf\\351.py::forward"], "caf\\351.py": 3}


def test_reports_escape_a_name_named_in_an_error_message(rec):
    error = FileError(LATIN1, f"{LATIN1}: not valid UTF-8 at line 2")
    res = rec.result(errors=(error,), files_unreviewable=(LATIN1,))
    document = json.loads(render_json(res).encode("utf-8"))
    assert document["errors"] == [
        {"path": LATIN1_QUOTED, "line": None, "message": "caf\\351.py: not valid UTF-8 at line 2"}]
    assert document["reviewed"]["unreviewable"] == [LATIN1_QUOTED]
    assert f"- `{LATIN1_QUOTED}`: caf\\351.py: not valid UTF-8" in render_markdown(res)
    assert f"error {LATIN1_QUOTED}: caf\\351.py: not valid UTF-8" in render_text(res)
