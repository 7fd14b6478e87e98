"""Name lists as data: validated like the rule library, changed by the configuration."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rltrefactor.config import load_config
from rltrefactor.errors import ConfigError, RuleLibraryError
from rltrefactor.config import Declared, names_for
from rltrefactor.context.execution import execution_map, is_setup_name
from rltrefactor.matching.matchers.residency import device
from rltrefactor.library.names import NameChange, bundled_names, parse_names
from rltrefactor.source.syntax import parse_tree

RULES = Path(__file__).resolve().parents[2] / "rules"


def _write(tmp_path, body):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n\n[tool.rltrefactor]\n" + body)


def test_every_bundled_entry_says_what_it_is_evidence_for():
    names = bundled_names()
    assert {entry.evidence for entry in names.entries} == {
        "per-step", "one-time", "offline", "host memory", "kernel module", "acknowledged sync"}
    assert names.regex("per-step-functions").fullmatch("execute_model")
    assert is_setup_name("_make_dummy_batch_meta") and is_setup_name("warm_up") and not is_setup_name("warm")


def test_an_unknown_key_in_the_name_file_is_a_line_error():
    text = "names:\n  host-names:\n    evidence: host memory\n    match: patterns\n    descripton: x\n    values: [cpu]\n"
    with pytest.raises(RuleLibraryError) as info:
        parse_names(text, "rules/names.yaml")
    assert str(info.value).startswith("rules/names.yaml:5: names: host-names: unknown key 'descripton'")


def test_an_invalid_pattern_in_the_name_file_is_a_line_error():
    text = "names:\n  host-names:\n    evidence: host memory\n    match: patterns\n    description: x\n    values: ['cpu(']\n"
    with pytest.raises(RuleLibraryError) as info:
        parse_names(text, "rules/names.yaml")
    assert "rules/names.yaml:6" in str(info.value) and "invalid regular expression 'cpu('" in str(info.value)


def test_the_host_name_pattern_has_one_spelling():
    spelled = bundled_names().pattern_text("host-names")
    assert device.HOST_NAMES == spelled
    # Rules name the list, never a copy of it.
    for path in RULES.glob("*.yaml"):
        assert r"_cpu\b" not in path.read_text(encoding="utf-8"), path


def test_configuration_removes_and_extends_name_lists(tmp_path):
    _write(tmp_path, '\n[tool.rltrefactor.names]\nremove-set-up-words = ["dummy"]\nextend-set-up-words = ["rebuild"]\n')
    config = load_config(str(tmp_path))
    assert config.names == (NameChange("set-up-words", ("rebuild",), ("dummy",)),)
    text = "class R:\n    def _make_dummy_meta(self):\n        pass\n\n    def rebuild_index(self):\n        pass\n"
    kinds = {f.qualname: f.kind for f in execution_map(parse_tree(text), Declared(names=names_for(config.names))).functions}
    assert kinds == {"R._make_dummy_meta": "unknown", "R.rebuild_index": "one-time"}
    default = {f.qualname: f.kind for f in execution_map(parse_tree(text)).functions}
    assert default == {"R._make_dummy_meta": "one-time", "R.rebuild_index": "unknown"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('extend-set-up-wrds = ["x"]', "pyproject.toml:7: [tool.rltrefactor.names] extend-set-up-wrds: unknown name list 'set-up-wrds' (did you mean 'set-up-words'?)"),
        ('remove-set-up-words = ["dumy"]', "pyproject.toml:7: [tool.rltrefactor.names] remove-set-up-words: 'dumy' is not in set-up-words"),
        ('extend-host-names = ["cpu("]', "pyproject.toml:7: [tool.rltrefactor.names] extend-host-names: invalid regular expression 'cpu('"),
        ('add-host-names = ["x"]', "pyproject.toml:7: [tool.rltrefactor.names] add-host-names: expected extend-<list> or remove-<list>"),
        ('extend-host-names = "x"', "pyproject.toml:7: [tool.rltrefactor.names] extend-host-names: expected a list of strings"),
    ],
)
def test_bad_name_changes_are_one_line_errors(tmp_path, body, message):
    _write(tmp_path, f"\n[tool.rltrefactor.names]\n{body}\n")
    with pytest.raises(ConfigError) as info:
        load_config(str(tmp_path))
    assert re.sub(r"^.*?pyproject", "pyproject", str(info.value)).startswith(message), str(info.value)
