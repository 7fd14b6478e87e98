"""The engine on single files: regions, aliases, lines and per-file errors."""

from __future__ import annotations

import pytest

from rltrefactor.config import Config
from rltrefactor.matching.engine import Engine, select_rules
from rltrefactor.matching.rule_findings import fingerprint
from rltrefactor.library.loader import load_library

HOT = "model_executor/runner.py"


@pytest.fixture(scope="module")
def engine():
    library = load_library()
    config = Config(select=("host-sync-in-hot-path", "device-synchronize-in-hot-path"))
    return Engine(select_rules(library, config), config, frozenset(r.id for r in library.rules))


def _rules(outcome):
    return [(f.rule_id, f.span.line) for f in outcome.findings]


def test_aliased_import_is_followed_into_the_region(engine):
    text = "from torch.cuda import synchronize as sync\n\n\ndef forward(x):\n    sync()\n    return x\n"
    assert _rules(engine.review_file(HOT, text)) == [("device-synchronize-in-hot-path", 5)]


def test_module_alias(engine):
    text = "import torch as th\n\n\ndef forward(x):\n    th.cuda.synchronize()\n    return x\n"
    assert _rules(engine.review_file(HOT, text)) == [("device-synchronize-in-hot-path", 5)]


def test_file_without_tokens_is_not_parsed(engine):
    outcome = engine.review_file(HOT, "def forward(x):\n    return x + 1\n")
    assert outcome.findings == () and outcome.parsed is False


def test_lines_outside_the_change_are_not_matched(engine):
    text = "def forward(x):\n    return x.item()\n\n\ndef other():\n    return 2\n"
    assert _rules(engine.review_file(HOT, text, frozenset({6}))) == []
    assert _rules(engine.review_file(HOT, text, frozenset({2}))) == [("host-sync-in-hot-path", 2)]


def test_syntax_error_elsewhere_is_reported_with_its_line(engine):
    text = "def forward(x):\n    return x.item()\n\n\ndef broken(:\n    pass\n"
    outcome = engine.review_file(HOT, text)
    assert [(e.line, e.syntax, e.message.startswith("syntax error")) for e in outcome.errors] == [(5, True, True)]


def test_syntax_error_in_a_file_without_candidates_is_still_reported(engine):
    outcome = engine.review_file(HOT, "x = (\n")
    assert len(outcome.errors) == 1 and outcome.errors[0].line is not None


def test_deep_nesting_does_not_crash(engine):
    text = "def forward(x):\n    return " + "(" * 400 + "x.item()" + ")" * 400 + "\n"
    outcome = engine.review_file(HOT, text)
    assert outcome.errors or outcome.findings  # reported either way, never raised


def test_fingerprint_ignores_whitespace_and_lines_but_not_code():
    assert fingerprint("r", "f", "x.item()") == fingerprint("r", "f", "x.item( )".replace("( )", "()"))
    assert fingerprint("r", "f", "a +\n    b") == fingerprint("r", "f", "a + b")
    assert fingerprint("r", "f", "x.item()") != fingerprint("r", "f", "y.item()")
    assert fingerprint("r", "f", "x.item()") != fingerprint("r", "g", "x.item()")



def test_fingerprints_survive_re_wrapping_over_lines():
    one_line = fingerprint("r", "f", "torch.tensor([n, m], device=dev)")
    assert fingerprint("r", "f", "torch.tensor(\n    [n, m],\n    device=dev,\n)") == one_line
    assert fingerprint("r", "f", "torch.tensor([n, m],\n             device=dev)") == one_line
    assert fingerprint("r", "f", "total = a + \\\n    b") == fingerprint("r", "f", "total = a + b")
    assert fingerprint("r", "f", "torch.tensor([n, m], device=cpu)") != one_line


def test_a_change_is_matched_only_where_a_kept_hit_could_touch_it(engine):
    text = "def forward(x):\n    y = x.sum().item()\n    z = 1\n    return y + z\n"
    # Line 3 holds no token, nor do the headers around it: a hit of these rules lies in
    # the statement holding its token, so none could touch line 3. Nothing is parsed.
    quiet = engine.review_file(HOT, text, frozenset({3}))
    assert quiet.findings == () and quiet.parsed_lines == 0
    # When hits anywhere in a changed function are kept, the function is matched.
    assert _rules(engine.review_file(HOT, text, frozenset({3}), kept_on_lines=False)) == [("host-sync-in-hot-path", 2)]
    assert _rules(engine.review_file(HOT, text, frozenset({2}))) == [("host-sync-in-hot-path", 2)]


class _EveryItem:
    """A test double that reports every ``.item()`` call, wherever it is."""

    prefilter = ("item",)

    def __init__(self):
        from rltrefactor.matching.regions.reach import MatcherReach

        self.reach = MatcherReach()

    def find(self, ctx):
        import libcst as cst

        from rltrefactor.matching.matchers.base import Match

        for call in ctx.nodes(cst.Call):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "item":
                yield Match(call, {})


COLD_PLACES = """\
class Runner:
    def __init__(self, x):
        self.n = x.item()

    def step(self, x):
        logger.info("n=%d", x.item())
        if not self._initialized:
            self.n = x.item()
        if TYPE_CHECKING:
            x.item()
        return x.item()
"""


@pytest.mark.parametrize(("per_step", "lines"), [(True, [11]), (False, [3, 6, 8, 10, 11])])
def test_the_engine_alone_leaves_out_cold_code_of_per_step_rules(per_step, lines):
    from dataclasses import replace

    library = load_library()
    rule = next(r for r in library.rules if r.id == "host-sync-in-hot-path")
    rule = replace(rule, applicability=replace(rule.applicability, per_step=per_step))
    engine = Engine((rule,), Config(), frozenset({rule.id}), matchers={rule.id: _EveryItem()})
    assert [f.span.line for f in engine.review_file(HOT, COLD_PLACES).findings] == lines
