"""Prefilter tokens: guarded regexes find what the plain regex finds near their guards."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from rltrefactor.regions import LineIndex, token_lines
from rltrefactor.tokens import GuardedRegex, whole_word

FLAG = re.compile(r"use_\w*\s*:\s*bool")


def test_a_guarded_regex_runs_only_on_lines_holding_a_guard():
    guarded = GuardedRegex(FLAG, ("bool",))
    text = "def f(use_x: bool, y):\n    use_y: int = 1\n"
    assert [m.group() for m in guarded.finditer(text)] == ["use_x: bool"]
    assert guarded.search("use_y: int = 1\n") is None  # no guard, nothing searched
    # The regex decides, not the guard: ``bool(...)`` alone is no match.
    assert guarded.search("flag = bool(value)\n") is None


def test_context_lines_let_a_match_span_the_guard_and_its_neighbours():
    pattern = re.compile(r"state\s*==\s*\"")
    text = 'if (\n    self.state\n    == "running"\n):\n    pass\n'
    assert GuardedRegex(pattern, ("state",), context=1).search(text) is not None
    assert GuardedRegex(pattern, ("state",), context=0).search(text) is None


def test_overlapping_windows_are_searched_as_one():
    pattern = re.compile(r"a\nb\nc")
    text = "x\na\nb\nc\ny\n"
    # Windows around "a" and around "c" overlap on "b"; the match spans both.
    assert [m.start() for m in GuardedRegex(pattern, ("a", "c"), context=1).finditer(text)] == [2]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["use_x: bool", "use_y:bool = 1", "bool(z)", "use_q: int", "", "  # bool"]), max_size=12))
def test_guarded_lines_equal_plain_regex_lines_for_single_line_matches(rows):
    text = "\n".join(rows) + "\n"
    index = LineIndex(text)
    assert token_lines(text, (GuardedRegex(FLAG, ("bool",)),), index) == token_lines(text, (FLAG,), index)


def test_whole_words_are_not_parts_of_longer_identifiers():
    version = whole_word("version")
    assert version.search("torch.version.cuda") and version.search("version('triton')")
    assert not version.search("sys.version_info") and not version.search("torch.__version__")
