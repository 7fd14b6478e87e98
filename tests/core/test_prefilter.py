"""Prefilter tokens: guarded regexes find what the plain regex finds near their guards."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from rltrefactor.matching.regions.lines import LineIndex
from rltrefactor.matching.regions.tokens import token_lines
from rltrefactor.matching.prefilter import AllOf, GuardedRegex, finditer, literal_starts, search, whole_word

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


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["blk = 1", "nblks = 2", "blks", "x = nblk", "lps", "y", ""]), max_size=10))
def test_a_guard_holding_another_guard_is_not_searched_for_again(rows):
    pattern = re.compile(r"\w*(?:blk|lp)\w*")
    guarded = GuardedRegex(pattern, ("blk", "blks", "nblk", "lp", "lps", "blk"))
    assert guarded.guards == ("blk", "lp")
    text = "\n".join(rows) + "\n"
    index = LineIndex(text)
    assert token_lines(text, (guarded,), index) == token_lines(text, (pattern,), index)


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


def _lines(token, text: str, tree=None) -> list[int]:
    from rltrefactor.matching.regions.code import code_text
    from rltrefactor.source.syntax import parse_tree

    syntax = parse_tree(text)
    code = code_text(text, syntax)
    return sorted(token_lines(code, [token], LineIndex(code), None, syntax if tree else None))


def test_an_all_of_token_selects_by_its_rarest_word_in_each_file():
    token = AllOf((".to(", "cpu"))
    many_moves = "a = x.to(d)\nb = y.to(d)\nc = z.to('cpu')\n"
    assert _lines(token, many_moves) == [3]  # "cpu" is rarer here
    many_cpus = "a = 'cpu'\nb = 'cpu'\nc = z.to('cpu')\n"
    assert _lines(token, many_cpus) == [3]  # ".to(" is rarer here
    assert token.search("a = x.to(d)\n") is None  # a file without "cpu" holds no match


def test_a_word_inside_an_earlier_word_is_not_counted_but_selects_the_same_lines():
    token = AllOf((".to(", "to", "cpu"))
    assert token._counted == (".to(", "cpu")  # "to" occurs at least as often as ".to("
    text = "a = x.to(d)\nb = 'cpu'\nc = 'cpu'\nd = z.to('cpu')\ntotal = 1\n"
    assert _lines(token, text) == _lines(AllOf((".to(", "cpu")), text) == [1, 4]


def test_counts_shared_between_tokens_of_one_text_match_fresh_counts():
    branch = re.compile(r"(?:if|while)\b")
    text = "".join(f"if x{i}:\n    pass\n" for i in range(100)) + "s = t.sum()\n"
    from rltrefactor.matching.prefilter import _occurrences

    assert _occurrences(text, branch, 0, len(text), 5) == 5  # stops at the cap
    assert _occurrences(text, branch, 0, len(text), 3) == 3  # a lower cap reads the stored count
    assert _occurrences(text, branch, 0, len(text), 1000) == 100  # a higher cap counts again
    assert _occurrences(text, "sum", 0, len(text), 1) == 1 and _occurrences(text + "sum", "sum", 0, len(text), 1) == 1
    # Two tokens sharing the regex word pick the same rarest word as when counted alone.
    first, second = (AllOf((re.compile(r"sum\("), branch)) for _ in range(2))
    assert first._rarest(text, 0, len(text)) is second._rarest(text, 0, len(text)) is first.words[0]


def test_a_called_word_counts_only_where_it_is_called():
    token = AllOf(("tensor",), calls=frozenset({"tensor"}))
    text = "def f(tensor):\n    n = tensor.shape\n    t = torch.tensor (n)\n    u = th.tensor(\n        n)\n"
    assert _lines(token, text) == [3, 4]
    # An import line names the word without calling it: the file is still a candidate
    # (an alias may call it), though the line selects nothing.
    assert token.search("from torch import tensor as T\nT([1])\n") is not None


def test_comments_and_docstrings_select_nothing_but_fstring_fields_do():
    from rltrefactor.matching.regions.code import code_text
    from rltrefactor.source.syntax import parse_tree

    text = 'def f(x):\n    """Calls x.item() per step."""\n    # x.item() here\n    s = f"{x.item()}"\n    return "x.item()"\n'
    code = code_text(text, parse_tree(text))
    assert len(code) == len(text) and code.count("\n") == text.count("\n")
    assert sorted(token_lines(code, [".item("], LineIndex(code))) == [4, 5]


def test_a_statement_scoped_all_of_needs_every_word_in_one_statement_header():
    token = AllOf((re.compile(r"sum\("), re.compile(r"(?:if|while)\b")), within="statement")
    text = (
        "def f(t, ok):\n"
        "    if ok:\n"  # 2: a branch, no reduction in its header
        "        n = t.sum()\n"  # 3: a reduction outside any branch header
        "    if (ok and\n"  # 4: a header over two lines
        "            t.sum() > 0):\n"  # 5
        "        pass\n"
        "    elif t.sum():\n"  # 7: a clause's header
        "        pass\n"
        "    if ok: m = t.sum()\n"  # 9: one line, the body beside the header
        "    v = 1 if t.sum() else 2\n"  # 10: a conditional expression
    )
    assert _lines(token, text, tree=True) == [5, 7, 9, 10]
    # Without the tree every line of the rarest word counts.
    assert _lines(token, text) == [3, 5, 7, 9, 10]


# Regexes without one literal prefix, as rule files and matchers write them.
_ALTERNATIVES = [
    r"depth|loop|iteration|\biter\b|recur",
    r"position|\bpos\b|_pos\b|seq_len",
    r"(?:all|allclose|sum)\(",
    r"(?:has|get)attr\s*\(\s*self\s*,",
    r"(?<![\w.])(?:used|load)_\w+",
    r"^(?:def|class) \w+",
]


def test_literal_starts_are_the_words_every_match_begins_with():
    assert literal_starts(re.compile(_ALTERNATIVES[0])) == ("depth", "iter", "loop", "recur")  # "iteration" holds "iter"
    assert literal_starts(re.compile(r"(?:all|sum)\(")) == ("all(", "sum(")  # the group's words go on with "("
    assert literal_starts(re.compile(r"(?:has|get)attr\s*\(")) == ("getattr", "hasattr")


def test_patterns_re_scans_well_on_its_own_get_no_literal_starts():
    assert literal_starts(re.compile(r"torch\.\w+")) is None  # one literal prefix: re skips to it
    assert literal_starts(re.compile(r"(?:if|in)\b")) is None  # words too short to find faster
    assert literal_starts(re.compile(r"depth|loop", re.IGNORECASE)) is None
    assert literal_starts(re.compile(r"\w+_loop|depth")) is None  # a branch with no literal start


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(_ALTERNATIVES),
    st.lists(st.sampled_from(
        ["loop", "iter", "iterator", "x.iter ", "sum(", "allclose(", "hasattr(self, 'a')", "getattr (self,",
         "_pos", "pos", "position", "used_x", ".load_y", "def f", "\nclass C", " ", "\n", "depth_recur", "a"]
    ), max_size=20),
    st.integers(0, 40),
    st.one_of(st.none(), st.integers(0, 200)),
)
def test_scanning_from_literal_starts_finds_what_the_regex_finds(source, pieces, pos, endpos):
    pattern = re.compile(source, re.MULTILINE)
    text = "".join(pieces)
    expected = [m.span() for m in (pattern.finditer(text, pos) if endpos is None else pattern.finditer(text, pos, endpos))]
    assert [m.span() for m in finditer(pattern, text, pos, endpos)] == expected
    first = search(pattern, text, pos, endpos)
    assert (first.span() if first else None) == (expected[0] if expected else None)


def test_code_text_blanks_comments_and_docstrings_in_any_encoding_keeping_offsets():
    from rltrefactor.matching.regions.code import code_text
    from rltrefactor.source.syntax import parse_tree

    text = "x = 'é'  # ünï .item()\r\n\"\"\"doc é\n.item()\"\"\"\ny = f'{z.item()}'\n"
    code = code_text(text, parse_tree(text))
    assert len(code) == len(text) and code.count("\n") == text.count("\n") and "\r" in code
    rows = code.split("\n")
    assert ".item()" not in rows[0] and "'é'" in rows[0]
    assert rows[2].strip() == "" and "z.item()" in rows[3]  # an f-string's field stays code
