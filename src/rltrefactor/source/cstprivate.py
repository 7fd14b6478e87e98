"""Every use of LibCST's private API, in one place.

Checked against LibCST 1.9 (``tests/core/test_cstprivate.py`` names the version and
exercises both uses, so an upgrade that breaks one fails there with a clear message).
Public LibCST answers the same questions, only slower; each use below says what it
saves and what it relies on.

1. ``codegen_positions``: node positions from one code generation, keyed by
   ``id(node)`` as plain tuples. LibCST's ``PositionProvider`` needs a
   ``MetadataWrapper`` (a deep copy of the tree), hashes every node and runs a newline
   regex over every token; this is several times cheaper and gives the same numbers.
   It subclasses ``libcst.metadata.position_provider.PositionProvidingCodegenState``
   and relies on: its hooks ``record_syntactic_position``, ``add_token``,
   ``add_indent_tokens``, ``before_codegen`` and ``after_codegen``; its fields
   ``line``, ``column``, ``indent_tokens``, ``_stack`` and ``provider._computed``; its
   method ``_update_position``; and ``CSTNode._codegen(state)``, which generates a
   subtree (a method without its class) on its own.
2. ``unchecked_nodes``: while the native parser builds a tree, ``CSTNode.__post_init__``
   (which runs ``_validate`` on every node) is replaced by a no-op: about a seventh of
   a parse. The parser builds only what its grammar accepts; the checks guard trees
   put together by hand, and are back on for every node built afterwards. Relies on
   ``CSTNode`` defining ``__post_init__`` itself, as a plain function.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import libcst as cst
from libcst.metadata.position_provider import PositionProvidingCodegenState

# ``(line, column0, end_line, end_column0)``, lines counted from the generated code's start.
Position = tuple[int, int, int, int]


def codegen_positions(module: cst.Module, node: cst.CSTNode, indents: tuple[str, ...] = ()) -> dict[int, Position]:
    """``id(n) -> position`` for every node ``n`` of ``node``'s subtree, generated from
    line 1, column 0, inside the blocks whose indents are ``indents``; ``module`` gives
    the default indent and newline."""
    sink = _PositionSink()
    state = _PositionState(default_indent=module.default_indent, default_newline=module.default_newline, provider=sink)  # type: ignore[arg-type]  # the sink stands in for a provider
    state.indent_tokens.extend(indents)
    node._codegen(state)
    return sink._computed


class _PositionState(PositionProvidingCodegenState):
    """LibCST's syntactic positions, keyed by ``id(node)`` and stored as plain tuples."""

    _stack: list[tuple[int, int]]  # type: ignore[assignment]  # plain tuples: cheaper than CodePosition
    provider: _PositionSink  # type: ignore[assignment]  # only ``_computed`` is read, and the sink holds it

    @contextmanager
    def record_syntactic_position(
        self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None, end_node: cst.CSTNode | None = None
    ) -> Iterator[None]:
        start_line, start_column = self.line, self.column
        try:
            yield
        finally:
            computed = self.provider._computed
            end_line, end_column = self.line, self.column
            if start_node is not None:
                start_line, start_column = computed[id(start_node)][:2]
            if end_node is not None:
                end_line, end_column = computed[id(end_node)][2:]
            computed[id(node)] = (start_line, start_column, end_line, end_column)

    def add_token(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            self._update_position(value)
        else:
            self.column += len(value)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.column += len(token)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._stack.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start_line, start_column = self._stack.pop()
        computed = self.provider._computed
        computed.setdefault(id(node), (start_line, start_column, self.line, self.column))


class _PositionSink:
    __slots__ = ("_computed",)

    def __init__(self) -> None:
        self._computed: dict[int, Position] = {}


@contextmanager
def unchecked_nodes() -> Iterator[None]:
    """Nodes built inside skip LibCST's field validation (``CSTNode.__post_init__``);
    meant for the native parser's output only."""
    checked = cst.CSTNode.__dict__["__post_init__"]
    setattr(cst.CSTNode, "__post_init__", _unchecked)
    try:
        yield
    finally:
        setattr(cst.CSTNode, "__post_init__", checked)


def _unchecked(self: object) -> None:
    return None
