"""The configuration outside pyproject.toml, end to end: a setup.py project configured by
``rltrefactor.toml`` or ``.rltrefactor.toml``, ``--config PATH``, two configurations at
once, and errors that name the file and line."""

from __future__ import annotations

import pytest

HOT = "model_executor/runner.py"
QUIET = "import torch\n\n\ndef forward(x):\n    return x\n"
SYNCING = "import torch\n\n\ndef forward(x):\n    return x.sum().item()\n"


@pytest.fixture
def setup_py_repo(repo):
    """A project with setup.py and no pyproject.toml, whose change adds a host sync."""
    repo.write("setup.py", "from setuptools import setup\n\nsetup(name='engine')\n")
    repo.write(HOT, QUIET)
    repo.commit("base")
    repo.write(HOT, SYNCING)
    return repo


def _rules(run):
    return [f["rule"] for f in run.json()["findings"]]


def test_without_configuration_the_sync_fails_the_review(setup_py_repo, cli):
    plain = cli("review", "--diff", "HEAD", "--format", "json", cwd=setup_py_repo.path)
    assert plain.code == 1 and "host-sync-in-hot-path" in _rules(plain)


@pytest.mark.parametrize("name", ["rltrefactor.toml", ".rltrefactor.toml"])
def test_a_file_of_its_own_configures_a_setup_py_project(setup_py_repo, cli, name):
    setup_py_repo.write(name, 'fail-on = "error"\n\n[per-path-ignores]\n"legacy/**" = ["interfaces"]\n')
    kept = cli("review", "--diff", "HEAD", "--format", "json", cwd=setup_py_repo.path)
    assert kept.code == 0, kept.err  # the finding is a warning: under fail-on = "error" it does not fail
    assert "host-sync-in-hot-path" in _rules(kept)
    # Sub-tables are read without the tool.rltrefactor prefix.
    setup_py_repo.write(name, '[per-path-ignores]\n"model_executor/**" = ["device-residency"]\n')
    ignored = cli("review", "--diff", "HEAD", "--format", "json", cwd=setup_py_repo.path)
    assert ignored.code == 0 and "host-sync-in-hot-path" not in _rules(ignored)


def test_config_names_the_file_for_review_baseline_and_perf(setup_py_repo, cli, tmp_path):
    shared = tmp_path / "team-rltrefactor.toml"
    shared.write_text('ignore = ["device-residency"]\n')
    reviewed = cli("review", "--diff", "HEAD", "--format", "json", "--config", str(shared), cwd=setup_py_repo.path)
    assert reviewed.code == 0 and "host-sync-in-hot-path" not in _rules(reviewed)
    # It wins over the repository's own file, which is then not read (nor is it a second configuration).
    setup_py_repo.write("rltrefactor.toml", 'fail-on = "info"\n')
    assert cli("review", "--diff", "HEAD", "--config", str(shared), cwd=setup_py_repo.path).code == 0
    assert cli("review", "--diff", "HEAD", cwd=setup_py_repo.path).code == 1
    recorded = cli("baseline", "--config", str(shared), "-o", str(tmp_path / "b.json"), cwd=setup_py_repo.path)
    assert recorded.code == 0 and "recorded 0 finding(s)" in recorded.err
    assert "recorded 1 finding(s)" in cli("baseline", "-o", str(tmp_path / "b.json"), cwd=setup_py_repo.path).err
    # perf reads perf-hooks from it: a directory that does not exist is what it reports.
    shared.write_text('perf-hooks = "team_checks"\n')
    measured = cli("perf", "--diff", "HEAD", "--config", str(shared), cwd=setup_py_repo.path)
    assert measured.code == 2 and measured.err.startswith("rltrefactor: team_checks/: perf hook: no micro-checks found")


def test_a_pyproject_toml_named_by_config_is_read_from_its_tool_table(setup_py_repo, cli, tmp_path):
    other = tmp_path / "elsewhere" / "pyproject.toml"
    other.parent.mkdir()
    other.write_text('[project]\nname = "x"\n\n[tool.rltrefactor]\nignore = ["device-residency"]\n')
    assert cli("review", "--diff", "HEAD", "--config", str(other), cwd=setup_py_repo.path).code == 0
    other.write_text('[project]\nname = "x"\n')
    empty = cli("review", "--diff", "HEAD", "--config", str(other), cwd=setup_py_repo.path)
    assert empty.code == 2 and empty.err == f"rltrefactor: {other}: --config: no [tool.rltrefactor] table in it; " \
                                           "add one, or name the file that holds the configuration\n"


@pytest.mark.parametrize("command", [
    ("review", "--diff", "HEAD"), ("baseline",), ("perf", "--diff", "HEAD"), ("rules", "list"), ("rules", "check"),
])
def test_a_config_path_that_does_not_exist_is_one_line(setup_py_repo, cli, command):
    run = cli(*command, "--config", "missing.toml", cwd=setup_py_repo.path)
    assert run.code == 2
    assert run.err == ("rltrefactor: missing.toml: --config: file not found; pass an existing rltrefactor.toml or "
                       "pyproject.toml, or drop --config to read the repository's own\n")


@pytest.mark.parametrize("first, second, second_text, named", [
    ("rltrefactor.toml", "pyproject.toml", '[project]\nname = "x"\n\n[tool.rltrefactor]\nfail-on = "error"\n',
     "pyproject.toml:4 [tool.rltrefactor]"),
    ("rltrefactor.toml", ".rltrefactor.toml", 'fail-on = "error"\n', ".rltrefactor.toml"),
    (".rltrefactor.toml", "pyproject.toml", '[tool.rltrefactor.per-path-ignores]\n"a/**" = ["interfaces"]\n',
     "pyproject.toml [tool.rltrefactor]"),
])
def test_two_configurations_are_an_error_naming_both(setup_py_repo, cli, first, second, second_text, named):
    setup_py_repo.write(first, 'fail-on = "error"\n')
    setup_py_repo.write(second, second_text)
    run = cli("review", "--diff", "HEAD", cwd=setup_py_repo.path)
    assert run.code == 2 and run.err.count("\n") == 1 and "Traceback" not in run.err
    root = setup_py_repo.path
    assert f"{root / first}" in run.err and f"{root / named}" in run.err
    assert "two configurations of rltrefactor; keep one (or name the one to read with --config PATH)" in run.err


def test_a_pyproject_toml_without_the_table_beside_a_file_of_its_own_is_no_second_configuration(setup_py_repo, cli):
    setup_py_repo.write("pyproject.toml", '[build-system]\nrequires = ["setuptools"]\n\n[tool.ruff]\nline-length = 100\n')
    setup_py_repo.write("rltrefactor.toml", 'fail-on = "error"\n')
    assert cli("review", "--diff", "HEAD", cwd=setup_py_repo.path).code == 0


@pytest.mark.parametrize("text, line, message", [
    ('# engine settings\n\nfail-on = "fatal"\n', 3, "fail-on: expected one of error, warning, info (got 'fatal')"),
    ('fail-on = "error"\nselct = []\n', 2, "unknown key 'selct' (did you mean 'select'?); valid keys: select,"),
    ('fail-on = "error"\n\n[per-path-ignores]\n"ok/**" = ["interfaces"]\n"legacy/[x" = ["interfaces"]\n', 5,
     "per-path-ignores: invalid glob 'legacy/[x'"),
    ('select = ["host-synk"]\n', 1, "select: unknown rule or area 'host-synk'; did you mean 'host-sync-in-hot-path'?"),
    ('[per-path-ignores]\n"legacy/**" = ["interfacez"]\n', 2, "[per-path-ignores] 'legacy/**': unknown rule or area"),
    ('[names]\nremove-set-up-words = ["no-such-word"]\n', 2, "[names] remove-set-up-words:"),
    ('fail-on = "error"\n\n[rule-options.abbreviated-identifier]\nabbreviations = 3\n', 4,
     "[rule-options.abbreviated-identifier]: matcher 'abbreviated-new-name': option 'abbreviations'"),
    ('[[protocols]]\nbases = ["a.B"]\nmethods = { f = "per-step" }\nsource = "x"\n\n[[protocols]]\nbases = 3\n', 6,
     "[[protocols]]: bases"),
    ('[tool.rltrefactor]\nfail-on = "error"\n', 1, "[tool.rltrefactor]: in rltrefactor.toml the keys are top-level;"),
])
def test_errors_in_rltrefactor_toml_name_its_file_and_line(setup_py_repo, cli, text, line, message):
    setup_py_repo.write("rltrefactor.toml", text)
    run = cli("review", "--diff", "HEAD", cwd=setup_py_repo.path)
    assert run.code == 2 and run.err.count("\n") == 1, run.err
    assert run.err.startswith(f"rltrefactor: {setup_py_repo.path / 'rltrefactor.toml'}:{line}: "), run.err
    assert message in run.err
    assert "tool.rltrefactor" not in run.err.replace("[tool.rltrefactor]: in rltrefactor.toml", "")


def test_rule_dirs_in_a_file_named_by_config_are_relative_to_the_repository_root(repo, cli, tmp_path):
    from tests.cli.test_local_rules import LOCAL_RULE

    repo.write("review/rules/library.yaml", "schema: 1\nversion: 0.1.0\nretired-ids: []\n")
    repo.write("review/rules/configuration-readability.yaml", LOCAL_RULE)
    repo.write("engine/core.py", "def step():\n    return 1\n")
    repo.commit("base")
    shared = tmp_path / "conf" / "rltrefactor.toml"
    shared.parent.mkdir()
    shared.write_text('rule-dirs = ["review/rules"]\n')
    assert "acme-print-in-engine" in cli("rules", "list", "--config", str(shared), cwd=repo.path).out
    assert "acme-print-in-engine" not in cli("rules", "list", cwd=repo.path).out
    repo.write("engine/core.py", "def step():\n    print('x')\n    return 1\n")
    reviewed = cli("review", "--diff", "HEAD", "--format", "json", "--config", str(shared), cwd=repo.path)
    assert "acme-print-in-engine" in _rules(reviewed)
