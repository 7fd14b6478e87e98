from __future__ import annotations

import pytest

from rltrefactor.config import DEFAULT_COLD_PATHS, DEFAULT_HOT_PATHS, load_config
from rltrefactor.errors import ConfigError
from rltrefactor.library.globs import matches


def _write(tmp_path, body):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n\n[tool.rltrefactor]\n" + body)


def test_defaults_without_pyproject(tmp_path):
    config = load_config(str(tmp_path))
    assert config.hot_paths == DEFAULT_HOT_PATHS and config.fail_on == "warning"


def test_values_are_read_and_resolved(tmp_path):
    _write(tmp_path, 'select = ["device-residency"]\nfail-on = "error"\nextend-hot-paths = ["engine/core/**"]\n'
                     'rule-dirs = ["review/rules"]\n[tool.rltrefactor.per-path-ignores]\n"legacy/**" = ["interfaces"]\n')
    config = load_config(str(tmp_path))
    assert config.select == ("device-residency",)
    assert config.fail_on == "error"
    assert config.hot_paths == ("engine/core/**",)
    assert config.rule_dirs == (str(tmp_path / "review" / "rules"),)
    assert config.per_path_ignores == {"legacy/**": ("interfaces",)}


def test_unknown_key_names_key_line_and_suggestion(tmp_path):
    _write(tmp_path, 'selct = ["x"]\n')
    with pytest.raises(ConfigError) as info:
        load_config(str(tmp_path))
    message = str(info.value)
    assert "pyproject.toml:5:" in message and "unknown key 'selct'" in message and "did you mean 'select'" in message


@pytest.mark.parametrize(
    "body, fragment",
    [
        ('select = "device-residency"\n', "select: expected a list of rule ids, areas or opt-in groups (pedantic)"),
        ('fail-on = "fatal"\n', "fail-on: expected one of error, warning, info (got 'fatal')"),
        ('hot-paths = ["/abs/**"]\n', "invalid glob '/abs/**'"),
        ('hot-paths = ["a/[b"]\n', "unclosed '['"),
        ('call-index = "yes"\n', "call-index: expected true or false (got 'yes')"),
    ],
)
def test_bad_values(tmp_path, body, fragment):
    _write(tmp_path, body)
    with pytest.raises(ConfigError, match=None) as info:
        load_config(str(tmp_path))
    assert fragment in str(info.value)


def test_the_call_index_is_left_to_the_review_unless_the_configuration_says(tmp_path):
    # Unset: on for reviews of a change, off for full scans (``api``).
    assert load_config(str(tmp_path)).call_index is None
    _write(tmp_path, "call-index = true\n")
    assert load_config(str(tmp_path)).call_index is True
    _write(tmp_path, "call-index = false\n")
    assert load_config(str(tmp_path)).call_index is False


def test_invalid_toml(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.rltrefactor\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(str(tmp_path))


def test_no_path_is_hot_by_default_where_code_runs_is_read_from_the_code():
    assert DEFAULT_HOT_PATHS == ()


@pytest.mark.parametrize(
    "path, cold",
    [
        ("examples/offline_inference.py", True),
        ("vllm/benchmarks/serve.py", True),
        ("scripts/convert.py", True),
        ("vllm/v1/worker/gpu_model_runner.py", False),
        ("verl/tools/utils/tool_registry.py", False),
    ],
)
def test_default_cold_paths_hold_code_that_never_serves(path, cold):
    assert matches(path, DEFAULT_COLD_PATHS) is cold


def test_cold_paths_and_hot_functions_are_read(tmp_path):
    _write(tmp_path, 'cold-paths = ["tools/**"]\nextend-cold-paths = ["legacy/**"]\nhot-functions = ["run_engine_loop"]\n')
    config = load_config(str(tmp_path))
    # The perf hook's micro-checks are offline too.
    assert config.cold_paths == ("tools/**", "legacy/**", "perf_hooks/**")
    assert config.hot_functions == ("run_engine_loop",)


def test_invalid_hot_function_regex_names_the_key(tmp_path):
    _write(tmp_path, 'hot-functions = ["step("]\n')
    with pytest.raises(ConfigError) as info:
        load_config(str(tmp_path))
    assert "hot-functions: invalid regular expression 'step('" in str(info.value) and "pyproject.toml:5" in str(info.value)


def test_glob_semantics():
    assert matches("a/b/c.py", ("**/*.py",)) and matches("c.py", ("**/*.py",))
    assert matches("pkg/sub/x.py", ("pkg",))  # a directory covers what is beneath it
    assert not matches("pkgx/y.py", ("pkg",))
    assert not matches("a/b.py", ("*.py",))


def test_vendored_code_is_excluded_by_default_and_exclusions_extend(tmp_path):
    config = load_config(str(tmp_path))
    assert matches("pkg/third_party/lib.py", config.exclude) and matches("a/_vendor/b.py", config.exclude)
    _write(tmp_path, 'extend-exclude = ["generated/**"]\n')
    extended = load_config(str(tmp_path))
    assert matches("generated/x.py", extended.exclude) and matches("pkg/vendor/x.py", extended.exclude)
    _write(tmp_path, "exclude = []\n")
    assert load_config(str(tmp_path)).exclude == ()


def test_nested_test_directories_are_test_paths():
    from rltrefactor.config import DEFAULT_TEST_PATHS

    assert matches("sglang/multimodal_gen/test/test_x.py", DEFAULT_TEST_PATHS)
    assert matches("pkg/tests/helpers.py", DEFAULT_TEST_PATHS)
    assert not matches("pkg/testing_utils.py", DEFAULT_TEST_PATHS)


def test_cold_functions_are_read_and_checked(tmp_path):
    _write(tmp_path, 'cold-functions = ["warm_step", "forward_(debug"]\n')
    with pytest.raises(ConfigError) as info:
        load_config(str(tmp_path))
    assert "cold-functions: invalid regular expression 'forward_(debug'" in str(info.value)
    _write(tmp_path, 'cold-functions = ["warm_step"]\n')
    assert load_config(str(tmp_path)).cold_functions == ("warm_step",)
