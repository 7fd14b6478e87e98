"""The two walks every matcher relies on: the per-region node index and ``subtree``."""

from __future__ import annotations

import libcst as cst

from rltrefactor.matching.matchers.base import _TRIVIA, _index, child_nodes
from rltrefactor.matching.matchers.context import subtree

SOURCE = '''\
import torch  # a comment
from a.b import (c as d,)

@decorator(flag=True)
class Runner(Base, metaclass=Meta):
    x: int = 1

    def step(self, batch, *args, scale=2.0, **kwargs) -> "Out":
        """Doc."""
        for i, (a, b) in enumerate(zip(batch[0], batch[1:])):
            if a is not None and b > 0.5:  # trailing
                self._cache[i] = torch.tensor([a, b], device="cuda").to(a.device, non_blocking=True)
            elif a:
                continue
        with torch.no_grad(), open(f"{i!r:>4}") as fh:
            y = [v async for v in fh if v] if scale else {k: v for k, v in kwargs.items()}
        try:
            del self._cache[0]
        except (KeyError, IndexError) as exc:
            raise RuntimeError("no") from exc
        finally:
            lambda q=1: q ** 2
        return y
'''


def _module() -> cst.Module:
    return cst.parse_module(SOURCE)


def test_child_nodes_are_the_children_libcst_lists_without_formatting():
    by_type, _ = _index(_module())
    nodes = [node for found in by_type.values() for node in found]
    assert len(nodes) > 150
    for node in nodes:
        # The same nodes; in field order, where LibCST lists them in source order.
        expected = [child for child in node.children if type(child) not in _TRIVIA]
        assert sorted(map(id, child_nodes(node))) == sorted(map(id, expected))


def test_the_index_holds_every_code_node_once_with_its_parent():
    module = _module()
    by_type, parent = _index(module)
    assert not any(kind in _TRIVIA for kind in by_type)
    names = [name.value for name in by_type[cst.Name]]
    assert names[:4] == ["torch", "a", "b", "c"]  # source order within a type
    assert len({id(node) for found in by_type.values() for node in found}) == sum(map(len, by_type.values()))
    call = next(c for c in by_type[cst.Call] if isinstance(c.func, cst.Attribute) and c.func.attr.value == "to")
    assert parent[id(call.func)] is call and parent[id(call.args[1])] is call


def test_subtree_walks_code_in_source_order_and_skips_formatting_fields():
    module = _module()
    walked = list(subtree(module))
    assert walked[0] is module
    by_type, _ = _index(module)
    indexed = {id(node) for found in by_type.values() for node in found}
    assert indexed <= {id(node) for node in walked}  # nothing a matcher asks for is missed
    assert not any(isinstance(node, (cst.SimpleWhitespace, cst.Comma, cst.LeftParen, cst.EmptyLine)) for node in walked)
    assert [n.value for n in walked if isinstance(n, cst.Name)] == [n.value for n in by_type[cst.Name]]
    handler = next(n for n in walked if isinstance(n, cst.ExceptHandler))
    assert [type(n).__name__ for n in subtree(handler)][:4] == ["ExceptHandler", "IndentedBlock", "SimpleStatementLine", "Raise"]
