"""GitHub workflow commands: one annotation per actionable finding, escaped per the toolkit."""

from __future__ import annotations

from rltrefactor.report.github import escape_data, escape_property, render_github
from rltrefactor.types import FileError


def test_error_line_format(rec):
    out = render_github(rec.result(rec.finding()))
    assert out == (
        "::error file=model_executor/runner.py,line=10,endLine=12,col=9,endColumn=19,"
        "title=host-sync-in-hot-path%3A Host synchronization on a hot path::"
        "`logits.argmax(-1).item()` blocks the host every step. Fix: Keep the argmax on the device.\n"
    )


def test_command_by_severity(rec):
    res = rec.result(
        rec.finding(line=1, severity="error"),
        rec.finding(line=2, severity="warning"),
        rec.finding(line=3, severity="info"),
    )
    commands = [line.split(" ", 1)[0] for line in render_github(res).splitlines()]
    assert commands == ["::error", "::warning", "::notice"]


def test_suppressed_and_preexisting_are_skipped(rec):
    res = rec.result(
        rec.finding(line=1, suppressed=True, disposition="why"),
        rec.finding(line=2, status="pre-existing"),
        rec.finding(line=3),
    )
    lines = render_github(res).splitlines()
    assert len(lines) == 1 and ",line=3," in lines[0]


def test_nothing_to_report_is_empty(rec):
    assert render_github(rec.result()) == ""


def test_escaping_in_data_and_properties(rec):
    f = rec.finding(
        path="engine/a,b:c.py",
        title="100% sure: bad",
        impact="line one\nline two\r 50%",
        fix="use a, then b: done",
    )
    (line,) = render_github(rec.result(f)).splitlines()
    assert "file=engine/a%2Cb%3Ac.py," in line
    assert "title=host-sync-in-hot-path%3A 100%25 sure%3A bad::" in line
    # In the message only %, CR and LF are escaped; ':' and ',' stay readable.
    assert line.endswith("::line one%0Aline two%0D 50%25 Fix: use a, then b: done")


def test_escape_helpers():
    assert escape_data("%\r\n:,") == "%25%0D%0A:,"
    assert escape_property("%\r\n:,") == "%25%0D%0A%3A%2C"
    # '%' is escaped first, so an escape sequence in the input is not reinterpreted.
    assert escape_data("%0A") == "%250A"


def test_file_errors_are_annotated(rec):
    res = rec.result(errors=(FileError("engine/broken.py", "syntax error: bad, token", line=4),))
    assert render_github(res) == (
        "::warning file=engine/broken.py,title=rltrefactor%3A file not reviewed,line=4"
        "::syntax error: bad, token\n"
    )
