"""Property-based tests: the diff mapping against git itself, suppressions, fingerprints."""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rltrefactor.change.changeset import collect_changes
from rltrefactor.config import Config
from rltrefactor.matching.engine import Engine, select_rules
from rltrefactor.library.loader import load_library
from rltrefactor.source.directives import parse_suppressions

_LINES = st.lists(st.sampled_from(["a = 1", "b = 2", "c = 3", "", "def f():", "    return 0", "x = a + b"]), max_size=14)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=_LINES, new=_LINES)
def test_added_lines_match_git_blame(repo, old, new):
    """Lines ``git blame`` attributes to the head commit are exactly the added lines."""
    repo.write("f.py", "\n".join(old) + "\n")
    base = repo.commit("old")
    repo.write("f.py", "\n".join(new) + "\n")
    head = repo.commit("new")
    change = collect_changes(str(repo.path), diff=f"{base}..{head}")
    ours = {line for f in change.files if f.path == "f.py" for line in f.added_lines}
    blame = repo.git("blame", "--porcelain", head, "--", "f.py") if new or old else ""
    oracle = set()
    for row in blame.splitlines():
        parts = row.split()
        if len(parts) >= 3 and len(parts[0]) == 40 and parts[0] == head:
            oracle.add(int(parts[2]))
    assert ours == oracle


_IDS = st.lists(st.text(alphabet=string.ascii_lowercase + "-", min_size=1, max_size=12).filter(lambda s: s.strip("-")), min_size=1, max_size=3)
_REASON = st.text(alphabet=string.ascii_letters + " ,.'", min_size=1, max_size=30).filter(lambda s: s.strip(" -"))


@given(ids=_IDS, reason=_REASON)
def test_directive_round_trips(ids, reason):
    line = f"x = 1  # rltrefactor: ignore[{', '.join(ids)}] {reason}\n"
    found = parse_suppressions(line)[1]
    assert list(found.rule_ids) == [i.strip() for i in ids]
    assert found.reason == reason.strip() and found.problem == ""


@given(before=st.text(alphabet=string.ascii_letters + " ", min_size=1, max_size=30).filter(lambda s: s.strip()), ids=_IDS)
def test_prose_mentioning_the_directive_never_suppresses(before, ids):
    line = f"x = 1  # {before} rltrefactor: ignore[{', '.join(ids)}] because\n"
    assert parse_suppressions(line) == {}


@pytest.fixture(scope="module")
def engine():
    library = load_library()
    config = Config(select=("host-sync-in-hot-path",))
    return Engine(select_rules(library, config), config, frozenset(r.id for r in library.rules))


_BODY = "def forward(self, x):\n    y = x * 2\n    return {name}.sum().item()\n"


@settings(max_examples=40, deadline=None)
@given(shift=st.integers(0, 30), indent=st.sampled_from(["", "    "]), name=st.sampled_from(["y", "x"]))
def test_fingerprints_survive_shifts_and_reindentation_but_not_code_changes(engine, shift, indent, name):
    reference = engine.review_file("model_executor/m.py", _BODY.format(name=name)).findings
    body = _BODY.format(name=name)
    if indent:
        body = body.replace("    return", "    with torch.no_grad():\n        return")
    moved = engine.review_file("model_executor/m.py", "\n" * shift + "# moved\n" + body).findings
    assert [f.fingerprint for f in moved] == [f.fingerprint for f in reference]
    other = "x" if name == "y" else "y"
    changed = engine.review_file("model_executor/m.py", _BODY.format(name=other)).findings
    assert changed[0].fingerprint != reference[0].fingerprint
