"""Running the engine over many files: cache first, then one or more processes."""

from __future__ import annotations

import os
from typing import Callable

from .cache import ResultCache
from .engine import Engine
from ..types import FileOutcome

# Below this many uncached files a pool costs more to start than it saves.
_POOL_MIN_FILES = 24
_CHUNKS_PER_JOB = 12
_worker_engine: Engine | None = None
# What a worker reviews: path, text, changed lines (None: whole file), kept_on_lines.
_Item = tuple[str, str, frozenset[int] | None, bool]


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def review_files(
    engine: Engine,
    texts: dict[str, str],
    *,
    cache: ResultCache | None,
    jobs: int,
    lines: dict[str, frozenset[int]] | None = None,
    kept_on_lines: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, FileOutcome]:
    """Outcomes per path. With ``lines``, each file is matched only around its changed
    lines (see ``Engine.review_file`` for ``kept_on_lines``); such partial outcomes are
    never cached, but a cached whole-file one is used."""
    outcomes: dict[str, FileOutcome] = {}
    todo: list[str] = []
    for path, text in texts.items():
        cached = cache.get(path, text, salt=engine.context_digest(path)) if cache is not None else None
        if cached is not None and engine.still_holds(cached):
            outcomes[path] = cached
        else:
            todo.append(path)
    limits = lines or {}
    report = progress or (lambda done, total: None)
    # Outcomes matched after the type engine turned off mid-review: their cache key says
    # it was on, so they are not kept.
    degraded: set[str] = set()
    if jobs > 1 and len(todo) >= _POOL_MIN_FILES and _can_fork():
        fresh = _in_pool(engine, [(p, texts[p], limits.get(p), kept_on_lines) for p in todo], jobs, report, degraded)
    else:
        fresh = {}
        was_on = _types_on(engine)
        for done, path in enumerate(todo, start=1):
            fresh[path] = engine.review_file(path, texts[path], limits.get(path), kept_on_lines=kept_on_lines)
            if was_on and not _types_on(engine):
                degraded.add(path)
            report(done, len(todo))
    for path, outcome in fresh.items():
        if cache is not None and path not in limits and path not in degraded and not outcome.errors:
            cache.put(path, texts[path], outcome, salt=engine.context_digest(path))
        outcomes[path] = outcome
    return outcomes


def _types_on(engine: Engine) -> bool:
    return engine.type_engine is not None and engine.type_engine.unavailable is None


def _in_pool(
    engine: Engine, items: list[_Item], jobs: int, report: Callable[[int, int], None], degraded: set[str],
) -> dict[str, FileOutcome]:
    """Outcomes of ``items`` from forked workers. A worker whose type engine turns off
    says why; the first reason turns this engine off too, so that the review reports it,
    and the paths of each chunk a worker finished with its engine off go to ``degraded``."""
    # Imported here: a review of a few files never starts a pool.
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    # Largest files first, in many small chunks handed out as workers free up, so that
    # no worker is left with a big file while the other idles.
    items.sort(key=lambda item: -len(item[1]))
    size = max(1, len(items) // (jobs * _CHUNKS_PER_JOB))
    chunks = [items[i : i + size] for i in range(0, len(items), size)]
    # Workers are forked with this very engine (never pickled, never rebuilt), so
    # whatever it was given (ready matchers, repository-local rules, a test double)
    # reviews there too; fork also shares the loaded library and parsers at no cost.
    with ProcessPoolExecutor(
        max_workers=jobs, mp_context=get_context("fork"), initializer=_init_worker, initargs=(engine,),
    ) as pool:
        results: dict[str, FileOutcome] = {}
        was_on = _types_on(engine)
        for chunk_result, seconds, off in pool.map(_review_chunk, chunks):
            results.update(chunk_result)
            engine.add_rule_seconds(seconds)
            if was_on and off is not None:
                degraded.update(chunk_result)
                if engine.type_engine is not None and engine.type_engine.unavailable is None:
                    engine.type_engine.turn_off(off)
            report(len(results), len(items))
    return results


def _can_fork() -> bool:
    """Where processes cannot fork (Windows), files are reviewed in this process."""
    from multiprocessing import get_all_start_methods

    return "fork" in get_all_start_methods()


def _init_worker(engine: Engine) -> None:
    global _worker_engine
    _worker_engine = engine


def _review_chunk(items: list[_Item]) -> tuple[dict[str, FileOutcome], dict[str, float], str | None]:
    """The chunk's outcomes, the seconds per rule, and why the worker's type engine is off
    once the chunk is done (None while it runs, or where there is none)."""
    assert _worker_engine is not None
    _worker_engine.rule_seconds.clear()
    outcomes = {
        path: _worker_engine.review_file(path, text, limit, kept_on_lines=kept_on_lines)
        for path, text, limit, kept_on_lines in items
    }
    type_engine = _worker_engine.type_engine
    return outcomes, dict(_worker_engine.rule_seconds), type_engine.unavailable if type_engine is not None else None
