"""Run a matcher over a snippet the way the engine does."""

from __future__ import annotations

import textwrap

import libcst as cst

from rltrefactor.config import Declared
from rltrefactor.context.filemodel import FileModel
from rltrefactor.matching.matchers.base import FileContext
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


def lines(block, code: str, **kwargs) -> list[int]:
    matcher = compile_pattern("test-rule", block) if isinstance(block, dict) else block
    return [line for line, _ in hits(matcher, code, **kwargs)]
