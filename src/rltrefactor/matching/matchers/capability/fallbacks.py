"""The capability-selection matcher for import fallbacks: an ``except ImportError``
that switches implementation silently."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..context import caught_types, guarded_by, subtree
from ..imports import dotted_name
from ..options import Option

_DIAGNOSTIC_CALLS = frozenset(
    {"warn", "warning", "warning_once", "info", "info_once", "error", "exception", "debug", "critical", "log", "print_warning_once"}
)
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})

# Fallbacks that fail on use: a stand-in named for the missing dependency
# (``PlaceholderModule("x")``, ``_missing_op``, ``raise_import_error``).
PLACEHOLDERS = r"(?i)placeholder|missing|unavailable|not_?installed|not_?available|raise|requires?_|stub|dummy"
# Conditions that read configuration (``if envs.USE_AITER:``, ``if config.backend == ...``).
CONFIGURATION = r"(?i)(?<![a-z])(config|cfg|conf|settings|envs|options|flags|args)(?![a-z])|environ|getenv"


class SilentImportFallback:
    """An ``except ImportError`` that switches implementation without telling anyone."""

    reach = MatcherReach(reads="statement")  # the try's body and the handler's, and the headers around

    OPTIONS: ClassVar[dict[str, Option]] = {
        "placeholders": Option("regex", PLACEHOLDERS, "stand-ins that raise when the missing dependency is used"),
        "configuration": Option("regex", CONFIGURATION, "conditions that read configuration, which then chooses the import"),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.placeholder = re.compile(options["placeholders"])
        self.configuration = re.compile(options["configuration"])
        self.prefilter: Prefilter = ("ImportError", "ModuleNotFoundError")

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for attempt in ctx.nodes(cst.Try):
            if not any(isinstance(n, (cst.Import, cst.ImportFrom)) for n in subtree(attempt.body)):
                continue
            if self._chosen_by_configuration(attempt, ctx):
                continue
            for handler in attempt.handlers:
                if _same_names_elsewhere(attempt, handler) or _defaults_a_derived_value(attempt, handler):
                    continue
                if _catches_import_error(handler) and _switches_silently(handler, self.placeholder, ctx):
                    yield Match(handler, {"MODULE": _first_import(attempt.body, ctx)})

    def _chosen_by_configuration(self, attempt: cst.Try, ctx: FileContext) -> bool:
        """The import is tried because a configuration value asked for it."""
        return any(self.configuration.search(ctx.code(branch.test)) for branch in guarded_by(attempt, ctx))


def _same_names_elsewhere(attempt: cst.Try, handler: cst.ExceptHandler) -> bool:
    """The handler only imports the names the ``try`` imports, under the same names, from
    another module of the same package (``vllm.worker.worker_base`` then
    ``vllm.v1.worker.worker_base``): one implementation found where an older or newer
    release keeps it, not a switch to another."""
    tried = {pair for node in subtree(attempt.body) if isinstance(node, cst.ImportFrom) for pair in _imported(node)}
    packages = {_package(node) for node in subtree(attempt.body) if isinstance(node, cst.ImportFrom)}
    smalls = _small_statements(handler.body)
    if smalls is None:
        return False
    found: set[tuple[str, str]] = set()
    for small in smalls:
        if isinstance(small, cst.Pass):
            continue
        if not isinstance(small, cst.ImportFrom) or _package(small) not in packages or not set(_imported(small)) <= tried:
            return False
        found |= set(_imported(small))
    return bool(found)


def _defaults_a_derived_value(attempt: cst.Try, handler: cst.ExceptHandler) -> bool:
    """The handler rebinds none of the names the ``try`` imports and only gives values
    built from the dependency (``Schema = schema_of(Llama.create)``) a default made on
    the spot (``Schema = create_model("Schema")``): the dependency is optional and
    nothing stands in for its implementation."""
    imported = {bound for node in subtree(attempt.body) if isinstance(node, cst.ImportFrom) for _, bound in _imported(node)}
    imported |= {dotted_name(a.asname.name if a.asname else a.name) or "" for node in subtree(attempt.body)
                 if isinstance(node, cst.Import) for a in node.names}
    smalls = _small_statements(handler.body)
    if not smalls:
        return False
    for small in smalls:
        if isinstance(small, cst.Pass):
            continue
        if not (isinstance(small, (cst.Assign, cst.AnnAssign)) and isinstance(small.value, cst.Call)):
            return False
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
        if any((dotted_name(t) or "") in imported or not isinstance(t, cst.Name) for t in targets):
            return False
    return True


def _imported(node: cst.ImportFrom) -> list[tuple[str, str]]:
    """(name in its module, name bound here) of each name ``node`` imports; none for ``*``."""
    if isinstance(node.names, cst.ImportStar):
        return []
    pairs = []
    for alias in node.names:
        name = dotted_name(alias.name) or ""
        bound = alias.asname.name if alias.asname is not None else alias.name
        pairs.append((name, dotted_name(bound) or name if isinstance(bound, (cst.Name, cst.Attribute)) else name))
    return pairs


def _package(node: cst.ImportFrom) -> str:
    """The top-level package of a ``from`` import; relative imports stay in their own."""
    if node.relative:
        return "."
    return (dotted_name(node.module) or "").partition(".")[0] if node.module is not None else ""


def _small_statements(body: cst.BaseSuite) -> list[cst.BaseSmallStatement] | None:
    """The simple statements of a block; None when it holds a compound statement."""
    if isinstance(body, cst.SimpleStatementSuite):
        return list(body.body)
    found: list[cst.BaseSmallStatement] = []
    for statement in body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            return None
        found.extend(statement.body)
    return found


def _catches_import_error(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return False
    return any((dotted_name(n) or "").rpartition(".")[2] in _IMPORT_ERRORS for n in caught_types(handler))


def _switches_silently(handler: cst.ExceptHandler, placeholder: re.Pattern[str], ctx: FileContext) -> bool:
    """The handler binds another implementation and neither raises, warns nor logs;
    recording absence (``None``, a flag, the caught error) or a stand-in that raises on
    use is no switch."""
    caught = handler.name.name.value if handler.name is not None and isinstance(handler.name.name, cst.Name) else None
    switches = False
    for node in subtree(handler.body):
        if isinstance(node, cst.Raise):
            return False
        if isinstance(node, cst.Call) and _is_diagnostic((dotted_name(node.func) or "").rpartition(".")[2]):
            return False
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            switches = True
        elif isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None:
            switches = switches or not _records_absence(node.value, caught, placeholder, ctx)
    return switches


def _is_diagnostic(name: str) -> bool:
    """A log or warning call, also through a helper (``warn_once``, ``_warn_fallback``)."""
    return name in _DIAGNOSTIC_CALLS or "warn" in name.lower()


def _records_absence(value: cst.BaseExpression, caught: str | None, placeholder: re.Pattern[str], ctx: FileContext) -> bool:
    if isinstance(value, cst.Name) and value.value in ("None", "True", "False", caught):
        return True
    stand_in = value.func if isinstance(value, cst.Call) else value
    return isinstance(stand_in, (cst.Name, cst.Attribute)) and bool(placeholder.search(ctx.code(stand_in)))


def _first_import(body: cst.CSTNode, ctx: FileContext) -> str:
    for node in subtree(body):
        if isinstance(node, cst.Import):
            return dotted_name(node.names[0].name) or "the module"
        if isinstance(node, cst.ImportFrom) and node.module is not None:
            return dotted_name(node.module) or "the module"
    return "the module"
