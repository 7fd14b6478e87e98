"""Region planning and the fast position computation must agree with LibCST's own answers."""

from __future__ import annotations

import re

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from rltrefactor.matching.matchers import positions as positions_module
from rltrefactor.matching.matchers.positions import positions
from rltrefactor.matching.prefilter import GuardedRegex, whole_word
from rltrefactor.matching.regions.lines import LineIndex
from rltrefactor.matching.regions.plan import plan_regions
from rltrefactor.matching.regions.reach import MatcherReach, search_scope
from rltrefactor.matching.regions.tokens import token_lines, word_lines
from rltrefactor.matching.regions.windows import change_windows
from rltrefactor.context.filemodel import FileModel
from rltrefactor.source.syntax import parse_tree
from rltrefactor.types import Span

SOURCE = '''\
import torch  # 1


def cold():  # 4
    return 1


class Runner:  # 8
    def forward(self, x):
        return x.item()


X = [1,  # 13
     2]; Y = 3
'''


def _reach(tokens, **scope):
    return {rule_id: (tuple(rule_tokens), MatcherReach(**scope)) for rule_id, rule_tokens in tokens.items()}


def _plan(tokens, lines=None):
    return plan_regions(SOURCE, parse_tree(SOURCE), _reach(tokens), lines=lines)


def test_only_statements_holding_a_token_are_planned():
    (region,) = _plan({"sync-rule": (".item(",)})
    assert (region.start_line, region.end_line) == (8, 10)
    assert region.text.startswith("class Runner:") and region.rule_ids == {"sync-rule"}


def test_statements_sharing_a_line_or_adjacent_merge_and_rules_union():
    regions = _plan({"a": ("[1",), "b": ("Y = 3",)})
    assert [(r.start_line, r.end_line, sorted(r.rule_ids)) for r in regions] == [(13, 14, ["a", "b"])]


def test_a_rule_without_tokens_covers_every_statement():
    regions = _plan({"any": ()})
    assert regions[0].start_line == 1 and regions[-1].end_line == 14


def test_changed_lines_limit_the_regions():
    assert _plan({"sync-rule": (".item(",)}, lines=frozenset({5})) == []
    (region,) = _plan({"sync-rule": (".item(",)}, lines=frozenset({9}))
    assert region.start_line == 8


def test_tokens_inside_comments_between_statements_plan_nothing():
    text = "a = 1\n# x.item() in a comment\nb = 2\n"
    assert plan_regions(text, parse_tree(text), _reach({"r": (".item(",)}), lines=None) == []


def test_fast_positions_equal_libcst_positions():
    module = cst.parse_module(SOURCE + "async def f(a, *, b=(1 +\n 2)):\n    '''doc'''\n    return [i for i in a if i]  # c\n")
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    mine = positions(module)
    compared = 0
    for node, where in expected.items():
        if isinstance(node, cst.Module):
            continue
        assert mine[id(node)] == (where.start.line, where.start.column, where.end.line, where.end.column)
        compared += 1
    assert compared > 100


ANCHORS_SOURCE = '''\
import torch; import os  # two statements, one line


@decorate(
    1)
# a comment between decorator and definition
class Runner(Base[int], metaclass=Meta):
    """Doc."""

    limit = 3; scale = 2

    @property
    def size(self): return self.limit

    # leading comment
    async def step(self, x, *, y=(1 +
            2)):
        class Inner:
            value = x.item()
        return [i for i in x if i]  # trailing

    class Nested:
        pass
class OneLine: pass
if torch.cuda.is_available():
    DEVICE = "cuda"
else:
    DEVICE = "cpu"
'''


class _NodeKinds(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: set[type] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.found.add(type(node))
        return True


def _all_spans(text):
    """The module, its context and every node the context indexes (the module aside)."""
    from rltrefactor.matching.matchers.base import FileContext

    module = cst.parse_module(text)
    ctx = FileContext(FileModel.read("f.py", text), module, text=text)
    kinds = _NodeKinds()
    module.visit(kinds)
    nodes = [node for kind in kinds.found if kind is not cst.Module for node in ctx.nodes(kind)]
    return module, ctx, nodes


def _generated(monkeypatch):
    """The node each code generation for positions starts from, in order, from now on."""
    roots = []
    generate = positions_module.codegen_positions

    def recorded(module, node, indents=()):
        roots.append(node)
        return generate(module, node, indents)

    monkeypatch.setattr(positions_module, "codegen_positions", recorded)
    return roots


def test_positions_computed_per_statement_equal_the_whole_module_codegen(monkeypatch):
    module, ctx, nodes = _all_spans(ANCHORS_SOURCE)
    whole = positions(module)
    roots = _generated(monkeypatch)
    for node in nodes:
        line, column, end_line, end_column = whole[id(node)]
        assert ctx.span(node) == Span(line, column + 1, end_line, end_column + 1), ctx.code(node)
    assert len(nodes) > 100
    # Statements and class members are generated one by one, never the whole module.
    assert len(roots) > 3 and not any(isinstance(root, cst.Module) for root in roots)


def test_a_hit_inside_a_method_generates_that_method_only(monkeypatch):
    _, ctx, _ = _all_spans(ANCHORS_SOURCE)
    roots = _generated(monkeypatch)
    (call,) = [call for call in ctx.nodes(cst.Call) if ctx.code(call) == "x.item()"]
    assert ctx.span(call) == Span(19, 21, 19, 29)
    (method,) = roots  # not its class ``Runner``, nor the module
    assert isinstance(method, cst.FunctionDef) and method.name.value == "step"


def test_spans_in_a_region_with_emptied_lines_left_out_are_the_files_spans():
    from rltrefactor.matching.matchers.base import FileContext

    (region,) = plan_regions(ANCHORS_SOURCE, parse_tree(ANCHORS_SOURCE), _reach({"r": (".item(",)}, reads="header"),
                             lines=None)
    assert region.file_lines is not None and len(region.text.splitlines()) < region.end_line - region.start_line + 1
    module = cst.parse_module(region.text)
    ctx = FileContext(FileModel.read("f.py", ANCHORS_SOURCE), module,
                      line_offset=region.start_line - 1, text=region.text, file_lines=region.file_lines)
    _, whole_ctx, _ = _all_spans(ANCHORS_SOURCE)
    in_file = {whole_ctx.code(node): whole_ctx.span(node) for node in whole_ctx.nodes(cst.Call)}
    calls = ctx.nodes(cst.Call)
    assert any(ctx.code(call).endswith(".item()") for call in calls)
    for call in calls:
        assert ctx.span(call) == in_file[ctx.code(call)], ctx.code(call)


def test_positions_fall_back_to_the_whole_module_where_tree_sitter_disagrees(monkeypatch):
    text = "def f():\n    return 1\n"
    module, ctx, nodes = _all_spans(text)
    ctx.text = "def f():\n    return (\n"  # not what LibCST parsed: tree-sitter reports an error
    whole = positions(module)
    roots = _generated(monkeypatch)
    assert [ctx.span(node).line for node in nodes] == [whole[id(node)][0] for node in nodes]
    assert [type(root) for root in roots] == [cst.Module]


def test_regex_tokens_plan_by_match_not_substring():
    import re

    text = "def f(abs_x):\n    return abs_x\n\n\ndef g(bs):\n    return bs\n"
    (region,) = plan_regions(text, parse_tree(text), _reach({"abbrev": (re.compile(r"\bbs\b"),)}), lines=None)
    assert region.start_line == 5


CLASS_SOURCE = '''\
class Runner:
    def __init__(self):
        self._scratch = None

    def idle(self):
        return 1

    def forward(self, x):
        return x.item()
'''


def test_idle_methods_are_blanked_and_setup_methods_kept():
    (region,) = plan_regions(CLASS_SOURCE, parse_tree(CLASS_SOURCE), _reach({"r": (".item(",)}), lines=None,
                             keep_method=lambda name: name == "__init__")
    rows = dict(zip(region.file_lines or (), region.text.split("\n")))
    assert 5 not in rows and 6 not in rows and "idle" not in region.text  # idle() left out
    assert "self._scratch" in rows[3] and "x.item()" in rows[9]  # the file's line numbers
    assert region.parsed_lines == 9 - 2 == len(region.text.splitlines())


def test_whole_class_rules_see_every_method():
    (region,) = plan_regions(CLASS_SOURCE, parse_tree(CLASS_SOURCE), _reach({"r": (".item(",)}, whole_class=True),
                             lines=None)
    assert "return 1" in region.text


def test_tokens_in_setup_methods_select_nothing_for_rules_that_never_report_there():
    tokens = {"r": ("self._scratch",)}
    assert plan_regions(CLASS_SOURCE, parse_tree(CLASS_SOURCE), _reach(tokens, never_in_setup=True), lines=None,
                        keep_method=lambda name: name == "__init__") == []
    assert plan_regions(CLASS_SOURCE, parse_tree(CLASS_SOURCE), _reach(tokens), lines=None,
                        keep_method=lambda name: name == "__init__") != []


def test_tokens_on_cold_lines_select_nothing_for_rules_that_never_report_there():
    tokens = {"r": (".item(",)}
    cold = lambda line: line == 9  # ``forward``'s ``x.item()``: found to run once or offline
    assert plan_regions(CLASS_SOURCE, parse_tree(CLASS_SOURCE), _reach(tokens, never_in_cold=True), lines=None,
                        is_cold_line=cold) == []
    (region,) = plan_regions(CLASS_SOURCE, parse_tree(CLASS_SOURCE), _reach(tokens), lines=None, is_cold_line=cold)
    assert "x.item()" in region.text


COMPANION_SOURCE = '''\
def setup(pool):
    pool.watch("staging")


def step(pool, batch):
    pool.watch("other")
    n = len(batch)
    staging.fill_(n)
'''


def _watched(text):
    return re.findall(r'watch\("(\w+)"\)', text)


def _companion_plan(companion_lines):
    reach = {"rule": (("watch(",), MatcherReach(reads="header", companions=_watched, companion_lines=companion_lines))}
    return plan_regions(COMPANION_SOURCE, parse_tree(COMPANION_SOURCE), reach, lines=frozenset({6, 7, 8}))


def test_a_change_reads_tokens_elsewhere_only_for_rules_that_keep_every_use_of_a_companion():
    # The change touches only ``step``. Companions that keep every use follow
    # ``watch("staging")`` in ``setup`` to the changed ``staging.fill_`` line.
    (region,) = _companion_plan("uses")
    assert region.start_line == 5 and "staging.fill_(n)" in region.text
    # Companions that keep assignments stay in the token's function, so tokens outside
    # the changed statements are not searched: that line is left empty.
    (region,) = _companion_plan("assignments")
    assert region.start_line == 5 and 'watch("other")' in region.text and "staging" not in region.text


DEFINED_SOURCE = '''\
def decorator(func):
    def wrapper(*args):
        return func(*args)

    wrapper._tagged = True
    return wrapper


def other():
    def wrapper():
        pass

    return wrapper
'''


def test_assignment_companions_keep_a_definition_of_the_name_in_the_tokens_function():
    # ``wrapper._tagged`` asks where ``wrapper`` came from: its ``def`` in the same
    # function is kept (its header), the ``wrapper`` defined in ``other`` is not.
    reach = {"rule": (("._tagged",), MatcherReach(reads="header", companions=lambda text: ["wrapper"],
                                                  companion_lines="assignments"))}
    (region,) = plan_regions(DEFINED_SOURCE, parse_tree(DEFINED_SOURCE), reach, lines=None)
    rows = dict(zip(region.file_lines or range(region.start_line, region.end_line + 1), region.text.split("\n")))
    assert "def wrapper(*args):" in rows[2] and "wrapper._tagged = True" in rows[5]
    assert region.end_line == 6 and "return func" not in region.text  # the definition's body is not read


def test_search_scopes_follow_what_a_rule_reads():
    assert search_scope(MatcherReach(reads="function")) == "members"
    assert search_scope(MatcherReach(reads="function", hits_at_tokens=True)) == "headers"
    assert search_scope(MatcherReach(reads="statement", companions=_watched, companion_lines="assignments")) == "members"
    assert search_scope(MatcherReach(reads="header")) == "headers"
    assert search_scope(MatcherReach(reads="header", companions=_watched, companion_lines="assignments")) == "headers"
    assert search_scope(MatcherReach(reads="header", whole_class=True)) == "statements"
    assert search_scope(MatcherReach(reads="header", companions=_watched, companion_lines="uses")) == "file"


MEMBERS_SOURCE = '''\
class Runner:
    limit = 3

    def idle(self, x):
        return x.item()

    def forward(self, x):
        y = x + 1
        return y
'''


def _member_plan(lines, **scope):
    return plan_regions(MEMBERS_SOURCE, parse_tree(MEMBERS_SOURCE), _reach({"r": (".item(",)}, **scope), lines=lines)


def test_a_change_in_one_method_reads_no_tokens_of_the_other_methods():
    # ``forward`` changes; the token sits in ``idle``: a rule that reads around its
    # tokens cannot hit in ``forward``, so nothing is parsed.
    assert _member_plan(frozenset({8})) == []
    (region,) = _member_plan(frozenset({5}))
    assert "x.item()" in region.text and "y = x + 1" not in region.text


def test_whole_class_rules_and_changes_outside_members_still_read_the_class():
    (region,) = _member_plan(frozenset({8}), whole_class=True)
    assert "x.item()" in region.text
    # A changed class header, or a line between members, touches every member.
    assert _member_plan(frozenset({1})) != []
    assert _member_plan(frozenset({6})) != []


def test_change_windows_name_the_touched_members_and_statements():
    text = MEMBERS_SOURCE + "\n\ndef helper():\n    return 1\n"
    index = LineIndex(text)
    windows = change_windows(text, parse_tree(text), frozenset({8, 13}))
    assert windows is not None
    assert windows.members == (index.starts[6], len(text))  # ``forward`` through ``helper``
    assert windows.statements == (0, len(text))
    assert windows.for_scope("file") is None
    assert change_windows(text, parse_tree(text), frozenset({11})) is None  # a blank line between statements


HEADERS_SOURCE = '''\
class Runner:
    limit = 3

    @torch.inference_mode()
    def forward(self, x,
                y):
        total = x.sum()
        for depth in range(3):
            total += x.item()
            count = 1
        return total.item()
'''


def _rows(text, stretches):
    return [text[start:stop] for start, stop in stretches]


def test_header_windows_hold_the_headers_around_each_changed_line():
    tree = parse_tree(HEADERS_SOURCE)
    windows = change_windows(HEADERS_SOURCE, tree, frozenset({10}))
    assert windows is not None
    # The class header, the decorated definition's header (decorator and wrapped
    # signature), the loop header and the changed statement.
    assert _rows(HEADERS_SOURCE, windows.headers) == [
        "class Runner:\n",
        "    @torch.inference_mode()\n    def forward(self, x,\n                y):\n",
        "        for depth in range(3):\n",
        "            count = 1\n",
    ]
    # Stretches that touch are merged.
    merged = change_windows(HEADERS_SOURCE, tree, frozenset({9, 10}))
    assert merged is not None and _rows(HEADERS_SOURCE, merged.headers)[2:] == [
        "        for depth in range(3):\n            total += x.item()\n            count = 1\n"
    ]
    assert windows.for_scope("headers") == windows.headers
    # A changed line inside a wrapped statement brings the whole statement.
    wrapped = change_windows(HEADERS_SOURCE, tree, frozenset({6}))
    assert wrapped is not None and "    def forward(self, x,\n                y):\n" in "".join(_rows(HEADERS_SOURCE, wrapped.headers))
    # Where hits are kept anywhere in a touched function, header rules search the members.
    members = change_windows(HEADERS_SOURCE, tree, frozenset({10}), headers=False)
    assert members is not None and members.headers is None and members.for_scope("headers") == (members.members,)


def _header_rule_plan(lines, tokens):
    reach = {"r": (tokens, MatcherReach(reads="header"))}
    return plan_regions(HEADERS_SOURCE, parse_tree(HEADERS_SOURCE), reach, lines=lines)


def test_a_header_rule_parses_nothing_for_a_change_its_tokens_are_not_around():
    # ``.item()`` occurs in the changed method but not in the changed statement or the
    # headers holding it: no hit of a header rule could touch line 10.
    assert _header_rule_plan(frozenset({10}), (".item(",)) == []
    # The same token in the changed statement, or in the header of the loop holding it.
    (region,) = _header_rule_plan(frozenset({9}), (".item(",))
    assert "total += x.item()" in region.text and "return total.item()" not in region.text
    assert _header_rule_plan(frozenset({10}), ("range(",)) != []


def test_token_lines_in_several_windows_equal_the_lines_of_each_window():
    text = "a = x.item()\nb = 1\nc = y.item()\nd = z.item()\n"
    index = LineIndex(text)
    first, third = (index.starts[0], index.starts[1]), (index.starts[2], index.starts[3])
    tokens = (".item(", re.compile(r"\w\.item\("), GuardedRegex(re.compile(r"\w\.item"), ("item",)))
    for token in tokens:
        assert token_lines(text, (token,), index, (first, third)) == {1, 3}, token
        assert token_lines(text, (token,), index, (third,)) == {3}, token
        assert token_lines(text, (token,), index) == {1, 3, 4}, token


def test_word_lines_find_what_whole_word_regexes_find():
    text = "étape = 1\nx_étape = étape\nversion, version_info = 1, 2\n_version = version\nversion"
    index = LineIndex(text)
    for name in ("étape", "version", "x", "_version", "absent"):
        assert word_lines(index, [name]) == token_lines(text, [whole_word(name)], index), name


def test_a_comment_right_above_a_read_statement_is_kept_and_a_trailing_one_goes_with_its_code():
    text = (
        "def forward(self, n):\n"
        "    rows = self.split(\n"
        "        n)  # a trailing comment\n"
        "    # 8192: the fused kernel's limit\n"
        "    if n > 8192:\n"
        "        return 1\n"
        "    return 0\n"
    )
    (region,) = plan_regions(text, parse_tree(text), {"r": (("8192",), MatcherReach(reads="header"))}, lines=None)
    kept = region.text.splitlines()
    assert "    # 8192: the fused kernel's limit" in kept and "    if n > 8192:" in kept
    assert not any("trailing" in line for line in kept)  # the emptied statement's last line stays out
