"""Environment reads outside the configuration layer, less the variables others own.

Launchers (``torchrun``, ``mpirun``, Slurm), drivers and libraries set variables such as
``RANK``, ``CUDA_VISIBLE_DEVICES`` or ``NCCL_DEBUG`` for the process; reading them is
how a program learns its place, not a project setting hidden in a module. Which
variables those are is data: the rule's ``external-variables`` option (shell-style
patterns, ``NCCL_*``), listed in the rule file. A project that documents one of them as
its own setting names it under ``own-variables`` and is told about every read.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..context import is_target
from ..options import Option

_READ_CALLS = frozenset({"os.environ.get", "os.getenv"})
_ENVIRON = "os.environ"


class EnvironmentRead:
    """A read of an environment variable (``os.environ.get``, ``os.getenv``, ``os.environ[...]``, ``in os.environ``)
    whose name no launcher, driver or library owns."""

    reach = MatcherReach(reads="header")
    prefilter: Prefilter = ("environ", "getenv")
    OPTIONS: ClassVar[dict[str, Option]] = {
        "external-variables": Option(
            "strings", (), "variables set by launchers, drivers and libraries (shell patterns such as NCCL_*)"
        ),
        "own-variables": Option(
            "strings", (), "variables of that list the project documents as its own settings (reported again)"
        ),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.external = _patterns(options["external-variables"])
        self.own = _patterns(options["own-variables"])

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for node, key in _reads(ctx):
            if not is_target(node, ctx) and not self._owned_elsewhere(key):
                yield Match(node, {"K": ctx.code(key).strip() if key is not None else ""})

    def _owned_elsewhere(self, key: cst.BaseExpression | None) -> bool:
        name = key.evaluated_value if isinstance(key, cst.SimpleString) else None
        if not isinstance(name, str):
            return False  # a computed name may be anything
        return bool(self.external.fullmatch(name)) and not self.own.fullmatch(name)


def _patterns(globs: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for shell-style patterns; matches nothing when there are none."""
    return re.compile("|".join(fnmatch.translate(glob) for glob in globs) or r"(?!)")


def _reads(ctx: FileContext) -> Iterator[tuple[cst.CSTNode, cst.BaseExpression | None]]:
    """Each read and the expression naming its variable."""
    for call in ctx.nodes(cst.Call):
        if ctx.qualified_name(call.func) in _READ_CALLS:
            yield call, call.args[0].value if call.args else None
    for subscript in ctx.nodes(cst.Subscript):
        if ctx.qualified_name(subscript.value) == _ENVIRON and len(subscript.slice) == 1:
            index = subscript.slice[0].slice
            yield subscript, index.value if isinstance(index, cst.Index) else None
    for comparison in ctx.nodes(cst.Comparison):
        for target in comparison.comparisons:
            if isinstance(target.operator, (cst.In, cst.NotIn)) and ctx.qualified_name(target.comparator) == _ENVIRON:
                yield comparison, comparison.left
