"""PR-description updates: marked section only, idempotent, atomic, loud on broken markers."""

from __future__ import annotations

import os
import stat

import pytest

from rltrefactor.errors import ConfigError
from rltrefactor.report.prbody import END, START, update_pr_body


def _write(path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def test_appends_section_when_absent_and_is_idempotent(tmp_path):
    body = _write(tmp_path / "body.md", b"Fixes the sampler.\r\n\r\nDetails here")
    update_pr_body(body, "## rltrefactor review\n\nNo applicable issue was found.\n")
    once = (tmp_path / "body.md").read_bytes()
    # The body's CRLF line endings are kept: the section is written with them too.
    assert once == (
        b"Fixes the sampler.\r\n\r\nDetails here\r\n\r\n"
        + START.encode() + b"\r\n## rltrefactor review\r\n\r\nNo applicable issue was found.\r\n" + END.encode() + b"\r\n"
    )
    update_pr_body(body, "## rltrefactor review\n\nNo applicable issue was found.\n")
    assert (tmp_path / "body.md").read_bytes() == once


def test_replaces_only_the_marked_section(tmp_path):
    before = "Intro — ünïcode\r\n\r\n"
    after = "\r\n\r\n- [x] tests\r\ntrailing without newline"
    body = _write(tmp_path / "body.md", f"{before}{START}\nold summary\n{END}{after}".encode())
    update_pr_body(body, "new summary")
    text = (tmp_path / "body.md").read_bytes().decode()
    assert text == f"{before}{START}\r\nnew summary\r\n{END}{after}"
    update_pr_body(body, "new summary")
    assert (tmp_path / "body.md").read_bytes().decode() == text


def test_missing_or_empty_file_gets_just_the_section(tmp_path):
    missing = tmp_path / "new.md"
    update_pr_body(str(missing), "s")
    assert missing.read_text() == f"{START}\ns\n{END}\n"
    empty = _write(tmp_path / "empty.md", b"")
    update_pr_body(empty, "s")
    assert (tmp_path / "empty.md").read_text() == f"{START}\ns\n{END}\n"


@pytest.mark.parametrize(
    ("content", "line", "got"),
    [
        (f"a\nb\n{START}\nsummary\n", 3, "got 1 '<!-- rltrefactor:start -->' and 0"),
        (f"a\n{END}\n", 2, "got 0 '<!-- rltrefactor:start -->' and 1"),
        (f"{END}\n{START}\n", 1, "got 1 '<!-- rltrefactor:start -->' and 1"),
        (f"x\n{START}\n{END}\n{START}\n{END}\n", 2, "got 2 '<!-- rltrefactor:start -->' and 2"),
    ],
)
def test_unbalanced_markers_are_an_error(tmp_path, content, line, got):
    body = _write(tmp_path / "body.md", content.encode())
    with pytest.raises(ConfigError) as excinfo:
        update_pr_body(body, "summary")
    message = str(excinfo.value)
    assert message.startswith(f"{body}:{line}: PR body: unbalanced rltrefactor markers (")
    assert got in message
    assert "\n" not in message
    assert (tmp_path / "body.md").read_bytes() == content.encode()  # left untouched


def test_non_utf8_body_is_an_error(tmp_path):
    body = _write(tmp_path / "body.md", b"\xff\xfe bad")
    with pytest.raises(ConfigError, match=r"body\.md: PR body: cannot be read as UTF-8 text"):
        update_pr_body(body, "s")


def test_write_is_atomic_and_keeps_mode(tmp_path):
    body = _write(tmp_path / "body.md", b"text\n")
    os.chmod(body, 0o640)
    update_pr_body(body, "s")
    assert stat.S_IMODE(os.stat(body).st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["body.md"]  # no temp file left behind


def test_a_body_with_lf_endings_keeps_them(tmp_path):
    body = _write(tmp_path / "body.md", b"Fixes the sampler.\n")
    update_pr_body(body, "a\r\nb\n")
    assert (tmp_path / "body.md").read_bytes() == b"Fixes the sampler.\n\n" + START.encode() + b"\na\nb\n" + END.encode() + b"\n"
