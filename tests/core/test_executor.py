"""Many files: the process pool and the cache give the same outcomes as one process."""

from __future__ import annotations

from rltrefactor.matching.cache import ResultCache
from rltrefactor.config import Config
from rltrefactor.matching.engine import Engine, select_rules
from rltrefactor.library.loader import load_library
from rltrefactor.matching.executor import review_files


def _engine():
    library = load_library()
    config = Config()
    return Engine(select_rules(library, config), config, frozenset(r.id for r in library.rules))


def _texts(count: int) -> dict[str, str]:
    return {
        f"model_executor/m{i}.py": f"def forward(x):\n    y = x + {i}\n    return y.sum().item()\n"
        for i in range(count)
    }


def _summary(outcomes):
    return {path: [(f.rule_id, f.span.line) for f in o.findings] for path, o in outcomes.items()}


def test_pool_matches_single_process():
    engine, texts = _engine(), _texts(30)
    single = review_files(engine, texts, cache=None, jobs=1)
    pooled = review_files(engine, texts, cache=None, jobs=2)
    assert _summary(pooled) == _summary(single)
    assert all(findings == [("host-sync-in-hot-path", 3)] for findings in _summary(single).values())


def test_cache_hit_returns_the_same_findings_and_respects_content(tmp_path):
    engine, texts = _engine(), _texts(3)
    cache = ResultCache(str(tmp_path), "ctx")
    cold = review_files(engine, texts, cache=cache, jobs=1)
    assert len(list(tmp_path.rglob("*.json"))) == 3
    warm = review_files(engine, texts, cache=cache, jobs=1)
    assert _summary(warm) == _summary(cold)
    assert warm["model_executor/m0.py"].findings == cold["model_executor/m0.py"].findings
    changed = dict(texts, **{"model_executor/m0.py": "def forward(x):\n    return x\n"})
    assert _summary(review_files(engine, changed, cache=cache, jobs=1))["model_executor/m0.py"] == []


def test_other_context_misses(tmp_path):
    engine, texts = _engine(), _texts(1)
    review_files(engine, texts, cache=ResultCache(str(tmp_path), "library A"), jobs=1)
    other = ResultCache(str(tmp_path), "library B")
    assert other.get("model_executor/m0.py", texts["model_executor/m0.py"]) is None


def test_partial_outcomes_are_not_cached(tmp_path):
    engine, texts = _engine(), _texts(1)
    cache = ResultCache(str(tmp_path), "ctx")
    review_files(engine, texts, cache=cache, jobs=1, lines={"model_executor/m0.py": frozenset({3})})
    assert list(tmp_path.rglob("*.json")) == []


class _Silent:
    """A test double: a matcher that never reports."""

    prefilter = ()

    def __init__(self):
        from rltrefactor.matching.regions.reach import MatcherReach

        self.reach = MatcherReach()

    def find(self, ctx):
        return iter(())


def _every_finding(outcomes):
    return sorted((path, f.rule_id, f.span.line, f.span.column, f.fingerprint, f.impact)
                  for path, o in outcomes.items() for f in o.findings)


def test_workers_review_with_the_engine_they_are_given():
    library = load_library()
    config = Config()
    rules = select_rules(library, config)
    engine = Engine(rules, config, frozenset(r.id for r in library.rules),
                    matchers={rule.id: _Silent() for rule in rules})
    texts = _texts(30)
    single = review_files(engine, texts, cache=None, jobs=1)
    pooled = review_files(engine, texts, cache=None, jobs=2)
    assert _every_finding(single) == [] and _every_finding(pooled) == []


LOCAL_RULE = """\
area: lifecycle
rules:
  - id: local-item-read
    title: Item read
    status: active
    since: 0.1.0
    severity: warning
    confidence: high
    problem: p
    preferred: p
    exceptions: e
    impact: reads `$X`
    fix: f
    fix-safety: manual
    matcher:
      pattern: "$X.item()"
    examples:
      - bad: |
          y = x.item()  # expect
        good: |
          y = x
"""


def test_workers_find_what_one_process_finds_with_repository_local_rules(tmp_path):
    (tmp_path / "lifecycle.yaml").write_text(LOCAL_RULE)
    library = load_library([str(tmp_path)])
    config = Config(rule_dirs=(str(tmp_path),))
    engine = Engine(select_rules(library, config), config, frozenset(r.id for r in library.rules))
    texts = _texts(30)
    single = review_files(engine, texts, cache=None, jobs=1)
    pooled = review_files(engine, texts, cache=None, jobs=2)
    assert _every_finding(pooled) == _every_finding(single)
    assert {rule for _, rule, *_ in _every_finding(single)} == {"host-sync-in-hot-path", "local-item-read"}


class _TypesRunningOut:
    """A test double of the type engine: answers nothing, and turns off at the first
    question about a file past its first ``files`` in a process, as the real one does past
    its time budget."""

    def __init__(self, files: int):
        self.files = files
        self.asked: set[str] = set()
        self.unavailable: str | None = None

    def type_at(self, path, text, line, column):
        self.asked.add(path)
        if len(self.asked) > self.files:
            self.turn_off("out of time (300 s of questions in one review)")
        return None

    def turn_off(self, why):
        self.unavailable = why


def test_a_type_engine_that_turns_off_in_a_worker_turns_the_review_off_and_keeps_nothing_it_matched(tmp_path):
    engine, texts = _engine(), _texts(30)
    engine.type_engine = _TypesRunningOut(files=0)
    cache = ResultCache(str(tmp_path), "types on")
    pooled = review_files(engine, texts, cache=cache, jobs=2)
    assert engine.type_engine.unavailable == "out of time (300 s of questions in one review)"
    assert list(tmp_path.rglob("*.json")) == []
    assert all(findings == [("host-sync-in-hot-path", 3)] for findings in _summary(pooled).values())


def test_one_process_keeps_what_it_matched_before_its_type_engine_turned_off(tmp_path):
    engine, texts = _engine(), _texts(3)
    engine.type_engine = _TypesRunningOut(files=1)  # a question about the second file turns it off
    cache = ResultCache(str(tmp_path), "types on")
    review_files(engine, texts, cache=cache, jobs=1)
    assert engine.type_engine.unavailable is not None
    assert len(list(tmp_path.rglob("*.json"))) == 1


def test_a_type_engine_that_stays_on_keeps_every_outcome(tmp_path):
    engine, texts = _engine(), _texts(30)
    engine.type_engine = _TypesRunningOut(files=30)
    review_files(engine, texts, cache=ResultCache(str(tmp_path), "types on"), jobs=2)
    assert engine.type_engine.unavailable is None
    assert len(list(tmp_path.rglob("*.json"))) == 30
