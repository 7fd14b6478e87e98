"""Configuration as a new adopter meets it: the docs-url key, misspelt table names, and a
line number on every error."""

from __future__ import annotations

import pytest

from rltrefactor.config import apply_overrides, load_config
from rltrefactor.errors import ConfigError


def _write(tmp_path, body):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n\n[tool.rltrefactor]\n" + body)


def test_docs_url_is_read_and_the_flag_overrides_it(tmp_path):
    _write(tmp_path, 'docs-url = "https://git.acme.test/engine/blob/main/docs/rules.md"\n')
    config = load_config(str(tmp_path))
    assert config.docs_url == "https://git.acme.test/engine/blob/main/docs/rules.md"
    assert apply_overrides(config, {"docs_url": "https://d.test/r.md"}).docs_url == "https://d.test/r.md"
    assert load_config(str(tmp_path / "none")).docs_url is None  # nothing configured: no links


def test_a_docs_url_that_is_no_web_address_is_refused_with_its_line(tmp_path):
    _write(tmp_path, 'fail-on = "error"\ndocs-url = "docs/rules.md"\n')
    with pytest.raises(ConfigError) as info:
        load_config(str(tmp_path))
    assert str(info.value) == (
        f"{tmp_path / 'pyproject.toml'}:6: [tool.rltrefactor] docs-url: expected an http(s) URL of the rules "
        "reference (got 'docs/rules.md'); e.g. https://github.com/acme/engine/blob/main/docs/rules.md, made by "
        "'rltrefactor rules docs'"
    )
    with pytest.raises(ConfigError, match=r"^--docs-url: expected an http\(s\) URL"):
        apply_overrides(load_config(str(tmp_path / "none")), {"docs_url": "rules.md"})


def test_the_summary_links_rules_to_the_configured_docs_url_only(repo, cli):
    repo.write("model_executor/runner.py", "def forward(x):\n    return x\n")
    repo.commit("base")
    repo.write("model_executor/runner.py", "def forward(x):\n    return x.sum().item()\n")
    plain = cli("review", "--diff", "HEAD", "--format", "markdown", cwd=repo.path)
    assert "host-sync-in-hot-path" in plain.out and "](http" not in plain.out and "<details>" in plain.out
    repo.write("pyproject.toml", '[tool.rltrefactor]\ndocs-url = "https://git.acme.test/e/blob/main/docs/rules.md"\n')
    linked = cli("review", "--diff", "HEAD", "--format", "markdown", cwd=repo.path)
    assert "[`host-sync-in-hot-path`](https://git.acme.test/e/blob/main/docs/rules.md#host-sync-in-hot-path)" in linked.out
    flagged = cli("review", "--diff", "HEAD", "--format", "sarif", "--docs-url", "https://d.test/r.md", cwd=repo.path)
    assert '"helpUri": "https://d.test/r.md#host-sync-in-hot-path"' in flagged.out


@pytest.mark.parametrize("name", ["rltrefacter", "rltrefactr", "rlt-refactor", "RLTrefactor"])
def test_a_table_named_like_rltrefactor_is_warned_about_with_its_line(tmp_path, name):
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "x"\n\n[tool.{name}]\nfail-on = "error"\n')
    config = load_config(str(tmp_path))
    assert config.fail_on == "warning"  # not read
    assert config.warnings == (
        f"{tmp_path / 'pyproject.toml'}:4: [tool.{name}] is not read (did you mean [tool.rltrefactor]?); "
        "rename the table, or its settings are ignored",
    )


@pytest.mark.parametrize("name", ["ruff", "mypy", "refactor", "rltrefactor"])
def test_other_tools_tables_are_left_alone(tmp_path, name):
    (tmp_path / "pyproject.toml").write_text(f'[tool.{name}]\nfail-on = "error"\n' if name == "rltrefactor" else f"[tool.{name}]\nx = 1\n")
    assert load_config(str(tmp_path)).warnings == ()


def test_review_shows_the_misspelt_table_warning(repo, cli):
    repo.write("engine/a.py", "def f():\n    return 1\n")
    repo.commit("base")
    repo.write("pyproject.toml", '[tool.rltrefacter]\nfail-on = "error"\n')
    repo.write("engine/a.py", "def f():\n    return 2\n")
    result = cli("review", "--diff", "HEAD", cwd=repo.path)
    assert "pyproject.toml:1: [tool.rltrefacter] is not read (did you mean [tool.rltrefactor]?)" in result.err


@pytest.mark.parametrize("body, line, fragment", [
    ('[tool.rltrefactor.per-path-ignores]\n"legacy/**" = "interfaces"\n', 5,
     "per-path-ignores: expected a table of glob = [rule ids or areas]"),
    ('[tool.rltrefactor.per-path-ignores]\n"ok/**" = ["interfaces"]\n"legacy/[x" = ["interfaces"]\n', 7,
     "per-path-ignores: invalid glob 'legacy/[x'"),
    ('[tool.rltrefactor.rule-options]\nabbreviated-identifier = 3\n', 5, ""),
])
def test_errors_inside_sub_tables_name_their_line(tmp_path, body, line, fragment):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.rltrefactor]\n' + body)
    try:
        load_config(str(tmp_path))
    except ConfigError as exc:
        message = str(exc)
    else:
        from rltrefactor.config import check_names
        from rltrefactor.library.loader import load_library
        from rltrefactor.matching.rule_options import check_rule_options

        config, library = load_config(str(tmp_path)), load_library()
        with pytest.raises(ConfigError) as info:
            check_names(config, {}, library)
            check_rule_options(config, library)
        message = str(info.value)
    assert message.startswith(f"{tmp_path / 'pyproject.toml'}:{line}: "), message
    assert fragment in message


def test_every_key_is_documented_in_the_readme():
    from pathlib import Path

    from rltrefactor.config import _KEYS

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    configuration = readme.split("## Configuration\n", 1)[1].split("\n## ", 1)[0]
    documented = {key for key in _KEYS if f"\n{key} = " in configuration or f"[tool.rltrefactor.{key}" in configuration}
    assert documented == set(_KEYS)
