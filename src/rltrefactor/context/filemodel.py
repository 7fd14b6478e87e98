"""One version of one file, as every stage of its review reads it.

Built once per file version and review (``Engine.model``): the text, its one
tree-sitter tree, the one walk over its definitions (``syntax.walk_definitions``, whose
qualified names every stage uses), where each function runs (``execution``) and what
the configuration and the repository's call index say about the file. The engine plans,
matches and names findings from it; matchers read it through ``FileContext``; the final
pass reads its definitions again instead of re-parsing the file.

Facts are worked out when first asked for and kept: a file whose rules never ask where
code runs never pays for the execution map.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Mapping

from ..config import NOTHING_DECLARED, Declared
from .execution import ExecutionMap, FunctionExecution, RepositoryContexts, execution_map
from .typeengine import TypeEngine
from ..source.aliases import ImportTable, import_table
from ..source.functions import Mentions
from ..source.kernels import AccumulatingKernel, accumulating_kernels
from ..library.names import Names, bundled_names
from ..source.syntax import DefinitionMap, parse_tree, walk_definitions
from ..types import Definition

if TYPE_CHECKING:
    from tree_sitter import Tree


@dataclass(frozen=True, eq=False)
class FileModel:
    """Read-only; its lazily computed facts are kept on the instance (``cached_property``)."""

    path: str
    text: str
    tree: Tree = field(repr=False)  # the file's only tree-sitter parse
    declared: Declared = NOTHING_DECLARED  # what the configuration declares about the file
    repository: RepositoryContexts | None = None  # what the call index tells the file; None: no index
    is_test: bool = False  # under test-paths
    type_engine: TypeEngine | None = None  # what a value is, read across the repository; None: not asked

    def value_type(self, line: int, column: int) -> str | None:
        """The type the type engine gives the name at ``line`` (1-based), ``column`` (0-based),
        or ``None``: unknown (no engine, no answer, or the engine's own ``Unknown``)."""
        if self.type_engine is None or self.type_engine.unavailable is not None:
            return None
        return self.type_engine.type_at(self.path, self.text, line, column)

    @classmethod
    def read(
        cls, path: str, text: str, *, declared: Declared = NOTHING_DECLARED,
        repository: RepositoryContexts | None = None, is_test: bool = False,
    ) -> FileModel:
        """Parse ``text`` (the file at ``path``) into a model."""
        return cls(path, text, parse_tree(text), declared, repository, is_test)

    @property
    def is_hot_path(self) -> bool:
        """The file is under hot-paths."""
        return self.declared.hot_file

    @property
    def names(self) -> Names:
        """The name lists, as the configuration changes them."""
        return self.declared.names if self.declared.names is not None else bundled_names()

    @cached_property
    def definitions(self) -> DefinitionMap:
        return walk_definitions(self.tree)

    @cached_property
    def mentions(self) -> Mentions:
        """How often each name occurs in the file's code, comments left out (``file_functions.Mentions``)."""
        return Mentions(self.tree)

    @cached_property
    def execution(self) -> ExecutionMap:
        """Where each function runs, from the same definition walk."""
        return execution_map(self.tree, self.declared, self.repository, definitions=self.definitions,
                             imports=lambda: self.imports, path=self.path)

    @cached_property
    def imports(self) -> ImportTable:
        """The names the file's module-level imports bind (``source.aliases``), read once."""
        return import_table(self.tree)

    @cached_property
    def accumulating_kernels(self) -> Mapping[str, AccumulatingKernel]:
        """Kernels of the file that accumulate into an argument (``kernel_outputs``)."""
        return accumulating_kernels(self.tree) if "atomic" in self.text else {}

    def enclosing(self, line: int) -> Definition:
        """The innermost function or class holding ``line`` (``<module>`` outside all)."""
        return self.definitions.enclosing(line)

    def function_at(self, line: int) -> FunctionExecution | None:
        """Where the innermost function holding ``line`` runs; None outside functions."""
        return self.execution.at(line)
