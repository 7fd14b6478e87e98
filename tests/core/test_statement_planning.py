"""Planning below the statement level: what statement-local rules leave unparsed.

Unit tests pin the region texts. The equivalence tests run each rule alone, and then
the whole library, over torch's own sources twice, once with every rule treated as
reading whole functions, and demand the same findings: emptied statements must never
change what a rule reports. Each directory's files, by size, alternate between the two
checks (the rule-by-rule one runs once per rule): every file of the class-heavy corpora is
checked once, and every other file of dynamo's.
"""

from __future__ import annotations

import os
from pathlib import Path

import libcst as cst
import pytest

from rltrefactor.config import Config
from rltrefactor.context.filemodel import FileModel
from rltrefactor.matching.engine import Engine
from rltrefactor.library.loader import load_library
from rltrefactor.matching.matchers.context import is_setup_name
from rltrefactor.matching.matchers.registry import build_matcher
from rltrefactor.matching.prefilter import Prefilter
from rltrefactor.matching.regions.plan import plan_regions
from rltrefactor.matching.regions.reach import MatcherReach
from rltrefactor.matching.regions.statements import line_range, statement_nodes
from rltrefactor.source.syntax import parse_tree


def _rule(tokens: Prefilter, **reach) -> tuple[Prefilter, MatcherReach]:
    return tuple(tokens), MatcherReach(**reach)


def _rows(text: str, reach: dict[str, tuple[Prefilter, MatcherReach]], keep_method=is_setup_name) -> dict[int, str]:
    """File line -> planned text, for every planned line; an emptied line, left out of
    the region's text, reads as empty."""
    rows: dict[int, str] = {}
    for region in plan_regions(text, parse_tree(text), reach, lines=None, keep_method=keep_method):
        cst.parse_module(region.text)  # every region must stay valid Python
        numbers = region.file_lines or range(region.start_line, region.end_line + 1)
        kept = region.text.split("\n")[:-1]
        assert len(kept) == len(numbers) and list(numbers) == sorted(numbers)
        rows.update((line, "") for line in range(region.start_line, region.end_line + 1))
        rows.update(zip(numbers, kept))
    return rows


FUNCTION = """\
def step(self, batch):
    import torch
    sizes = [len(x) for x in batch]
    total = sum(sizes)
    value = total.item()
    return value
"""


def test_a_header_rule_keeps_only_the_statements_holding_its_tokens():
    rows = _rows(FUNCTION, {"sync": _rule((".item(",), reads="header")})
    assert rows[5] == "    value = total.item()"
    assert rows[3] == rows[4] == rows[6] == ""  # emptied, line numbers kept
    assert rows[1].startswith("def step") and rows[2] == "    import torch"  # imports resolve names


def test_a_rule_reading_whole_functions_keeps_them_whole():
    rows = _rows(FUNCTION, {"sync": _rule((".item(",), reads="header"), "wide": _rule(("return",))})
    assert rows[3] == "    sizes = [len(x) for x in batch]" and rows[6] == "    return value"


def test_a_block_left_without_statements_keeps_a_pass():
    text = "def f(use_x: bool = False):\n    a = 1\n    b = 2\n"
    rows = _rows(text, {"flag": _rule(("bool",), reads="header")})
    assert rows[2] == "    pass" and rows[3] == ""


TRY = """\
def close(self):
    a = 1
    try:
        self.pool.free()
        log = 2
    except Exception:
        pass
    b = 3
"""


def test_a_statement_rule_with_a_token_in_a_header_reads_the_whole_statement():
    rows = _rows(TRY, {"swallow": _rule(("except Exception",), reads="statement")})
    assert rows[4] == "        self.pool.free()" and rows[5] == "        log = 2"
    assert rows[2] == rows[8] == ""


def test_a_header_rule_opens_compound_statements():
    rows = _rows(TRY, {"free": _rule((".free(",), reads="header")})
    assert rows[4] == "        self.pool.free()"
    assert rows[5] == "" and rows[7] == "        pass"  # the handler body keeps a statement
    assert rows[3] == "    try:" and rows[6] == "    except Exception:"


def test_statements_sharing_a_line_are_never_emptied():
    text = "def f(x):\n    a = 1; b = x.item()\n    if x: c = x.item()\n    d = 3  # trailing\n"
    rows = _rows(text, {"sync": _rule((".item(",), reads="header")})
    assert rows[2] == "    a = 1; b = x.item()"
    assert rows[3] == "    if x: c = x.item()"  # one-liner: its body shares the header's line
    assert rows[4] == ""  # a trailing comment goes with its statement


def test_companions_keep_what_a_rule_reads_besides_its_tokens():
    text = "def f(self):\n    own = make()\n    other = 1\n    own._x = 2\n"
    reach = _rule(("._x =",), reads="header", companions=lambda line: ["own"] if "own._x" in line else [])
    rows = _rows(text, {"foreign": reach})
    assert rows[2] == "    own = make()" and rows[3] == ""


CLASS = """\
class Runner:
    \"\"\"Docs.\"\"\"

    limit = 4

    def __init__(self):
        self._buf = None
        self.size = 0

    def idle(self):
        return 1

    def step(self, x):
        y = 1
        return x.item()
"""


def test_class_bodies_and_setup_methods_are_emptied_around_local_tokens():
    rows = _rows(CLASS, {"sync": _rule((".item(",), reads="header")})
    assert rows[2] == rows[4] == ""  # docstring and class attribute: no token
    assert rows[6] == "    def __init__(self):" and rows[7] == "        pass"  # setup header kept
    assert rows[10] == rows[11] == ""  # an idle method disappears
    assert rows[14] == "" and rows[15] == "        return x.item()"


def test_setup_methods_stay_whole_for_rules_reading_whole_functions():
    rows = _rows(CLASS, {"wide": _rule((".item(",))})
    assert rows[7] == "        self._buf = None" and rows[4] == "    limit = 4"


def test_carriage_returns_survive_emptying():
    text = FUNCTION.replace("\n", "\r\n")
    rows = _rows(text, {"sync": _rule((".item(",), reads="header")})
    assert rows[3] == "" and rows[5] == "    value = total.item()\r"  # emptied lines are left out


class _ReadsWholeFunctions:
    """A matcher as it was before statement planning: no ``reads``, no companions."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.rule_id = inner.rule_id
        self.prefilter = inner.prefilter
        self.reach = MatcherReach(whole_class=inner.reach.whole_class, never_in_setup=inner.reach.never_in_setup)

    def find(self, ctx):
        return self.inner.find(ctx)


torch = pytest.importorskip("torch")
TORCH = Path(torch.__file__).parent
# Class-heavy code: modules, optimizers, FSDP wrappers, data loaders.
CORPORA = ("nn/modules", "optim", "distributed/fsdp", "utils/data")


def _read(directories, half: int) -> list[tuple[str, str]]:
    """Alternate files of each directory, largest first: ``half`` 0 or 1 picks which."""
    picked = []
    for directory in directories:
        paths = sorted((TORCH / directory).glob("*.py"), key=lambda path: (-path.stat().st_size, path.name))
        picked += [(os.path.relpath(path, TORCH.parent), path.read_text()) for path in paths[half::2]]
    return picked


@pytest.fixture(scope="module")
def corpus() -> list[tuple[str, str]]:
    return _read(CORPORA, 1)


EVERYWHERE_HOT = Config(hot_paths=("**",))  # hot-path rules apply everywhere


@pytest.fixture(scope="module")
def models(corpus) -> dict[str, FileModel]:
    maker = Engine((), EVERYWHERE_HOT, frozenset())
    return {path: maker.model(path, text) for path, text in corpus}


def _findings(engine: Engine, corpus, models: dict[str, FileModel] | None = None) -> tuple[set, int]:
    """``models``: each file's model by path, made once for engines of one configuration
    (a model depends on the text and the configuration, not on the rules)."""
    found, parsed = set(), 0
    for path, text in corpus:
        outcome = engine.review_file(path, text, model=models[path] if models is not None else None)
        found |= {(f.rule_id, f.path, f.span.line, f.span.column) for f in outcome.findings}
        found |= {("error", e.path, e.line, e.message) for e in outcome.errors}
        parsed += outcome.parsed_lines
    return found, parsed


LIBRARY = load_library()
AUTOMATED = [rule for rule in LIBRARY.rules if rule.status != "retired" and rule.automated]


@pytest.mark.parametrize("rule", AUTOMATED, ids=lambda rule: rule.id)
def test_statement_planning_changes_no_finding_of_any_rule_on_real_code(rule, corpus, models):
    """Each rule alone, so that one rule's tokens never keep what another needs."""
    known = frozenset(r.id for r in LIBRARY.rules)
    planned, planned_lines = _findings(Engine((rule,), EVERYWHERE_HOT, known), corpus, models)
    whole_engine = Engine((rule,), EVERYWHERE_HOT, known, matcher_factory=lambda r: _ReadsWholeFunctions(build_matcher(r)))
    whole, whole_lines = _findings(whole_engine, corpus, models)
    assert planned == whole
    assert planned_lines <= whole_lines


def test_the_whole_library_at_once_has_findings_and_savings_to_compare():
    corpus = _read(CORPORA, 0)
    rules = tuple(AUTOMATED)
    known = frozenset(r.id for r in LIBRARY.rules)
    planning = Engine(rules, EVERYWHERE_HOT, known)
    models = {path: planning.model(path, text) for path, text in corpus}
    planned, planned_lines = _findings(planning, corpus, models)
    whole_engine = Engine(rules, EVERYWHERE_HOT, known, matcher_factory=lambda r: _ReadsWholeFunctions(build_matcher(r)))
    whole, whole_lines = _findings(whole_engine, corpus, models)
    assert planned == whole and len(planned) > 100
    assert planned_lines < 0.9 * whole_lines


def test_a_review_limited_to_changed_lines_finds_what_a_whole_review_finds_there(corpus):
    """A diff review searches tokens only in the stretch of the file it touches: the
    touched members (hits kept anywhere in a changed function) or the headers around
    the changed lines (hits kept where they touch one)."""
    engine = Engine(tuple(AUTOMATED), EVERYWHERE_HOT, frozenset(r.id for r in LIBRARY.rules))
    compared = touching_compared = 0
    for path, text in sorted(corpus, key=lambda item: -len(item[1]))[:5]:
        statements = [line_range(node) for node in statement_nodes(parse_tree(text))]
        whole = engine.review_file(path, text).findings
        # Three statements holding findings, spread over the file, one by one and then at once.
        holding = sorted({s for f in whole for s in statements if s[0] <= f.span.line <= s[1]})
        picks = sorted({holding[0], holding[len(holding) // 2], holding[-1]}) if holding else []
        for chosen in [[pick] for pick in picks] + [picks]:
            lines = frozenset(first for first, _ in chosen)
            inside = lambda f: any(first <= f.span.line <= last for first, last in chosen)  # noqa: E731
            limited = engine.review_file(path, text, lines, kept_on_lines=False).findings
            assert sorted(map(repr, filter(inside, limited))) == sorted(map(repr, filter(inside, whole)))
            compared += sum(map(inside, whole))
        # Lines inside findings (first, last or a middle one) and lines spread over the file.
        lines = frozenset(
            [f.span.line + (i % 3) * (f.span.end_line - f.span.line) // 2 for i, f in enumerate(whole)]
            + list(range(1, text.count("\n"), 37))
        )
        touching = lambda f: any(line in lines for line in range(f.span.line, f.span.end_line + 1))  # noqa: E731
        limited = engine.review_file(path, text, lines).findings
        assert sorted(map(repr, filter(touching, limited))) == sorted(map(repr, filter(touching, whole)))
        touching_compared += sum(map(touching, whole))
    assert compared > 0 and touching_compared > 0


COMMENTED = """\
def step(self, batch):
    # how the batch is laid out
    sizes = [len(x) for x in batch]
    value = sizes.item()  # one sync
        # an over-indented comment
    return value
"""


def test_comment_lines_are_left_out_where_statements_are_emptied_and_kept_in_whole_functions():
    rows = _rows(COMMENTED, {"sync": _rule((".item(",), reads="header")})
    assert rows[2] == rows[5] == "" and rows[3] == ""
    assert rows[4] == "    value = sizes.item()  # one sync"  # a comment beside code stays with it
    whole = _rows(COMMENTED, {"sync": _rule((".item(",), reads="function")})
    assert whole[2] == "    # how the batch is laid out" and whole[5] == "        # an over-indented comment"
