"""Finding the configuration's file, and lines in it under either prefix."""

from __future__ import annotations

import pytest

from rltrefactor.config import load_config
from rltrefactor.config.files import find_config
from rltrefactor.config.toml_text import array_headers, key_location
from rltrefactor.errors import ConfigError

OWN = 'fail-on = "error"\n\n[names]\nfail-on = ["x"]\n\n[[protocols]]\nbases = ["a.B"]\n'
PYPROJECT = '[project]\nname = "x"\n\n[tool.ruff]\nfail-on = 1\n\n[tool.rltrefactor]\nfail-on = "error"\n'


@pytest.mark.parametrize("text, prefix, key, line", [
    (OWN, "", "fail-on", 1),  # a top-level key, not the key of the same name in [names]
    (OWN, "", "names", 3),
    (OWN, "", "protocols", 6),
    ('[names]\nfail-on = ["x"]\n', "", "fail-on", None),  # only under a sub-table: no line of its own
    (PYPROJECT, "tool.rltrefactor", "fail-on", 8),  # not the one of [tool.ruff]
])
def test_keys_are_located_under_their_prefix(text, prefix, key, line):
    assert key_location("f.toml", text, key, prefix=prefix) == (f"f.toml:{line}" if line else "f.toml")


def test_array_headers_are_found_in_order():
    text = '[[protocols]]\nbases = []\n[names]\n[[ protocols ]]\n'
    assert array_headers(text, "protocols") == [1, 4]
    assert array_headers(text, "tool.rltrefactor.protocols") == []


def test_a_file_of_its_own_is_read_with_its_keys_at_the_top_level(tmp_path):
    (tmp_path / ".rltrefactor.toml").write_text('fail-on = "error"\nrule-dirs = ["review/rules"]\n')
    found = find_config(str(tmp_path))
    assert (found.path, found.prefix) == (str(tmp_path / ".rltrefactor.toml"), "")
    config = load_config(str(tmp_path))
    assert config.fail_on == "error" and config.source == found.path and config.source_prefix == ""
    assert config.rule_dirs == (str(tmp_path / "review" / "rules"),)  # from the repository root


def test_pyproject_warnings_are_kept_only_where_pyproject_is_read(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.rltrefactr]\nfail-on = "error"\n')
    assert load_config(str(tmp_path)).warnings  # no configuration elsewhere: the misspelt table is the likely one
    (tmp_path / "rltrefactor.toml").write_text('fail-on = "error"\n')
    assert load_config(str(tmp_path)).warnings == ()


def test_a_directory_named_by_config_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"--config: not a file; pass the TOML file that holds the configuration$"):
        load_config(str(tmp_path), path=str(tmp_path))
