"""Run a matcher over a snippet the way the engine does."""

from __future__ import annotations

import functools
import textwrap

import libcst as cst

from rltrefactor.config import Config, Declared
from rltrefactor.context.filemodel import FileModel
from rltrefactor.library.loader import load_library
from rltrefactor.library.model import Library
from rltrefactor.matching.engine import Engine
from rltrefactor.matching.matchers.base import FileContext
from rltrefactor.matching.matchers.registry import PYTHON_MATCHERS
from rltrefactor.matching.patterns.compiler import compile_pattern


def context(code: str, path: str = "model_executor/m.py", *, hot: bool = True, test: bool = False) -> FileContext:
    text = textwrap.dedent(code)
    model = FileModel.read(path, text, declared=Declared(hot_file=hot), is_test=test)
    return FileContext(model, cst.parse_module(text))


def hits(matcher, code: str, **kwargs) -> list[tuple[int, dict]]:
    ctx = context(code, **kwargs)
    found = [(ctx.span(m.node), dict(m.bindings)) for m in matcher.find(ctx)]
    found.sort(key=lambda item: (item[0].line, item[0].column))
    return [(span.line, bindings) for span, bindings in found]


def engine_lines(matcher_id: str, code: str) -> list[int]:
    """A registered Python matcher's lines, checked to be the same through the engine with
    its prefilter and planned regions: a prefilter that drops a hit is a silent false negative."""
    code = textwrap.dedent(code)
    matcher = PYTHON_MATCHERS[matcher_id].build("test-rule", matcher_id, {})
    found = [line for line, _ in hits(matcher, code)]
    rule = next(r for r in bundled_library().rules if r.matcher is not None and r.matcher.python == matcher_id)
    engine = Engine((rule,), Config(), frozenset({rule.id}), matcher_factory=lambda _: matcher)
    assert sorted({f.span.line for f in engine.review_file("engine/module.py", code).findings}) == sorted(set(found))
    return found


@functools.lru_cache(maxsize=1)
def bundled_library() -> Library:
    """The bundled rule library, loaded once per test process."""
    return load_library()


def lines(block, code: str, **kwargs) -> list[int]:
    matcher = compile_pattern("test-rule", block) if isinstance(block, dict) else block
    return [line for line, _ in hits(matcher, code, **kwargs)]


def reviewed_in_diff(tmp_path, rule: str, code: str, path: str) -> list[int]:
    """Lines ``rule`` reports when a change adds ``code`` as the new module ``path``,
    reviewed end to end (``review --diff HEAD~1..HEAD`` in a real repository)."""
    from gitrepo import GitRepo
    from rltrefactor.api import ReviewRequest, review

    repo = GitRepo(tmp_path / "repo")
    repo.write("engine/__init__.py", "")
    repo.commit("base")
    repo.write(path, textwrap.dedent(code))
    repo.commit("head")
    result = review(ReviewRequest(repo=str(repo.path), diff="HEAD~1..HEAD", use_cache=False, jobs=1,
                                  overrides={"select": (rule,)}))
    return sorted(f.span.line for f in result.findings if rule in (f.rule_id, *f.also_rules))


def marked_lines(code: str) -> list[int]:
    """Lines of ``code`` that end with ``# defect``."""
    return [n for n, line in enumerate(textwrap.dedent(code).splitlines(), 1) if line.endswith("# defect")]
