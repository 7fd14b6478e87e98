"""Many files: the process pool and the cache give the same outcomes as one process."""

from __future__ import annotations

from rltrefactor.cache import ResultCache
from rltrefactor.config import Config
from rltrefactor.engine import Engine, select_rules
from rltrefactor.library.loader import load_library
from rltrefactor.executor import review_files


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
