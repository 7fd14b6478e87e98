"""SARIF output: valid against the OASIS schema, and shaped for code-scanning services.

``tests/vendor/sarif-2.1.0.json`` is the OASIS SARIF 2.1.0 errata01 schema
(docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json),
vendored unmodified so validation needs no network.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from rltrefactor.report.links import tool_version
from rltrefactor.report.sarif import render_sarif
from rltrefactor.types import FileError, Span

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "vendor" / "sarif-2.1.0.json"


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _run(text: str) -> dict:
    log = json.loads(text)
    assert log["version"] == "2.1.0"
    assert len(log["runs"]) == 1
    return log["runs"][0]


def test_full_result_is_valid_sarif(rec, validator, tmp_path):
    findings = (
        rec.finding(),
        rec.finding("other-rule", line=30, severity="info", area="lifecycle", fingerprint="fp2"),
        rec.finding(line=50, fingerprint="fp3", suppressed=True, disposition="warm-up only"),
        rec.finding(line=70, fingerprint="fp4", status="pre-existing", severity="warning"),
    )
    res = rec.result(
        *findings,
        rules=(rec.rule(), rec.rule("other-rule", area="lifecycle"), rec.manual_rule("m", "lifecycle")),
        errors=(FileError("engine/broken.py", "syntax error", line=3),),
    )
    res = rec.with_change(res, repo_root=str(tmp_path))
    text = render_sarif(res, remote_url="git@github.com:acme/engine.git")
    validator.validate(json.loads(text))
    run = _run(text)
    assert run["versionControlProvenance"] == [
        {
            "repositoryUri": "https://github.com/acme/engine",
            "revisionId": rec.HEAD_SHA,
            "mappedTo": {"uriBaseId": "SRCROOT"},
            "properties": {"baseRevisionId": rec.BASE_SHA},
        }
    ]
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"].endswith("/")
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert notes[0]["message"]["text"] == "syntax error"


def test_empty_result_is_valid_sarif(rec, validator):
    text = render_sarif(rec.result(rules=()))
    validator.validate(json.loads(text))
    run = _run(text)
    assert run["results"] == []
    assert run["tool"]["driver"]["rules"] == []


def test_driver_carries_versions_and_one_descriptor_per_rule(rec):
    rules = (rec.rule("a-rule"), rec.rule("b-rule", severity="info"), rec.manual_rule("c-rule", "lifecycle"))
    run = _run(render_sarif(rec.result(rec.finding("a-rule"), rules=rules), docs_url="https://x.test/rules.md"))
    driver = run["tool"]["driver"]
    assert driver["name"] == "rltrefactor"
    assert driver["version"] == driver["semanticVersion"] == tool_version()
    assert run["properties"]["libraryVersion"] == "1.0.0"
    assert [d["id"] for d in driver["rules"]] == ["a-rule", "b-rule", "c-rule"]
    a, b, c = driver["rules"]
    assert a["helpUri"] == "https://x.test/rules.md#a-rule"
    assert a["shortDescription"]["text"] == "Host synchronization on a hot path"
    assert a["fullDescription"]["text"].startswith("`.item()` blocks the host")
    for heading in ("## Problem", "## Preferred approach", "## Reasonable exceptions"):
        assert heading in a["help"]["markdown"]
    assert "Preferred approach:" in a["help"]["text"]
    assert a["properties"]["area"] == "device-residency"
    assert a["properties"]["confidence"] == "high"
    assert a["properties"]["severity"] == "error"
    assert b["defaultConfiguration"]["level"] == "note"
    assert "manual" in c["properties"]["tags"] and "manual" not in a["properties"]["tags"]
    # A rule without results is named by its title; its texts travel only where it reports.
    assert b["shortDescription"]["text"] and "help" not in b and "fullDescription" not in b
    assert b["helpUri"] == "https://x.test/rules.md#b-rule"


def test_a_result_carries_its_own_text_not_the_rules(rec):
    finding = rec.finding(evidence="Per-step code: `execute` runs per step.", notes=("How often this runs is not visible.",),
                          confidence="medium")
    (res,) = _run(render_sarif(rec.result(finding, rules=(rec.rule(),))))["results"]
    assert res["message"]["text"] == (
        "`logits.argmax(-1).item()` blocks the host every step. Per-step code: `execute` runs per step. "
        "Fix: Keep the argmax on the device."
    )
    assert "title" not in res["properties"]  # the rule's title is its descriptor's shortDescription
    assert res["properties"]["notes"] == ["How often this runs is not visible."]
    assert res["properties"]["confidence"] == "medium"


def test_result_fields(rec):
    rules = (rec.rule("zeroth"), rec.rule())
    run = _run(render_sarif(rec.result(rec.finding(), rules=rules)))
    (res,) = run["results"]
    assert res["ruleId"] == "host-sync-in-hot-path"
    assert res["ruleIndex"] == 1
    assert res["level"] == "error"
    assert res["message"]["text"] == (
        "`logits.argmax(-1).item()` blocks the host every step. Fix: Keep the argmax on the device."
    )
    physical = res["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "model_executor/runner.py"
    assert {k: physical["region"][k] for k in ("startLine", "startColumn", "endLine", "endColumn")} == {
        "startLine": 10,
        "startColumn": 9,
        "endLine": 12,
        "endColumn": 20,
    }
    assert res["partialFingerprints"] == {"rltrefactor/v1": "fp-host-sync-in-hot-path-execute"}
    assert res["baselineState"] == "new"
    assert "suppressions" not in res


@pytest.mark.parametrize(("severity", "level"), [("error", "error"), ("warning", "warning"), ("info", "note")])
def test_levels(rec, severity, level):
    run = _run(render_sarif(rec.result(rec.finding(severity=severity))))
    assert run["results"][0]["level"] == level


def test_fingerprint_stable_when_only_lines_move(rec):
    before = rec.result(rec.finding(line=10))
    after = rec.result(rec.finding(line=42, span=Span(42, 9, 44, 20)))
    fp_before = _run(render_sarif(before))["results"][0]["partialFingerprints"]
    fp_after = _run(render_sarif(after))["results"][0]["partialFingerprints"]
    assert fp_before == fp_after
    assert _run(render_sarif(after))["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 42


def test_suppressed_and_preexisting(rec):
    res = rec.result(
        rec.finding(line=5, suppressed=True, disposition="runs once per request"),
        rec.finding(line=9, fingerprint="old", status="pre-existing"),
    )
    first, second = _run(render_sarif(res))["results"]
    assert first["suppressions"] == [
        {"kind": "inSource", "status": "accepted", "justification": "runs once per request"}
    ]
    assert first["baselineState"] == "new"
    assert second["baselineState"] == "unchanged"
    assert "suppressions" not in second


def test_finding_of_a_rule_not_in_rules_run_gets_a_descriptor(rec, validator):
    res = rec.result(rec.finding("perf-added-sync"), rules=(rec.rule("a-rule"),))
    text = render_sarif(res)
    validator.validate(json.loads(text))
    run = _run(text)
    assert [d["id"] for d in run["tool"]["driver"]["rules"]] == ["a-rule", "perf-added-sync"]
    assert run["results"][0]["ruleIndex"] == 1


def test_no_provenance_without_revisions(rec):
    res = rec.with_change(rec.result(), base=None, head=replace(rec.result().change.head, kind="index", ref=None))
    assert "versionControlProvenance" not in _run(render_sarif(res))


def test_output_is_deterministic(rec):
    res = rec.result(rec.finding(line=30, fingerprint="b"), rec.finding(line=3, fingerprint="a"))
    text = render_sarif(res)
    assert text == render_sarif(res)
    assert [r["partialFingerprints"]["rltrefactor/v1"] for r in _run(text)["results"]] == ["a", "b"]


def test_paths_are_uri_references(rec):
    run = _run(render_sarif(rec.result(rec.finding(path="engine dir/#1.py"))))
    location = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "engine%20dir/%231.py", "uriBaseId": "SRCROOT"}


def test_rules_link_nowhere_without_a_docs_url(rec):
    rules = (rec.rule("a-rule"),)
    driver = _run(render_sarif(rec.result(rec.finding("a-rule"), rules=rules)))["tool"]["driver"]
    assert "informationUri" not in driver and "helpUri" not in driver["rules"][0]
    assert "## Preferred approach" in driver["rules"][0]["help"]["markdown"]  # the texts travel instead
    linked = _run(render_sarif(rec.result(rules=rules), docs_url="https://x.test/rules.md"))["tool"]["driver"]
    assert linked["informationUri"] == "https://x.test/rules.md"
