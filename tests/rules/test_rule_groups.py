"""Measured precision and the opt-in group: how a rule states them, and what a run selects."""

from __future__ import annotations

from pathlib import Path

import pytest

from rltrefactor.config import Config, check_names
from rltrefactor.matching.engine import select_rules
from rltrefactor.errors import ConfigError
from rltrefactor.library.loader import load_library
from rltrefactor.library.model import Precision
from rltrefactor.matching.matchers.registry import check_matcher

from .test_validation import RULE, line_of, load_error, write_rules

MEASURED = 'measured: "corpus noise"'
NOISY = f"    group: pedantic\n    precision: {{true: 1, debatable: 2, false: 1, {MEASURED}}}\n"
PRECISE = f"    precision: {{true: 3, debatable: 1, false: 0, {MEASURED}}}\n"


def _rule(rule_id: str, fields: str) -> str:
    return RULE.replace("sample-hazard", rule_id).replace("    problem:", fields + "    problem:", 1)


def _library(tmp_path: Path):
    body = _rule("noisy-hazard", NOISY) + _rule("precise-hazard", PRECISE)
    return load_library([str(write_rules(tmp_path, body))], check_rule=check_matcher)


def _selected(library, **config) -> set[str]:
    local = {rule.id for rule in library.rules if rule.library != "bundled"}
    return {rule.id for rule in select_rules(library, Config(**config))} & local


def test_precision_is_read_with_yaml_booleans_as_keys(tmp_path):
    rule = _library(tmp_path).get("noisy-hazard")
    assert rule is not None and rule.group == "pedantic"
    assert rule.precision == Precision(true=1, debatable=2, false=1, measured="corpus noise")
    assert rule.precision.figure == "1/4 true (25 %), 2 debatable, 1 false"
    assert Precision(0, 0, 0, "corpus").figure == "no findings to judge"


def test_opt_in_group_runs_only_when_its_name_or_a_rule_id_is_selected(tmp_path):
    library = _library(tmp_path)
    assert _selected(library) == {"precise-hazard"}
    assert _selected(library, select=("pedantic",)) == {"noisy-hazard", "precise-hazard"}
    assert _selected(library, select=("noisy-hazard",)) == {"noisy-hazard"}
    # An area narrows the run; the group name then opts its rules of that area in.
    assert _selected(library, select=("lifecycle",)) == {"precise-hazard"}
    assert _selected(library, select=("lifecycle", "pedantic")) == {"noisy-hazard", "precise-hazard"}
    assert _selected(library, select=("device-residency", "pedantic")) == set()
    assert _selected(library, select=("pedantic",), ignore=("noisy-hazard",)) == {"precise-hazard"}


def test_a_group_name_is_a_selection_not_an_ignore(tmp_path):
    library = _library(tmp_path)
    check_names(Config(select=("pedantic",)), {"select": ("pedantic",)}, library)
    with pytest.raises(ConfigError, match=r"--ignore: unknown rule or area 'pedantic'"):
        check_names(Config(ignore=("pedantic",)), {"ignore": ("pedantic",)}, library)


def test_a_rule_under_half_true_must_be_in_the_opt_in_group(tmp_path):
    directory = write_rules(tmp_path, _rule("noisy-hazard", NOISY.replace("    group: pedantic\n", "")))
    line = line_of(directory, "lifecycle.yaml", "precision:")
    assert load_error(directory).endswith(
        f"lifecycle.yaml:{line}: rule 'noisy-hazard': precision: 1/4 true (25 %), 2 debatable, 1 false is under "
        "50 % true, too noisy for the default set; add `group: pedantic` (or `kept-default: <reason>` to keep it by exception)"
    )


def test_a_noisy_rule_stays_in_the_default_set_only_with_its_reason_written_down(tmp_path):
    fields = NOISY.replace("    group: pedantic\n", "    kept-default: it carries the area's recall\n")
    library = load_library([str(write_rules(tmp_path, _rule("kept-hazard", fields)))])
    rule = library.get("kept-hazard")
    assert rule is not None and (rule.group, rule.kept_default) == ("default", "it carries the area's recall")
    assert _selected(library) == {"kept-hazard"}
    directory = write_rules(tmp_path, _rule("precise-hazard", PRECISE + "    kept-default: no need\n"))
    assert "kept-default: only a default-group rule measured under 50 % true needs a reason; remove the key" in load_error(directory)


def test_half_true_stays_in_the_default_set(tmp_path):
    fields = f"    precision: {{true: 2, debatable: 1, false: 1, {MEASURED}}}\n"
    library = load_library([str(write_rules(tmp_path, _rule("even-hazard", fields)))])
    rule = library.get("even-hazard")
    assert rule is not None and rule.group == "default"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (f"    precision: {{true: 1, false: 0, {MEASURED}}}\n",
         "rule 'bad-hazard': precision: missing required key 'debatable'; add the number of findings judged debatable"),
        (f"    precision: {{true: -1, debatable: 0, false: 0, {MEASURED}}}\n",
         "precision: true: a count of findings cannot be negative (got -1); fix the value"),
        ("    precision: {true: 1, debatable: 0, false: 0}\n",
         "precision: missing required key 'measured'; add it"),
        ("    precision: {true: 1, debatable: 0, false: 0, measured: x, seen: 3}\n",
         "precision: unknown key 'seen'"),
        ("    group: pedantc\n", "group: unknown value 'pedantc' (did you mean 'pedantic'?); use one of default, pedantic"),
    ],
)
def test_bad_precision_or_group_is_a_one_line_error(tmp_path, fields, message):
    assert message in load_error(write_rules(tmp_path, _rule("bad-hazard", fields)))


def test_an_error_needs_high_confidence(tmp_path):
    body = RULE.replace("severity: warning", "severity: error").replace("confidence: high", "confidence: medium")
    directory = write_rules(tmp_path, body)
    line = line_of(directory, "lifecycle.yaml", "severity: error")
    assert load_error(directory).endswith(
        f"lifecycle.yaml:{line}: rule 'sample-hazard': severity: error needs confidence: high (got confidence medium); "
        "an error fails the run, so lower the severity to warning or raise the confidence"
    )


def test_every_bundled_error_is_high_confidence_and_every_released_checked_rule_is_measured():
    library = load_library()
    assert all(r.confidence == "high" for r in library.rules if r.severity == "error")
    # Experimental rules run only when named, so the scans that measure the others do not reach them.
    released = [r for r in library.rules if r.statically_matched and r.status == "active" and r.since != library.version]
    unmeasured = [r.id for r in released if r.precision is None]
    assert unmeasured == [], "record the measured precision of each checked rule (docs/writing-rules.md)"


def test_rules_list_show_and_reference_state_the_group_and_the_figure(tmp_path, capsys):
    from rltrefactor.authoring.docs import render_rules_markdown
    from rltrefactor.cli import main

    fields = NOISY.replace("    group: pedantic\n", "    kept-default: it carries the area's recall\n")
    directory = write_rules(tmp_path, _rule("noisy-hazard", NOISY) + _rule("kept-hazard", fields))
    assert main(["rules", "list", "--rule-dir", str(directory)]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()}
    assert rows["noisy-hazard"][3:7] == ["pedantic", "warning", "auto", "1/4"]
    assert rows["kept-hazard"][3:7] == ["default", "warning", "auto", "1/4*"]
    assert main(["rules", "show", "--rule-dir", str(directory), "kept-hazard"]) == 0
    shown = capsys.readouterr().out
    assert "1/4 true (25 %), 2 debatable, 1 false; measured on corpus noise" in shown
    assert "it carries the area's recall" in shown
    reference = render_rules_markdown(load_library([str(directory)]))
    assert "· group pedantic ·" in reference
    assert ("Measured precision: 1/4 true (25 %), 2 debatable, 1 false (judged by hand on corpus noise). "
            "Under 50 % true, kept in the default set by exception: it carries the area's recall") in reference


def test_reports_on_is_read_and_checked(tmp_path):
    library = load_library([str(write_rules(tmp_path, _rule("design-hazard", "    reports-on: new-code\n")
                                            + _rule("defect-hazard", "")))])
    assert [(r.id, r.reports_on) for r in library.rules if r.library != "bundled"] == [
        ("design-hazard", "new-code"), ("defect-hazard", "all-code")]
    typo = write_rules(tmp_path, _rule("design-hazard", "    reports-on: new\n"))
    assert "reports-on: unknown value 'new'" in load_error(typo)
    manual = RULE.replace("    matcher:\n      pattern: \"$X.item()\"\n", "    manual: true\n").replace(
        "    problem:", "    reports-on: new-code\n    problem:", 1)
    manual = manual.split("    examples:")[0]
    assert "reports-on: a manual rule reports no findings; remove the key" in load_error(write_rules(tmp_path, manual))
