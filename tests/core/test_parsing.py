"""LibCST parsing as the engine runs it: lossless trees, syntax errors as exceptions,
and LibCST's own checks on hand-built nodes left as they were."""

from __future__ import annotations

import libcst as cst
import pytest

from rltrefactor.source.parsing import CodeSyntaxError, parse_module

SOURCE = '''\
import torch as th


@th.compile(mode="max-autotune")
async def step(self, x, *, y=(1 +
        2), **kw) -> th.Tensor:
    """Doc."""
    async with self.lock:
        z = [i async for i in x if i] or {**kw}
    return z[1:2, ...] @ x  # trailing
'''


def test_parsed_trees_are_lossless():
    module = parse_module(SOURCE)
    assert module.code == SOURCE
    assert module.deep_equals(cst.parse_module(SOURCE))


@pytest.mark.parametrize("text", [SOURCE, "def f(:\n"])
def test_hand_built_nodes_are_still_checked_after_a_parse(text):
    try:
        parse_module(text)
    except CodeSyntaxError:
        pass
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")
    with pytest.raises(cst.CSTValidationError):
        cst.Call(func=cst.Name("f"), lpar=[cst.LeftParen()])  # a parenthesis left open
