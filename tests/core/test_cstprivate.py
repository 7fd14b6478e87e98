"""LibCST's private API, as ``cstprivate`` uses it, behaves as it did when checked.

A failure here after a LibCST upgrade means ``rltrefactor.source.cstprivate`` must be checked
against the new version (its docstring lists what it relies on), then ``CHECKED`` moved.
"""

from __future__ import annotations

import importlib.metadata

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from rltrefactor.source.cstprivate import codegen_positions, unchecked_nodes

CHECKED = "1.9."  # the LibCST minor version cstprivate was checked against

SOURCE = '''\
import os; import sys  # two statements


@decorate(
    1)
class Runner(Base[int], metaclass=Meta):
    """Doc."""

    async def step(self, x, *, y=(1 +
            2)):
        value = f"{x!r:>{y}}" + b'\\x00'.hex()
        return [i for i in x if i]  # trailing
'''


def _expected(module: cst.Module) -> dict[int, tuple[int, int, int, int]]:
    found = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {id(node): (where.start.line, where.start.column, where.end.line, where.end.column) for node, where in found.items()}


def test_libcst_is_the_version_cstprivate_was_checked_against():
    version = importlib.metadata.version("libcst")
    assert version.startswith(CHECKED), (
        f"rltrefactor.source.cstprivate was checked against LibCST {CHECKED}x, found {version}: "
        "check the private uses its docstring lists, then update CHECKED"
    )


def test_codegen_positions_equal_libcsts_position_provider():
    module = cst.parse_module(SOURCE)
    expected = _expected(module)
    found = codegen_positions(module, module)
    # The module's own end is counted differently (it is never a hit); every node inside agrees.
    wrong = [module.code_for_node(node) for node in _nodes(module)[1:] if found.get(id(node)) != expected[id(node)]]
    assert not wrong, f"LibCST's codegen state changed: positions differ for {wrong[:5]}"
    assert len(expected) > 80


def test_a_subtree_generated_alone_has_the_module_positions_shifted_by_its_start():
    module = cst.parse_module(SOURCE)
    expected = _expected(module)
    runner = module.body[1]
    assert isinstance(runner, cst.ClassDef) and isinstance(runner.body, cst.IndentedBlock)
    method = runner.body.body[1]
    alone = codegen_positions(module, method, (module.default_indent,))
    shift = expected[id(method)][0] - alone[id(method)][0]
    wrong = [
        module.code_for_node(node) for node in _nodes(method)
        if (lambda a, b: (a[0] + shift, a[1], a[2] + shift, a[3]) != b)(alone[id(node)], expected[id(node)])
    ]
    assert not wrong, f"LibCST's codegen of a subtree changed: positions differ for {wrong[:5]}"


def test_unchecked_nodes_skip_validation_inside_only():
    assert "__post_init__" in cst.CSTNode.__dict__, "LibCST no longer validates in CSTNode.__post_init__"
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
    with unchecked_nodes():
        assert cst.Name("not a name").value == "not a name"
        assert cst.parse_module("x = 1\n").code == "x = 1\n"
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")


def test_unchecked_nodes_restore_validation_when_the_block_raises():
    with pytest.raises(ValueError), unchecked_nodes():
        raise ValueError("parse failed")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")


def _nodes(root: cst.CSTNode) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []
    stack = [root]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(node.children)
    return found
