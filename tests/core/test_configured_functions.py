"""`hot-functions` and `cold-functions` reach every per-step rule, take qualified names as
well as plain-name regexes, and an entry that names no function of the repository warns."""

from __future__ import annotations

import textwrap

import pytest

from rltrefactor.api import ReviewRequest, review_change
from rltrefactor.config import load_config
from rltrefactor.config.function_patterns import compile_entry
from rltrefactor.context.configured_names import definitions, unmatched_entries
from rltrefactor.errors import ConfigError

from gitrepo import GitRepo

RULE = "device-allocation-per-step"
BASE = """
import torch


class DeepSpeedEngine:
    def backward(self, loss, param):
        loss.backward()
        return loss


class Engine:
    def backward(self, loss, param):
        return loss
"""
# Each backward now allocates a device tensor on every call.
HEAD = """
import torch


class DeepSpeedEngine:
    def backward(self, loss, param):
        loss.backward()
        overflow = torch.zeros(8, device=param.device)
        self._check_overflow(overflow)
        return loss


class Engine:
    def backward(self, loss, param):
        flags = torch.zeros(8, device=param.device)
        self._check(flags)
        return loss
"""

DEEPSPEED = next(n for n, line in enumerate(textwrap.dedent(HEAD).splitlines(), 1) if "overflow = " in line)
ENGINE = next(n for n, line in enumerate(textwrap.dedent(HEAD).splitlines(), 1) if "flags = " in line)


def _review(tmp_path, settings: str):
    repo = GitRepo(tmp_path / "repo")
    repo.write("pyproject.toml", f"[tool.rltrefactor]\n{settings}\n")
    repo.write("runtime/engine.py", textwrap.dedent(BASE))
    repo.commit("base")
    repo.write("runtime/engine.py", textwrap.dedent(HEAD))
    repo.commit("head")
    report = review_change(ReviewRequest(repo=str(repo.path), diff="HEAD~1..HEAD", use_cache=False, jobs=1,
                                         overrides={"select": (RULE,)}))
    return [f.span.line for f in report.result.findings], report.warnings


def test_an_allocation_in_a_configured_hot_method_is_reported(tmp_path):
    assert _review(tmp_path, "")[0] == []  # nothing in the code says how often backward runs
    lines, warnings = _review(tmp_path / "configured", 'hot-functions = ["DeepSpeedEngine.backward"]')
    assert lines == [DEEPSPEED] and warnings == ()


def test_a_qualified_entry_selects_that_method_only(tmp_path):
    lines, _ = _review(tmp_path, 'hot-functions = ["Engine.backward"]')
    assert lines == [ENGINE]


def test_a_plain_regex_and_a_wildcard_still_name_every_class(tmp_path):
    assert _review(tmp_path, 'hot-functions = ["backw.rd"]')[0] == [DEEPSPEED, ENGINE]
    assert _review(tmp_path / "glob", 'hot-functions = ["*.backward"]')[0] == [DEEPSPEED, ENGINE]


def test_cold_functions_beat_the_rule_names_and_hot_functions(tmp_path):
    lines, _ = _review(tmp_path, 'hot-functions = ["*.backward"]\ncold-functions = ["DeepSpeedEngine.backward"]')
    assert lines == [ENGINE]


def test_an_entry_that_names_no_function_warns_once(tmp_path):
    lines, warnings = _review(tmp_path, 'hot-functions = ["Engine.bakward", "Engine.backward"]')
    assert lines == [ENGINE]
    assert len(warnings) == 1
    assert warnings[0].endswith("pyproject.toml:2: [tool.rltrefactor] hot-functions: 'Engine.bakward' names no function "
                                "of the repository; check its spelling (a method is Class.method, any class's *.method)")


@pytest.mark.parametrize(
    ("entry", "name", "qualname", "expected"),
    [
        ("Engine.backward", "backward", "Engine.backward", True),
        ("Engine.backward", "backward", "Outer.Engine.backward", True),
        ("Engine.backward", "backward", "DeepSpeedEngine.backward", False),
        ("*.step", "step", "Runner.step", True),
        ("*.step", "step", "step", False),
        ("Engine.*", "f", "Engine.f", True),
        ("forward_.*", "forward_extend", "Runner.forward_extend", True),
        (r"Engine\.(forward|backward)", "forward", "Engine.forward", True),
        (r"Engine\.(forward|backward)", "forward", "Other.forward", False),
    ],
)
def test_entry_forms(entry, name, qualname, expected):
    assert compile_entry(entry).matches(name, qualname) is expected


def test_an_entry_neither_regex_nor_dotted_name_is_a_one_line_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.rltrefactor]\nhot-functions = ["*"]\n')
    with pytest.raises(ConfigError) as info:
        load_config(str(tmp_path))
    assert str(info.value).startswith(f"{tmp_path}/pyproject.toml:2: [tool.rltrefactor] hot-functions: invalid regular "
                                      "expression '*' (nothing to repeat at position 0), nor a dotted name such as "
                                      "Engine.backward or *.step; fix it")


def test_definitions_are_read_with_their_qualified_names():
    text = b"class A:\n    def f(self):\n        def g():\n            pass\n    class B:\n        async def h(self): ...\ndef top(): ...\n"
    found = list(definitions(text))
    assert found == [("f", "A.f"), ("g", "A.f.<locals>.g"), ("h", "A.B.h"), ("top", "top")]
    assert unmatched_entries(("A.B.h", "*.g", "B.f", "to+p"), found) == ("B.f",)


@pytest.mark.parametrize(("entry", "needle"), [
    ("Engine.backward", b"backward"),
    ("*.step", b"step"),
    ("Engine.*", b"Engine"),
    ("forward_.*", b"forward_"),
    (r"Engine\.(forward|backward)", None),
    ("_?step", None),
])
def test_only_files_holding_an_entrys_last_word_are_read_for_its_functions(entry, needle):
    from rltrefactor.context.configured_names import _needle

    assert _needle(entry) == needle
