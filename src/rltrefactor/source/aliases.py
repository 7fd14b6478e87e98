"""The names a file's imports bind: local name -> qualified name.

A file-wide alias table stands in for scope analysis: it is an order of magnitude
cheaper and gives the same answer for how engine code names torch APIs (``import torch
as th``, ``from torch.cuda import synchronize as sync``). The module-level table is read
from the tree-sitter tree, so planning needs no LibCST parse; a region's own imports
are added from its LibCST tree (``matchers.imports``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from tree_sitter import Node, Tree

_IMPORT_TYPES = {"import_statement", "import_from_statement", "future_import_statement"}
# Blocks at module level whose imports still bind module-level names.
_IMPORT_CONTAINERS = {"if_statement", "try_statement", "with_statement", "block", "else_clause",
                      "elif_clause", "except_clause", "finally_clause"}


@dataclass
class ImportTable:
    aliases: dict[str, str]  # local name -> qualified name

    def merged(self, inner: "ImportTable") -> "ImportTable":
        """This table with ``inner``'s aliases on top (a region's own imports win)."""
        if not inner.aliases:
            return self
        return ImportTable({**self.aliases, **inner.aliases})

    def qualify(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        target = self.aliases.get(head)
        if target is None:
            return dotted
        return f"{target}.{rest}" if rest else target


def bind_import(name: str, asname: str | None, aliases: dict[str, str]) -> None:
    """What ``import name [as asname]`` binds."""
    if asname is not None:
        aliases[asname] = name
    else:
        top = name.split(".")[0]  # ``import torch.cuda`` binds ``torch``
        aliases[top] = top


def bind_import_from(module: str, name: str, asname: str | None, aliases: dict[str, str]) -> None:
    """What ``from module import name [as asname]`` binds (``module`` keeps its dots)."""
    aliases[asname or name] = f"{module}.{name}" if module and not module.endswith(".") else f"{module}{name}"


def module_imports(tree: Tree) -> list[Node]:
    """The module-level import statements (also inside top-level if/try/with), in order."""
    found = []
    stack = list(reversed(tree.root_node.children))
    while stack:
        node = stack.pop()
        if node.type in _IMPORT_TYPES:
            found.append(node)
        elif node.type in _IMPORT_CONTAINERS:
            stack.extend(reversed(node.children))
    return found


def import_table(tree: Tree) -> ImportTable:
    """The module-level imports' aliases, later ones winning; none when an import
    statement does not parse (its names cannot be trusted)."""
    statements = module_imports(tree)
    if any(statement.has_error for statement in statements):
        return ImportTable({})
    aliases: dict[str, str] = {}
    for statement in statements:
        if statement.type == "import_statement":
            for name, asname in _imported(statement):
                bind_import(name, asname, aliases)
            continue
        if any(child.type == "wildcard_import" for child in statement.children):
            continue
        module = "__future__" if statement.type == "future_import_statement" else _module(statement)
        for name, asname in _imported(statement):
            bind_import_from(module, name, asname, aliases)
    return ImportTable(aliases)


def _imported(statement: Node) -> Iterator[tuple[str, str | None]]:
    for child in statement.children_by_field_name("name"):
        if child.type == "aliased_import":
            name, alias = child.child_by_field_name("name"), child.child_by_field_name("alias")
            if name is not None:
                yield _dotted(name), _text(alias) if alias is not None else None
        elif child.type == "dotted_name":
            yield _dotted(child), None


def _module(statement: Node) -> str:
    node = statement.child_by_field_name("module_name")
    if node is None:
        return ""
    if node.type != "relative_import":
        return _dotted(node)
    dots = sum(len(_text(prefix)) for prefix in node.children if prefix.type == "import_prefix")
    names = [child for child in node.children if child.type == "dotted_name"]
    return "." * dots + (_dotted(names[0]) if names else "")


def _dotted(node: Node) -> str:
    return ".".join(_text(part) for part in node.children if part.type == "identifier")


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogatepass")


def module_of(path: str) -> str:
    """The dotted module a repository path holds (``pkg/sub/mod.py`` -> ``pkg.sub.mod``,
    a package's ``__init__.py`` -> the package)."""
    stem = path[:-3] if path.endswith(".py") else path
    parts = [p for p in stem.split("/") if p]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)
