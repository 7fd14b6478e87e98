"""A hit's identity: rule, definition, matched code, the conditions around it, and its
occurrence; never a line number. Moving, re-indenting and re-wrapping keep it; changing
the chain of conditions around the code does not."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rltrefactor.config import Config
from rltrefactor.matching.engine import Engine, select_rules
from rltrefactor.library.loader import load_library
from rltrefactor.matching.rule_findings import guards_at
from rltrefactor.source.syntax import parse_tree

HOT = "model_executor/runner.py"
HIT = "lens_cpu = lens.to('cpu')"
CONDITIONS = ("lens is None", "flag", "not ready", "n > 0", "self.enabled")
# Guards as (header lines, indentation of their body); an ``else`` needs its ``if`` first.
KINDS = ("if", "else", "try", "except", "for", "while")


@pytest.fixture(scope="module")
def engine():
    library = load_library()
    config = Config(select=("host-sync-in-hot-path",))
    return Engine(select_rules(library, config), config, frozenset(r.id for r in library.rules))


def _wrap(body: list[str], kind: str, condition: str) -> list[str]:
    inner = ["    " + line for line in body]
    if kind == "if":
        return [f"if {condition}:", *inner]
    if kind == "else":
        return [f"if {condition}:", "    pass", "else:", *inner]
    if kind == "try":
        return ["try:", *inner, "except ValueError:", "    pass"]
    if kind == "except":
        return ["try:", "    pass", "except ValueError:", *inner]
    if kind == "for":
        return [f"for _ in range({len(condition)}):", *inner]
    return [f"while {condition}:", *inner, "    break"]


def _source(chain: list[tuple[str, str]], *, hit: str = HIT, before: int = 0, with_block: bool = False) -> str:
    body = [hit]
    if with_block:
        body = ["with torch.no_grad():", *("    " + line for line in body)]
    for kind, condition in chain:
        body = _wrap(body, kind, condition)
    lines = ["import torch", "", "", "def sample(lens, flag, ready, n):"]
    lines += [f"    pad_{i} = {i}" for i in range(before)]
    lines += ["    " + line for line in body] + ["    return lens_cpu", ""]
    return "\n".join(lines)


def _identity(engine, text: str) -> str:
    (finding,) = [f for f in engine.review_file(HOT, text).findings if f.rule_id == "host-sync-in-hot-path"]
    return finding.fingerprint


chains = st.lists(st.tuples(st.sampled_from(KINDS), st.sampled_from(CONDITIONS)), max_size=3)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(chain=chains, before=st.integers(0, 4), wrapped=st.booleans(), with_block=st.booleans())
def test_moving_reindenting_and_rewrapping_keep_the_identity(engine, chain, before, wrapped, with_block):
    hit = "lens_cpu = lens.to(\n    'cpu',\n)" if wrapped else HIT
    moved = _source(chain, hit=hit, before=before, with_block=with_block)
    assert _identity(engine, _source(chain)) == _identity(engine, moved)


@SETTINGS
@given(chain=chains.filter(bool), data=st.data())
def test_changing_the_chain_of_conditions_changes_the_identity(engine, chain, data):
    index = data.draw(st.integers(0, len(chain) - 1))
    removed = chain[:index] + chain[index + 1:]
    kind, condition = chain[index]
    other = data.draw(st.sampled_from([c for c in CONDITIONS if c != condition]))
    changed = chain[:index] + [(kind, other)] + chain[index + 1:]
    original = _identity(engine, _source(chain))
    assert _identity(engine, _source(removed)) != original
    if kind not in ("try", "except", "for"):  # their headers hold no condition of ours
        assert _identity(engine, _source(changed)) != original


def test_guards_name_the_if_of_an_else_and_stop_at_the_definition():
    text = _source([("else", "lens is None"), ("try", "")])
    line = text.split("\n").index("            " + HIT) + 1
    assert guards_at(parse_tree(text), line, 12) == ("else :", "if lens is None :", "try :")
    assert guards_at(parse_tree("def f():\n    " + HIT + "\n"), 2, 4) == ()
