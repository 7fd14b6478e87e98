"""The YAML pattern language: code patterns, metavariables, `...`, combinators,
contexts, `where` constraints and qualified names through import aliases."""

from __future__ import annotations

import pytest

from rltrefactor.matching.matchers.options import MatcherSpecError
from rltrefactor.matching.patterns.compiler import compile_pattern
from rltrefactor.matching.prefilter import AllOf

from .helpers import hits, lines


def test_metavariable_binds_and_reports_its_source():
    matcher = compile_pattern("r", {"pattern": "$X.item()"})
    assert hits(matcher, "def f(t):\n    return (t + 1).item()\n") == [(2, {"X": "(t + 1)"})]


def test_repeated_metavariable_must_bind_the_same_code():
    block = {"pattern": "$A = $A + 1"}
    assert lines(block, "x = x + 1\ny = x + 1\nself.n = self.n  +  1\n") == [1, 3]


def test_whitespace_and_parentheses_do_not_matter():
    block = {"pattern": "torch.cuda.synchronize(device)"}
    assert lines(block, "import torch\n(torch.cuda\n  .synchronize)( device )\n") == [2]


@pytest.mark.parametrize(
    "code",
    [
        "import torch as th\nth.cuda.synchronize()\n",
        "from torch.cuda import synchronize as sync\nsync()\n",
        "from torch import cuda\ncuda.synchronize()\n",
        "import torch.cuda as tc\ntc.synchronize()\n",
        "import torch\ntorch.cuda.synchronize()\n",
    ],
)
def test_qualified_names_follow_import_aliases(code):
    assert lines({"pattern": "torch.cuda.synchronize(...)"}, code) == [2]


@pytest.mark.parametrize(
    "code",
    [
        "import numpy as torch2\ntorch2.cuda.synchronize()\n",
        "from mylib import synchronize\nsynchronize()\n",
        "def synchronize(): pass\nsynchronize()\n",
        "self.cuda.synchronize()\n",
    ],
)
def test_same_last_name_from_elsewhere_is_not_a_match(code):
    assert lines({"pattern": "torch.cuda.synchronize(...)"}, code) == []


def test_ellipsis_stands_for_any_arguments():
    block = {"pattern": "torch.zeros(..., device=$D)"}
    code = "torch.zeros(4, device=d)\ntorch.zeros(4, 5, dtype=x, device=d)\ntorch.zeros(4)\n"
    assert lines(block, code) == [1, 2]


def test_without_ellipsis_arguments_must_match_exactly():
    block = {"pattern": '$X.to("cpu")'}
    assert lines(block, 'a.to("cpu")\nb.to("cpu", non_blocking=True)\nc.to(\'cpu\')\n') == [1, 3]


def test_ellipsis_in_the_middle_of_arguments():
    block = {"pattern": "f(1, ..., 9)"}
    assert lines(block, "f(1, 9)\nf(1, 2, 3, 9)\nf(1, 2)\nf(2, 9)\n") == [1, 2]


def test_ellipsis_stands_for_any_statements():
    block = {"pattern": "try:\n    ...\nexcept ImportError:\n    pass\n"}
    code = "try:\n    import a\n    import b\nexcept ImportError:\n    pass\ntry:\n    import c\nexcept ImportError:\n    x = 1\n"
    assert lines(block, code) == [1]


def test_statement_pattern_with_one_line_body_matches_any_block():
    block = {"pattern": "for $D in $R: ..."}
    assert lines(block, "for depth in range(3):\n    a()\n    b()\nwhile x:\n    pass\n") == [1]


def test_any_all_and_not():
    block = {
        "all": [{"any": ["$X.cpu()", "$X.numpy()"]}, "$Y.$M()"],
        "not": "$Z.numpy()",
    }
    assert lines(block, "a.cpu()\nb.numpy()\nc.cuda()\n") == [1]


def test_inside_function_regex_and_not_inside_loop():
    block = {"pattern": "$X.item()", "inside": [{"function": "^forward$"}], "not-inside": [{"loop": True}]}
    code = "def forward(x):\n    a = x.item()\n    for i in y:\n        b = x.item()\ndef other(x):\n    return x.item()\n"
    assert lines(block, code) == [2]


def test_inside_with_if_class_and_any_contexts():
    code = (
        "class Runner:\n"
        "    def step(self, x):\n"
        "        with torch.no_grad():\n"
        "            a = x.item()\n"
        "        if DEBUG:\n"
        "            b = x.item()\n"
        "        c = x.item()\n"
        "def free(x):\n"
        "    return x.item()\n"
    )
    assert lines({"pattern": "$X.item()", "inside": [{"with": "torch.no_grad()"}]}, code) == [4]
    assert lines({"pattern": "$X.item()", "inside": [{"if": "DEBUG"}]}, code) == [6]
    assert lines({"pattern": "$X.item()", "not-inside": [{"class": "Runner"}]}, code) == [9]
    either = {"pattern": "$X.item()", "inside": [{"any": [{"if": "DEBUG"}, {"with": "torch.no_grad()"}]}]}
    assert lines(either, code) == [4, 6]


def test_target_context():
    block = {"pattern": "os.environ[$K]", "not-inside": [{"target": True}]}
    code = (
        "import os\n"
        "def run():\n"
        "    a = os.environ['A']\n"
        "    os.environ['B'] = '1'\n"
        "    del os.environ['C']\n"
    )
    assert lines(block, code) == [3]


def test_cold_code_is_no_pattern_context_any_more():
    with pytest.raises(MatcherSpecError) as info:
        compile_pattern("x", {"pattern": "$X.item()", "not-inside": [{"cold-code": True}]})
    assert "declare `applies-to: {runs: per-step}`" in str(info.value)


def test_test_file_context():
    block = {"pattern": "$X.item()", "not-inside": [{"test-file": True}]}
    assert lines(block, "x.item()\n", test=True) == []
    assert lines(block, "x.item()\n", test=False) == [1]


def test_enclosing_pattern_context_with_its_own_where():
    block = {
        "pattern": "$P += 1",
        "inside": [{"pattern": {"pattern": "for $D in $R: ...", "where": {"D": {"regex": "depth"}}}}],
    }
    code = "for depth in r:\n    pos += 1\nfor tok in r:\n    pos += 1\n"
    assert lines(block, code) == [2]


@pytest.mark.parametrize(
    ("context", "reads"),
    [
        ("for $D in $R: ...", "header"),
        ("while $C: ...", "header"),
        ("with $M: ...", "header"),
        ("if $C: ...", "header"),
        ("if $C: ...\nelse: ...", "function"),  # the else clause is compared too
        ("for $D in $R:\n    $X += 1", "function"),  # the body is compared
        ("$F($X)", "header"),  # an enclosing expression lies in the match's statement
    ],
)
def test_a_context_that_compares_only_a_header_keeps_the_rule_reading_headers(context, reads):
    block = {"pattern": "$P.item()", "inside": [{"pattern": context}]}
    assert compile_pattern("r", block).reach.reads == reads


def test_where_regex_not_regex_kind_and_qualified_name():
    code = "import numpy as np\nimport torch\nnp.asarray(a)\ntorch.asarray(b)\nx_np.tolist()\ny.tolist()\nf('s')\nf(3)\n"
    assert lines({"pattern": "$M.asarray($A)", "where": {"M": {"qualified-name": ["torch"]}}}, code) == [4]
    assert lines({"pattern": "$X.tolist()", "where": {"X": {"not-regex": "_np$"}}}, code) == [6]
    assert lines({"pattern": "$X.tolist()", "where": {"$X": {"regex": "^x"}}}, code) == [5]
    assert lines({"pattern": "f($V)", "where": {"V": {"kind": "string"}}}, code) == [7]


def _words(prefilter):
    return [(t.words, sorted(t.calls)) if isinstance(t, AllOf) else t for t in prefilter]


def test_prefilter_uses_names_that_survive_aliasing():
    # Every word of a dotted name but its head (``import torch as th`` renames it); the
    # engine adds what an import leaves at the match (``synchronize``, or an alias).
    assert _words(compile_pattern("r", {"pattern": "torch.cuda.synchronize(...)"}).prefilter) == [
        (("synchronize", "cuda"), ["synchronize"])
    ]
    assert _words(compile_pattern("r", {"pattern": "$X.item()"}).prefilter) == [((".item(", "item"), [])]
    assert _words(compile_pattern("r", {"any": ["$X.item()", "torch.nonzero(...)"]}).prefilter) == [
        ((".item(", "item"), []), (("nonzero",), ["nonzero"])
    ]
    # An alternative without any required text makes the whole block unfiltered.
    assert compile_pattern("r", {"any": ["$X.item()", "$X + $Y"]}).prefilter == ()
    assert _words(compile_pattern("r", {"all": ["$F(...)", "torch.tensor(..., device=$D)"]}).prefilter) == [
        (("tensor",), ["tensor"])
    ]
    # Keyword names are written at every call: the callee is the better token.
    assert _words(compile_pattern("r", {"pattern": "torch.empty(..., device=$D)"}).prefilter) == [(("empty",), ["empty"])]


def test_an_import_that_drops_part_of_a_dotted_name_still_selects_the_call():
    from rltrefactor.matching.engine import _with_aliases
    from rltrefactor.matching.matchers.imports import ImportTable
    from rltrefactor.matching.regions.lines import LineIndex
    from rltrefactor.matching.regions.tokens import token_lines

    prefilter = compile_pattern("r", {"pattern": "torch.cuda.synchronize(...)"}).prefilter
    for imports, call in (
        ({"synchronize": "torch.cuda.synchronize"}, "synchronize()"),
        ({"sync": "torch.cuda.synchronize"}, "sync()"),
        ({"tc": "torch.cuda"}, "tc.synchronize()"),
    ):
        # "cuda" is rarer than "synchronize" here: alone it would select only line 1.
        text = f"import x  # cuda\n{call}\nsynchronize_all = 1\nsynchronize_x = 2\n"
        tokens = _with_aliases(prefilter, ImportTable(imports))
        assert 2 in token_lines(text, tokens, LineIndex(text)), imports
    # An import whose last part the pattern does not spell stands for nothing in it.
    unrelated = _with_aliases(prefilter, ImportTable({"Shard": "torch.cuda.tensor.Shard"}))
    assert unrelated == prefilter


def test_prefilter_of_a_subscript_comparison_is_a_bracket_aware_regex():
    (token,) = compile_pattern("r", {"pattern": "$X[$A > $B]"}).prefilter
    for text in ("x[a > b]", "x[lens[i] > 0]", "x[f(a[b[0]]) == 1]", "x[\n    a\n    != b]"):
        assert token.search(text), text
    assert not token.search("x[0] + y[i]") and not token.search("if a > b:")
    (inverted,) = compile_pattern("r", {"pattern": "$X[~$M]"}).prefilter
    assert inverted.search("x[(~mask)]") and not inverted.search("~mask")


def test_prefilter_falls_back_on_an_enclosing_pattern_or_a_where_regex():
    loop = {"pattern": {"pattern": "for $D in $R: ...", "where": {"D": {"regex": "depth|loop"}}}}
    block = {"pattern": "$P += $N", "inside": [loop]}
    # Only the loop's regex selects: it lies in the loop's header, above the match,
    # so the whole function around it is read.
    matcher = compile_pattern("r", block)
    assert [t.pattern for t in matcher.prefilter] == ["depth|loop"] and matcher.reach.reads == "function"
    # The position's regex lies at the match itself, and the loop context compares only
    # the loop's header: that regex alone selects, and only the headers around it are read.
    matcher = compile_pattern("r", {**block, "where": {"P": {"regex": "position"}}})
    assert [t.pattern for t in matcher.prefilter] == ["position"] and matcher.reach.reads == "header"
    # A context that compares more than a header (here its ``else``): both regexes occur
    # in every match's top-level statement, and the rarer selects.
    branch = {"pattern": {"pattern": "if $C: ...\nelse: ...", "where": {"C": {"regex": "depth|loop"}}}}
    matcher = compile_pattern("r", {"pattern": "$P += $N", "inside": [branch], "where": {"P": {"regex": "position"}}})
    (token,) = matcher.prefilter
    assert [w.pattern for w in token.words] == ["depth|loop", "position"] and matcher.reach.reads == "function"
    where = {"pattern": "$P += $N", "where": {"P": {"regex": "position"}}}
    assert [t.pattern for t in compile_pattern("r", where).prefilter] == ["position"]
    # A regex anchored to the metavariable's own text cannot be searched in the file.
    anchored = {"pattern": "$P += $N", "where": {"P": {"regex": "^pos$"}}}
    assert compile_pattern("r", anchored).prefilter == ()


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"pattern": "$X"}, "pattern '$X' matches every expression; make it more specific"),
        ({"pattern": "x = 1; y = 2"}, "holds several statements; write one statement per pattern"),
        ({"pattern": "f(", "where": {}}, "pattern 'f(' does not parse as a Python expression or statement"),
        ({"pattern": "$X.item()", "any": ["a"]}, "pattern block has pattern and any; it needs exactly one of pattern, any, all"),
        ({"inside": [{"loop": True}]}, "pattern block has none of pattern, any, all"),
        ({"patern": "a"}, "unknown key 'patern' (did you mean 'pattern'?) in a pattern block"),
        ({"any": []}, "any: expected a non-empty list of pattern blocks"),
        ({"pattern": "a()", "inside": [{"loop": False}]}, "context 'loop' takes `true` (got False); use not-inside to negate it"),
        ({"pattern": "a()", "inside": [{"function": "("}]}, "inside: function: invalid regular expression '('"),
        ({"pattern": "a($X)", "where": {"X": {"kind": "strng"}}}, "kind: unknown kind 'strng' (did you mean 'string'?)"),
        ({"pattern": "a($X)", "where": {"X": {"regexp": "a"}}}, "unknown constraint 'regexp' (did you mean 'regex'?)"),
        ({"pattern": 3}, "pattern: expected a code string (got 3); quote the code"),
    ],
)
def test_invalid_blocks_explain_themselves(block, message):
    with pytest.raises(MatcherSpecError) as info:
        compile_pattern("r", block)
    assert message in str(info.value)
