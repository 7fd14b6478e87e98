"""A file the review could not read is reported by every front end, and fails a
pre-commit review (``--staged``) unless the project says ``unreviewable = "warn"``
(``tests/report/test_precommit.py`` runs it under pre-commit itself).
"Nothing to review" says whether the change is empty or the PATHs selected none of it."""

from __future__ import annotations

import json
import os

import pytest

HOT = "model_executor/runner.py"
CLEAN = "import torch\n\n\ndef forward(x):\n    return x * 2\n"
UNREADABLE = {
    "nul": b"x = 1\n\0y = 2\n",
    "syntax": b"def f(:\n    pass\n",
    "encoding": b"x = '\xff\xfe'\n",
}
BROKEN = "model_executor/broken.py"


def _stage(repo, content: bytes) -> None:
    repo.write(HOT, CLEAN)
    repo.commit("base")
    repo.write(BROKEN, content)
    repo.git("add", "-A")


@pytest.mark.parametrize("kind", sorted(UNREADABLE))
def test_a_staged_file_that_cannot_be_read_blocks_the_commit(repo, cli, kind):
    _stage(repo, UNREADABLE[kind])
    result = cli("review", "--staged", cwd=repo.path)
    assert result.code == 1, result.out + result.err
    assert f"error {BROKEN}" in result.out
    assert "1 file could not be fully reviewed (fails the run)" in result.out.splitlines()[-1]
    blocked = [line for line in result.err.splitlines() if "commit blocked" in line]
    assert len(blocked) == 1 and BROKEN in blocked[0] and 'unreviewable = "warn"' in blocked[0]


def test_a_nul_byte_file_is_listed_with_the_reason(repo, cli):
    _stage(repo, UNREADABLE["nul"])
    document = cli("review", "--staged", "--format", "json", cwd=repo.path).json()
    assert document["errors"] == [{"path": BROKEN, "line": None,
                                   "message": "binary content (a NUL byte at byte 6); not reviewed"}]
    assert document["reviewed"]["unreviewable"] == [BROKEN]
    assert document["summary"]["fail_on_unreviewable"] is True


def test_warn_lets_the_commit_through_and_still_lists_the_file(repo, cli):
    _stage(repo, UNREADABLE["nul"])
    repo.write("pyproject.toml", '[tool.rltrefactor]\nunreviewable = "warn"\n')
    result = cli("review", "--staged", cwd=repo.path)
    assert result.code == 0, result.out + result.err
    assert f"error {BROKEN}: binary content" in result.out and "commit blocked" not in result.err
    assert "1 file could not be fully reviewed ·" in result.out.splitlines()[-1]
    # The flag still fails the run: the command line beats the configuration.
    assert cli("review", "--staged", "--fail-on-unreviewable", cwd=repo.path).code == 1


def test_every_format_carries_one_entry_for_the_file(repo, cli):
    _stage(repo, UNREADABLE["nul"])
    formats = {name: cli("review", "--staged", "--format", name, cwd=repo.path) for name in
               ("text", "json", "sarif", "markdown", "github")}
    assert {name: run.code for name, run in formats.items()} == dict.fromkeys(formats, 1)
    entries = {name: [line for line in run.out.splitlines() if BROKEN in line and "binary content" in line]
               for name, run in formats.items() if name not in ("json", "sarif")}
    assert {name: len(lines) for name, lines in entries.items()} == {"text": 1, "markdown": 1, "github": 1}
    assert entries["github"][0].startswith(f"::warning file={BROKEN},")
    notifications = json.loads(formats["sarif"].out)["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert [(n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], n["message"]["text"][:14])
            for n in notifications] == [(BROKEN, "binary content")]


def test_outside_pre_commit_an_unreadable_file_fails_only_when_asked(repo, cli):
    repo.write(HOT, CLEAN)
    repo.commit("base")
    repo.write(BROKEN, UNREADABLE["nul"])
    listed = cli("review", "--diff", "HEAD", cwd=repo.path)
    assert listed.code == 0 and f"error {BROKEN}: binary content" in listed.out
    repo.write("pyproject.toml", '[tool.rltrefactor]\nunreviewable = "fail"\n')
    assert cli("review", "--diff", "HEAD", cwd=repo.path).code == 1
    # The older key says the same.
    repo.write("pyproject.toml", "[tool.rltrefactor]\nfail-on-unreviewable = true\n")
    assert cli("review", "--diff", "HEAD", cwd=repo.path).code == 1


@pytest.mark.parametrize("table, expected", [
    ('unreviewable = "maybe"',
     "rltrefactor: {path}:2: [tool.rltrefactor] unreviewable: expected one of fail, warn (got 'maybe')"),
    ("unreviewable = false",
     "rltrefactor: {path}:2: [tool.rltrefactor] unreviewable: expected one of fail, warn (got False); fix the value"),
    ('fail-on-unreviewable = true\nunreviewable = "warn"',
     'rltrefactor: {path}:3: [tool.rltrefactor] unreviewable = "warn" contradicts fail-on-unreviewable = true '
     "({path}:2); keep one of the two"),
])
def test_a_bad_unreviewable_value_is_a_one_line_error(repo, cli, table, expected):
    _stage(repo, CLEAN.encode())
    repo.write("pyproject.toml", f"[tool.rltrefactor]\n{table}\n")
    result = cli("review", "--staged", cwd=repo.path)
    assert result.code == 2 and result.out == ""
    assert result.err.strip() == expected.format(path=os.path.join(repo.path, "pyproject.toml"))


def test_nothing_to_review_says_when_the_paths_select_none_of_the_change(repo, cli):
    repo.write(HOT, CLEAN)
    repo.write("docs/notes.md", "notes\n")
    base = repo.commit("base")
    empty = cli("review", "--diff", "HEAD", cwd=repo.path)
    assert empty.out.strip() == "Nothing to review: the change is empty."
    repo.write(HOT, CLEAN + "\n\ndef other():\n    return 1\n")
    repo.write("model_executor/extra.py", "x = 1\n")
    head = repo.commit("head")
    for source in (("--diff", f"{base}..{head}"), ("--diff", base)):
        selected = cli("review", *source, "docs", cwd=repo.path)
        assert selected.code == 0, selected.err
        assert selected.out.strip() == ("Nothing to review: the paths given select none of the change's files "
                                        "(its 2 changed files lie elsewhere).")
    repo.write("docs/notes.md", "more notes\n")
    repo.git("add", "-A")
    staged = cli("review", "--staged", "model_executor", cwd=repo.path)
    assert staged.out.strip().endswith("(its 1 changed file lies elsewhere).")
    scan = cli("review", "docs", cwd=repo.path)
    assert scan.code == 0 and scan.out.strip() == "Nothing to review: the paths given hold no Python file."
