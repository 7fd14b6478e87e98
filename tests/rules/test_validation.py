"""Each way a rule file can be wrong stops the load with one ``file:line`` message."""

from __future__ import annotations

from pathlib import Path

import pytest

from rltrefactor.errors import RuleLibraryError
from rltrefactor.library.loader import load_library, read_rule_dir
from rltrefactor.matching.matchers.registry import check_matcher

RULE = """\
  - id: sample-hazard
    title: Sample hazard
    status: active
    since: 1.0.0
    severity: warning
    confidence: high
    problem: What goes wrong.
    preferred: What to do.
    exceptions: When it is fine.
    impact: Impact on $X.
    fix: Fix $X.
    fix-safety: safe
    matcher:
      pattern: "$X.item()"
    examples:
      - bad: |
          value = x.item()  # expect
        good: |
          values = x.items()
"""


def write_rules(tmp_path: Path, body: str, *, area: str = "lifecycle", file: str | None = None, meta: str | None = None) -> Path:
    directory = tmp_path / "local-rules"
    directory.mkdir(exist_ok=True)
    (directory / (file or f"{area}.yaml")).write_text(f"area: {area}\nrules:\n{body}")
    if meta is not None:
        (directory / "library.yaml").write_text(meta)
    return directory


def load_error(directory: Path) -> str:
    with pytest.raises(RuleLibraryError) as info:
        load_library([str(directory)], check_rule=check_matcher)
    return str(info.value)


def line_of(directory: Path, file: str, needle: str) -> int:
    lines = (directory / file).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def test_valid_local_rule_loads_beside_the_bundled_library(tmp_path):
    library = load_library([str(write_rules(tmp_path, RULE))])
    rule = library.get("sample-hazard")
    assert rule is not None and rule.area == "lifecycle" and rule.library.endswith("local-rules")
    assert rule.examples[0].expected_lines == (1,)
    assert library.get("host-sync-in-hot-path") is not None


def test_unknown_key_names_file_line_and_suggestion(tmp_path):
    directory = write_rules(tmp_path, RULE.replace("    severity:", "    sevrity:"))
    line = line_of(directory, "lifecycle.yaml", "sevrity")
    assert load_error(directory).endswith(
        f"local-rules/lifecycle.yaml:{line}: rule 'sample-hazard': unknown key 'sevrity' "
        "(did you mean 'severity'?); remove it or fix the spelling"
    )


def test_missing_field(tmp_path):
    message = load_error(write_rules(tmp_path, RULE.replace("    fix: Fix $X.\n", "")))
    assert message.endswith("lifecycle.yaml:3: rule 'sample-hazard': missing required key 'fix'; add it")


def test_duplicate_id_within_the_local_directory(tmp_path):
    message = load_error(write_rules(tmp_path, RULE + RULE))
    assert "rule 'sample-hazard': duplicate id, first defined at" in message
    assert message.endswith("ids are unique forever, pick a new one")


def test_local_rule_cannot_reuse_a_bundled_id(tmp_path):
    message = load_error(write_rules(tmp_path, RULE.replace("sample-hazard", "host-sync-in-hot-path")))
    assert "rule 'host-sync-in-hot-path': duplicate id, first defined at rules/device-residency.yaml:" in message


def test_retired_id_is_never_reused(tmp_path):
    directory = write_rules(tmp_path, RULE, meta="schema: 1\nretired-ids: [sample-hazard]\n")
    assert load_error(directory).endswith("rule 'sample-hazard': id was retired and may never be reused; pick a new id")


def test_retired_status_needs_the_id_in_retired_ids(tmp_path):
    message = load_error(write_rules(tmp_path, RULE.replace("status: active", "status: retired")))
    assert message.endswith("status is retired but the id is not in retired-ids; add it to library.yaml")


def test_unknown_area_file_name(tmp_path):
    message = load_error(write_rules(tmp_path, RULE, file="lifecylce.yaml"))
    assert "lifecylce.yaml: unknown area 'lifecylce' (did you mean 'lifecycle'?)" in message


def test_file_area_must_match_its_name(tmp_path):
    message = load_error(write_rules(tmp_path, RULE, area="interfaces", file="lifecycle.yaml"))
    assert message.endswith("lifecycle.yaml:1: area: 'interfaces' does not match the file name 'lifecycle.yaml'; rename the file or fix the area")


def test_rule_area_must_match_the_file(tmp_path):
    message = load_error(write_rules(tmp_path, RULE.replace("    title:", "    area: interfaces\n    title:")))
    assert "rule 'sample-hazard': area: 'interfaces' does not match the file's area 'lifecycle'; move the rule to rules/interfaces.yaml" in message


def test_unknown_rule_area_value(tmp_path):
    message = load_error(write_rules(tmp_path, RULE.replace("    title:", "    area: lifecyle\n    title:")))
    assert "area: unknown area 'lifecyle'; use one of" in message


def test_bad_glob(tmp_path):
    body = RULE.replace("    problem:", "    applies-to: {paths: ['src/[abc.py']}\n    problem:")
    message = load_error(write_rules(tmp_path, body))
    assert "rule 'sample-hazard': applies-to: paths: invalid glob 'src/[abc.py': unclosed '['" in message


def test_pattern_that_does_not_parse(tmp_path):
    directory = write_rules(tmp_path, RULE.replace('"$X.item()"', '"$X.item("'))
    line = line_of(directory, "lifecycle.yaml", "pattern:")
    message = load_error(directory)
    assert f"lifecycle.yaml:{line}: rule 'sample-hazard': matcher: pattern '$X.item(' does not parse" in message
    assert message.endswith("fix the pattern")


def test_lowercase_metavariable_is_rejected(tmp_path):
    message = load_error(write_rules(tmp_path, RULE.replace('"$X.item()"', '"$x.item()"')))
    assert "metavariables are written $UPPERCASE (such as $X)" in message


def test_unknown_python_matcher(tmp_path):
    body = RULE.replace('      pattern: "$X.item()"', "      python: tensor-to-host-convertion")
    message = load_error(write_rules(tmp_path, body))
    assert "matcher: unknown python matcher 'tensor-to-host-convertion' (did you mean 'tensor-to-host-conversion'?)" in message


def test_unknown_matcher_option(tmp_path):
    body = RULE.replace('      pattern: "$X.item()"', "      python: abbreviated-new-name\n      options: {abbreviation: {}}")
    directory = write_rules(tmp_path, body)
    line = line_of(directory, "lifecycle.yaml", "options:")
    assert load_error(directory).endswith(
        f"lifecycle.yaml:{line}: rule 'sample-hazard': matcher: matcher 'abbreviated-new-name': unknown option "
        "'abbreviation' (did you mean 'abbreviations'?); known options: abbreviations"
    )


def test_wrongly_typed_matcher_option(tmp_path):
    body = RULE.replace('      pattern: "$X.item()"', "      python: abbreviated-new-name\n      options: {abbreviations: [rid]}")
    message = load_error(write_rules(tmp_path, body))
    assert "option 'abbreviations' must be a mapping of strings to strings (got ['rid']); fix the value" in message


def test_invalid_regex_option(tmp_path):
    body = RULE.replace('      pattern: "$X.item()"', "      python: string-compared-field\n      options: {field-regex: '(state'}")
    assert "option 'field-regex' is not a valid regular expression" in load_error(write_rules(tmp_path, body))


def test_id_must_be_kebab_case(tmp_path):
    message = load_error(write_rules(tmp_path, RULE.replace("id: sample-hazard", "id: Sample_Hazard")))
    assert "id: 'Sample_Hazard' is not a kebab-case hazard name" in message


def test_unknown_choice_value(tmp_path):
    message = load_error(write_rules(tmp_path, RULE.replace("status: active", "status: actve")))
    assert "status: unknown value 'actve' (did you mean 'active'?); use one of active, experimental, retired" in message


def test_wrong_type(tmp_path):
    message = load_error(write_rules(tmp_path, RULE.replace("title: Sample hazard", "title: [a, b]")))
    assert "rule 'sample-hazard': title: expected a string (got a list ['a', 'b']); fix the value" in message


def test_bad_example_without_expect_marker(tmp_path):
    message = load_error(write_rules(tmp_path, RULE.replace("  # expect", "")))
    assert "examples[0]: bad: no line is marked `# expect`; mark each line the rule must report" in message


def test_expect_inside_a_string_is_not_a_marker(tmp_path):
    message = load_error(write_rules(tmp_path, RULE.replace("value = x.item()  # expect", 'value = "# expect"')))
    assert "no line is marked `# expect`" in message


def test_good_example_with_expect_marker(tmp_path):
    message = load_error(write_rules(tmp_path, RULE.replace("values = x.items()", "values = x.items()  # expect")))
    assert "good: a good example must not carry `# expect`" in message


def test_example_that_does_not_parse_points_at_its_line(tmp_path):
    directory = write_rules(tmp_path, RULE.replace("values = x.items()", "values = x.items("))
    line = line_of(directory, "lifecycle.yaml", "values = x.items(")
    message = load_error(directory)
    assert f"lifecycle.yaml:{line}: rule 'sample-hazard': examples[0]: good: example does not parse as Python" in message


def test_missing_good_example(tmp_path):
    body = RULE.replace("        good: |\n          values = x.items()\n", "")
    assert "examples: no good example; add one with `good: |`" in load_error(write_rules(tmp_path, body))


def test_manual_and_matcher_together(tmp_path):
    message = load_error(write_rules(tmp_path, RULE.replace("    matcher:", "    manual: true\n    matcher:")))
    assert "a rule is either `manual: true` or has a `matcher`, not both; remove one" in message


def test_neither_manual_nor_matcher(tmp_path):
    body = RULE.replace('    matcher:\n      pattern: "$X.item()"\n', "")
    assert "missing required key 'matcher'; add a matcher, or `manual: true` for a checklist rule" in load_error(write_rules(tmp_path, body))


def test_invalid_yaml(tmp_path):
    message = load_error(write_rules(tmp_path, RULE.replace("title: Sample hazard", "title: [unclosed")))
    assert "lifecycle.yaml:" in message and "invalid YAML" in message and message.endswith("fix the syntax")


def test_duplicate_yaml_key(tmp_path):
    directory = write_rules(tmp_path, RULE.replace("    since: 1.0.0", "    since: 1.0.0\n    since: 1.1.0"))
    line = line_of(directory, "lifecycle.yaml", "since: 1.1.0")
    assert load_error(directory).endswith(f"lifecycle.yaml:{line}: duplicate key 'since': a key may appear once per mapping; merge the two entries")


def test_yaml_tags_never_construct_objects(tmp_path):
    body = RULE.replace("title: Sample hazard", "title: !!python/object/apply:os.system ['true']")
    assert "invalid YAML" in load_error(write_rules(tmp_path, body))


def test_where_names_an_unbound_metavariable(tmp_path):
    body = RULE.replace('      pattern: "$X.item()"', '      pattern: "$X.item()"\n      where: {Y: {regex: a}}')
    assert "where: $Y is not bound by the pattern; use one of $X" in load_error(write_rules(tmp_path, body))


def test_unknown_context(tmp_path):
    body = RULE.replace('      pattern: "$X.item()"', '      pattern: "$X.item()"\n      not-inside: [{insde: true}]')
    assert "not-inside: unknown context 'insde'" in load_error(write_rules(tmp_path, body))


def test_disable_of_an_unknown_id(tmp_path):
    directory = write_rules(tmp_path, RULE, meta="schema: 1\ndisable: [host-sync-in-hot-pat]\n")
    message = load_error(directory)
    assert "library.yaml:2: disable: unknown rule 'host-sync-in-hot-pat' (did you mean 'host-sync-in-hot-path'?)" in message


def test_local_library_disables_a_bundled_rule(tmp_path):
    directory = write_rules(tmp_path, RULE, meta="schema: 1\ndisable: [host-sync-in-hot-path]\n")
    library = load_library([str(directory)])
    assert library.get("host-sync-in-hot-path") is None and library.get("sample-hazard") is not None


def test_bundled_library_file_requires_a_version(tmp_path):
    directory = write_rules(tmp_path, RULE, meta="schema: 1\nretired-ids: []\n")
    with pytest.raises(RuleLibraryError, match=r"library.yaml:1: missing required key 'version'; add it"):
        read_rule_dir(directory, label="rules", bundled=True)


def test_unsupported_schema_version(tmp_path):
    directory = write_rules(tmp_path, RULE, meta="schema: 2\n")
    assert "schema: unsupported rule schema 2 (this rltrefactor reads 1)" in load_error(directory)


def test_missing_rule_directory(tmp_path):
    assert load_error(tmp_path / "absent").endswith("rule directory does not exist; create it or fix rule-dirs")


def test_alias_bombs_are_refused_before_expansion(tmp_path):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(8)
    )
    body = bomb + RULE
    message = load_error(write_rules(tmp_path, body))
    assert "YAML alias '*a': rule files may not use anchors and aliases" in message
    assert "lifecycle.yaml:4:" in message  # area and rules: come first, then the anchor


def test_runs_per_step_is_read(tmp_path):
    body = RULE.replace("    problem:", "    applies-to: {runs: per-step}\n    problem:")
    (rule,) = read_rule_dir(write_rules(tmp_path, body), label="x", bundled=False).rules
    assert rule.applicability.per_step is True


@pytest.mark.parametrize(
    ("applies", "expected"),
    [
        ("{hot-paths-only: true}", "applies-to: hot-paths-only: replaced by `runs: per-step`"),
        ("{runs: hot}", "applies-to: runs: unknown value 'hot'"),
    ],
)
def test_bad_runs(tmp_path, applies, expected):
    body = RULE.replace("    problem:", f"    applies-to: {applies}\n    problem:")
    assert expected in load_error(write_rules(tmp_path, body))


def test_exclude_modules_names_known_kinds(tmp_path):
    body = RULE.replace("    problem:", "    applies-to: {exclude-modules: [kernel]}\n    problem:")
    (rule,) = read_rule_dir(write_rules(tmp_path, body), label="x", bundled=False).rules
    assert rule.applicability.exclude_modules == ("kernel",)
    bad = RULE.replace("    problem:", "    applies-to: {exclude-modules: [kernels]}\n    problem:")
    assert "exclude-modules: unknown module kind 'kernels' (did you mean 'kernel'?)" in load_error(write_rules(tmp_path, bad))
