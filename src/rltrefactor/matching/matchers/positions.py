"""Where a node of a parsed region lies: LibCST's syntactic positions, computed
per top-level statement (or class member) where possible."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

import libcst as cst

from ...source.cstprivate import Position, codegen_positions

if TYPE_CHECKING:
    import tree_sitter


def positions(module: cst.Module) -> dict[int, Position]:
    """``id(node) -> (line, column0, end_line, end_column0)`` for every node of ``module``."""
    return codegen_positions(module, module)


class AllPositions:
    """Positions of every node, from one codegen of the whole module."""

    def __init__(self, module: cst.Module) -> None:
        self._computed = positions(module)

    def of(self, node: cst.CSTNode) -> Position:
        return self._computed[id(node)]


class AnchoredPositions:
    """Positions of a region's nodes, each computed from its *anchor* alone: the
    top-level statement holding it or, inside a class, the class member holding it.

    An anchor's subtree is generated on its own (a method, not its whole class) and
    shifted to the line where tree-sitter, parsing the same text, starts that
    statement: the i-th top-level statement (statements sharing a line are one) and the
    j-th member of a class body. Where the two parsers do not agree on the count, the
    whole module is generated, as ``positions`` does."""

    def __init__(
        self, module: cst.Module, text: str, parent: Mapping[int, cst.CSTNode], tree: tree_sitter.Tree | None = None
    ) -> None:
        """``tree``: the tree-sitter tree of ``text`` when one is already made (the file's,
        for a region that is the whole file); parsed when first needed otherwise."""
        """``text``: what ``module`` was parsed from."""
        self._module = module
        self._text = text
        self._parent = parent
        self._by_anchor: dict[int, dict[int, Position]] = {}
        self._rows: _StatementRows | None = None
        self._tree = tree
        self._whole: dict[int, Position] | None = None

    def of(self, node: cst.CSTNode) -> Position:
        if self._whole is None:
            found = self._anchored(node)
            if found is not None:
                return found
            self._whole = positions(self._module)
        return self._whole[id(node)]

    def _anchored(self, node: cst.CSTNode) -> Position | None:
        chain = [node]
        while (above := self._parent.get(id(chain[-1]))) is not None:
            chain.append(above)
        if len(chain) < 2 or chain[-1] is not self._module:
            return None
        statement = chain[-2]
        # Inside a class body the anchor is the member: ClassDef -> IndentedBlock -> member.
        block = statement.body if isinstance(statement, cst.ClassDef) else None
        member = chain[-4] if isinstance(block, cst.IndentedBlock) and len(chain) >= 4 and chain[-3] is block else None
        anchor = member if member is not None else statement
        computed = self._by_anchor.get(id(anchor))
        if computed is None:
            indents: tuple[str, ...] = ()
            if member is not None and isinstance(block, cst.IndentedBlock):
                row = self._member_row(statement, block, member)
                indents = (self._module.default_indent if block.indent is None else block.indent,)
            else:
                row = self._row(statement)
            if row is None:
                return None
            local = codegen_positions(self._module, anchor, indents)
            shift = row + 1 - local[id(anchor)][0]
            computed = {key: (a + shift, b, c + shift, d) for key, (a, b, c, d) in local.items()}
            self._by_anchor[id(anchor)] = computed
        return computed.get(id(node))

    def _row(self, statement: cst.CSTNode) -> int | None:
        """0-based row where tree-sitter starts the top-level ``statement``."""
        return self._statement_rows().top_level(_index_of(self._module.body, statement), len(self._module.body))

    def _member_row(self, statement: cst.CSTNode, block: cst.IndentedBlock, member: cst.CSTNode) -> int | None:
        """0-based row where tree-sitter starts ``member`` of ``block``, the top-level class ``statement``'s body."""
        position = _index_of(self._module.body, statement)
        return self._statement_rows().member(position, len(self._module.body), _index_of(block.body, member), len(block.body))

    def _statement_rows(self) -> _StatementRows:
        if self._rows is None:
            self._rows = _StatementRows(self._text, self._tree)
        return self._rows


def _index_of(items: Sequence[cst.CSTNode], node: cst.CSTNode) -> int:
    return next(i for i, item in enumerate(items) if item is node)


class _StatementRows:
    """Where tree-sitter starts the statements of a text, grouped as LibCST groups
    them: statements sharing a line (``a = 1; b = 2``) make one."""

    def __init__(self, code: str, tree: tree_sitter.Tree | None = None) -> None:
        from ...source.syntax import parse_fresh

        tree = tree if tree is not None else parse_fresh(code)
        self._ok = not tree.root_node.has_error
        self._top = _grouped(tree.root_node.children)

    def top_level(self, position: int, count: int) -> int | None:
        if not self._ok or len(self._top) != count:
            return None
        return _syntactic_row(self._top[position])

    def member(self, position: int, count: int, index: int, members: int) -> int | None:
        if not self._ok or len(self._top) != count:
            return None
        definition = self._top[position]
        if definition.type == "decorated_definition":
            definition = definition.child_by_field_name("definition") or definition
        body = definition.child_by_field_name("body") if definition.type == "class_definition" else None
        grouped = _grouped(body.children) if body is not None else []
        if len(grouped) != members:
            return None
        return _syntactic_row(grouped[index])


def _grouped(children: Sequence[tree_sitter.Node]) -> list[tree_sitter.Node]:
    """The first statement of each line that starts statements, comments left out."""
    grouped: list[tree_sitter.Node] = []
    for child in children:
        if child.type == "comment":
            continue
        if grouped and child.start_point[0] <= grouped[-1].end_point[0]:
            continue  # shares a line with the statement before it
        grouped.append(child)
    return grouped


def _syntactic_row(statement: tree_sitter.Node) -> int:
    """A definition starts at its ``def``/``class`` line, after its decorators, as LibCST counts it."""
    if statement.type == "decorated_definition":
        definition = statement.child_by_field_name("definition")
        if definition is not None:
            return definition.start_point[0]
    return statement.start_point[0]
