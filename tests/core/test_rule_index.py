"""The compiled rule index: a review starts from saved summaries, compiles a matcher only
when its tokens select code, and never imports LibCST when nothing is parsed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rltrefactor.matching import rule_index
from rltrefactor.config import Config
from rltrefactor.matching.engine import Engine, select_rules
from rltrefactor.matching.rule_index import DeferredMatcher, FunctionRef, load_rules

from gitrepo import GitRepo

HOT = "def step(batch):\n    return batch.sum().item()\n"


@pytest.fixture
def index_dir(tmp_path, monkeypatch):
    directory = tmp_path / "index"
    monkeypatch.setattr(rule_index, "_index_dirs", lambda: [directory])
    return directory


def _findings(library, matchers, text=HOT, path="engine/runner.py"):
    engine = Engine(select_rules(library, Config()), Config(), frozenset(), matchers=matchers)
    return [(f.rule_id, f.span.line) for f in engine.review_file(path, text).findings]


def test_a_second_load_starts_from_the_index_and_finds_the_same(index_dir):
    library, compiled = load_rules()
    assert list(index_dir.glob("library-index.*.pickle"))  # written by the first load
    assert not any(isinstance(m, DeferredMatcher) for m in compiled.values())
    again, deferred = load_rules()
    assert again == library and deferred.keys() == compiled.keys()
    assert all(isinstance(m, DeferredMatcher) for m in deferred.values())
    for rule_id, matcher in deferred.items():
        assert matcher.prefilter == tuple(compiled[rule_id].prefilter)
    found = _findings(again, deferred)
    assert ("host-sync-in-hot-path", 2) in found
    assert found == _findings(library, compiled)


def test_a_deferred_matcher_is_compiled_on_its_first_match_only(index_dir):
    load_rules()
    library, deferred = load_rules()
    _findings(library, deferred, text="def step(batch):\n    return batch\n")
    assert all(m._matcher is None for m in deferred.values())  # nothing selected: nothing compiled
    _findings(library, deferred)
    assert deferred["host-sync-in-hot-path"]._matcher is not None


def test_a_damaged_index_is_loaded_afresh_and_replaced(index_dir):
    load_rules()
    (saved,) = index_dir.glob("library-index.*.pickle")
    saved.write_bytes(b"not a pickle")
    library, matchers = load_rules()
    assert not any(isinstance(m, DeferredMatcher) for m in matchers.values())
    assert ("host-sync-in-hot-path", 2) in _findings(library, matchers)
    assert saved.read_bytes() != b"not a pickle"


def test_an_unwritable_index_directory_costs_only_speed(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setattr(rule_index, "_index_dirs", lambda: [blocked / "index"])
    library, matchers = load_rules()
    assert ("host-sync-in-hot-path", 2) in _findings(library, matchers)


def test_local_rule_dirs_are_compiled_every_time(index_dir, tmp_path):
    local = tmp_path / "rules"
    local.mkdir()
    _, matchers = load_rules([str(local)])
    assert not any(isinstance(m, DeferredMatcher) for m in matchers.values())
    assert not index_dir.exists()


def test_companions_are_saved_by_name_and_imported_when_called():
    ref = FunctionRef("rltrefactor.matching.matchers.companions", "written_self_names")
    assert list(ref("self._x = 1\n")) == ["_x"]
    assert rule_index._function_ref(lambda text: [text]) is None  # not a module-level function


_PROBE = """
import json, sys
from rltrefactor.api import ReviewRequest, review
result = review(ReviewRequest(repo=sys.argv[1], diff="HEAD~1..HEAD", use_cache=False, jobs=1))
print(json.dumps({"libcst": "libcst" in sys.modules, "findings": [f.rule_id for f in result.findings]}))
"""


def _review_in_fresh_process(repo: Path) -> dict[str, object]:
    source = Path(__file__).resolve().parents[2] / "src"
    done = subprocess.run([sys.executable, "-c", _PROBE, str(repo)], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(source), "PATH": "/usr/bin:/bin"})
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_a_review_that_parses_nothing_never_imports_libcst(tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.write("engine/runner.py", HOT + "\n\ndef log(message):\n    print(message)\n")
    repo.commit("base")
    repo.write("engine/runner.py", HOT + "\n\ndef log(message):\n    print(message, flush=True)\n")
    repo.commit("head")
    _review_in_fresh_process(repo.path)  # writes the index when there is none yet
    assert _review_in_fresh_process(repo.path) == {"libcst": False, "findings": []}
    # A change that a rule's tokens select is parsed, and its finding reported.
    repo.write("engine/runner.py", HOT.replace("batch.sum()", "batch.max()") + "\n\ndef log(message):\n    print(message, flush=True)\n")
    repo.commit("hot change")
    assert _review_in_fresh_process(repo.path) == {"libcst": True, "findings": ["host-sync-in-hot-path"]}
