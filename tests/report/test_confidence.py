"""Text and Markdown reports say how sure each finding is, beside its severity."""

from __future__ import annotations

from rltrefactor.report.markdown import render_markdown
from rltrefactor.report.text import render_text


def test_text_shows_each_findings_confidence(rec):
    sure = rec.finding(confidence="high")
    lowered = rec.finding(line=20, severity="warning", confidence="medium", fingerprint="fp-2")
    text = render_text(rec.result(sure, lowered), color=False)
    assert "model_executor/runner.py:10:9  error (high confidence)  host-sync-in-hot-path" in text
    assert "model_executor/runner.py:20:9  warning (medium confidence)  host-sync-in-hot-path" in text


def test_a_finding_without_a_confidence_shows_its_severity_alone(rec):
    text = render_text(rec.result(rec.finding()), color=False)
    assert "model_executor/runner.py:10:9  error  host-sync-in-hot-path" in text


def test_markdown_severity_cell_carries_the_confidence(rec):
    text = render_markdown(rec.result(rec.finding(severity="warning", confidence="medium")))
    row = next(line for line in text.splitlines() if "host-sync-in-hot-path" in line and line.startswith("|"))
    assert row.startswith("| warning · medium confidence | ")
