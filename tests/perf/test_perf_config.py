"""``perf-stubs`` and ``perf-env`` under ``[tool.rltrefactor]``: read, defaulted, and
refused with one line naming the file, the line and the fix."""

from __future__ import annotations

import pytest

from rltrefactor.config import load_config
from rltrefactor.errors import ConfigError


def _config(tmp_path, body: str):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'eng'\n\n[tool.rltrefactor]\n" + body)
    return load_config(str(tmp_path))


def test_both_keys_are_read_and_default_to_nothing(tmp_path):
    config = _config(tmp_path, 'perf-stubs = ["flash_attn", "triton.language"]\nperf-env = ["MYAPP_*", "HF_HOME"]\n')
    assert config.perf_stubs == ("flash_attn", "triton.language")
    assert config.perf_env == ("MYAPP_*", "HF_HOME")
    empty = _config(tmp_path, "")
    assert (empty.perf_stubs, empty.perf_env) == ((), ())


@pytest.mark.parametrize("body, message", [
    ('perf-stubs = "flash_attn"\n',
     "pyproject.toml:5: [tool.rltrefactor] perf-stubs: expected a list of module names (got 'flash_attn'); "
     "fix the value"),
    ('perf-stubs = ["flash-attn"]\n',
     "pyproject.toml:5: [tool.rltrefactor] perf-stubs: expected a dotted module name such as flash_attn or "
     "triton.language (got 'flash-attn'); fix the entry"),
    ('perf-stubs = ["torch.cuda"]\n',
     "pyproject.toml:5: [tool.rltrefactor] perf-stubs: torch cannot be stubbed, the perf hook itself runs on it "
     "(got 'torch.cuda'); remove the entry"),
    ('perf-stubs = ["json"]\n',
     "pyproject.toml:5: [tool.rltrefactor] perf-stubs: json cannot be stubbed, the perf hook itself runs on it "
     "(got 'json'); remove the entry"),
    ('fail-on = "warning"\nperf-env = ["MY APP"]\n',
     "pyproject.toml:6: [tool.rltrefactor] perf-env: expected a variable name or a glob such as MYAPP_* "
     "(got 'MY APP'); use letters, digits, _ and the wildcards * and ?"),
    ('perf-env = ["*"]\n',
     "pyproject.toml:5: [tool.rltrefactor] perf-env: a glob matching every name passes every credential on "
     "(got '*'); name the variables, or prefixes such as MYAPP_*"),
])
def test_bad_values_name_file_line_and_fix(tmp_path, body, message):
    with pytest.raises(ConfigError) as raised:
        _config(tmp_path, body)
    assert str(raised.value) == f"{tmp_path / message}"


def test_a_misspelt_key_suggests_the_right_one(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown key 'perf-stub' \(did you mean 'perf-stubs'\?\)"):
        _config(tmp_path, 'perf-stub = ["flash_attn"]\n')
