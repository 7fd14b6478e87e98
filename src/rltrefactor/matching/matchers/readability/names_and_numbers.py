"""Configuration-and-readability matchers: cryptic new names, unexplained numbers."""

from __future__ import annotations

import re
from typing import Any, Iterator

import libcst as cst

from ...prefilter import AllOf, GuardedRegex, Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..context import subtree, unpacked
from ..imports import dotted_name
from ..options import Option

# ``req``, ``rid`` and ``bs``/``bsz`` are left out: they are the house idiom of vLLM,
# SGLang and LMDeploy (``Req``, ``req_id``, ``bs``), so flagging them is noise there;
# a repository that wants them reported lists them under ``abbreviations``.
ABBREVIATIONS = {
    "sl": "seq_len",
    "ntok": "num_tokens",
    "ntoks": "num_tokens",
    "toks": "tokens",
    "blk": "block",
    "blks": "blocks",
    "nblk": "num_blocks",
    "kvc": "kv_cache",
    "hs": "hidden_states",
    "msk": "mask",
    "lp": "logprobs",
    "lps": "logprobs",
}
# Comparisons with these read as facts about the value, not as tuning constants.
_SELF_EXPLAINING = ("dim", "ndim", "ndimension", "version_info", "__len__")
# A float below this magnitude is a tolerance (an epsilon guarding a division or an
# equality test), not a threshold that selects a path.
TOLERANCE_BELOW = 1e-3


def _bound_names(ctx: FileContext) -> Iterator[cst.Name]:
    """Every Name a statement binds: assignment, loop, ``with``/``except`` targets,
    walrus, parameters, and function/class names."""
    for assign in ctx.nodes(cst.Assign):
        for target in assign.targets:
            yield from _names_in(target.target)
    kind: type[cst.AnnAssign | cst.AugAssign | cst.For | cst.CompFor | cst.NamedExpr]
    for kind in (cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr):
        for node in ctx.nodes(kind):
            yield from _names_in(node.target)
    for alias in ctx.nodes(cst.AsName):
        yield from _names_in(alias.name)
    for param in ctx.nodes(cst.Param):
        yield param.name
    definitions: list[cst.FunctionDef | cst.ClassDef] = [*ctx.nodes(cst.FunctionDef), *ctx.nodes(cst.ClassDef)]
    for definition in definitions:
        yield definition.name


def _names_in(target: cst.BaseExpression) -> Iterator[cst.Name]:
    for single in unpacked(target):
        if isinstance(single, cst.Name):
            yield single
        elif isinstance(single, cst.Attribute) and dotted_name(single.value) == "self":
            yield single.attr


class AbbreviatedNewName:
    """A name bound to a listed abbreviation; the first binding per scope is reported."""

    reach = MatcherReach(reads="header")  # every binding holds the token, so the first one is kept

    OPTIONS = {"abbreviations": Option("mapping", ABBREVIATIONS, "abbreviation -> the name to write instead")}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.names = dict(options["abbreviations"])
        # A bound name is a whole word of the statement (underscores may pad it).
        # The word comes first (with its own look-behind) so that ``re`` can skip ahead.
        words = "|".join(
            rf"{re.escape(name)}(?<![A-Za-z0-9]{re.escape(name)})" for name in sorted(self.names, key=len, reverse=True)
        )
        pattern = re.compile(rf"(?:{words})_*(?![A-Za-z0-9_])")
        self.prefilter: Prefilter = (GuardedRegex(pattern, tuple(sorted(self.names))),) if words else ()

    def find(self, ctx: FileContext) -> Iterator[Match]:
        seen: set[tuple[int, str]] = set()
        listed = [name for name in _bound_names(ctx) if name.value.strip("_") in self.names]
        if not listed:
            return
        order = {id(node): index for index, node in enumerate(ctx.nodes(cst.Name))}  # source order
        for name in sorted(listed, key=lambda node: order.get(id(node), 0)):
            bare = name.value.strip("_")
            scope = ctx.enclosing_function(name) or ctx.enclosing_class(name)
            key = (id(scope), bare)
            if key not in seen:
                seen.add(key)
                yield Match(name, {"NAME": name.value, "SUGGESTION": self.names[bare]})


_COMPARISON = re.compile(r"[<>]|==|!=|\bin\b|\bis\b")
_BRANCH = re.compile(r"(?:if|while)\b")


class UnexplainedNumberInBranch:
    """A numeric literal compared in a branch condition, outside a named constant."""

    reach = MatcherReach(reads="header")

    OPTIONS = {
        "allowed": Option(
            "strings",
            ("0", "1", "2", "3", "4", "-1", "0.0", "1.0"),
            "literals that need no name (small counts read as arity, rank or argument counts)",
        )
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.allowed = frozenset(options["allowed"])
        # The start of a numeric literal that is not one of the allowed ones.
        # The literal, a comparison and the branch keyword share the branch's header
        # (or, for ``a if n > 8 else b``, its statement).
        self.prefilter: Prefilter = (AllOf((_literal_start(self.allowed), _COMPARISON, _BRANCH), within="statement"),)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        kind: type[cst.If | cst.While | cst.IfExp]
        for kind in (cst.If, cst.While, cst.IfExp):
            for branch in ctx.nodes(kind):
                if ctx.enclosing_function(branch) is None:
                    continue
                comments = _comments_at(branch, ctx)
                for node in subtree(branch.test):
                    if isinstance(node, cst.Comparison):
                        yield from self._numbers(node, ctx, comments)

    def _numbers(self, comparison: cst.Comparison, ctx: FileContext, comments: str) -> Iterator[Match]:
        operands = [comparison.left, *(t.comparator for t in comparison.comparisons)]
        if any(_self_explaining(o) for o in operands):
            return
        for operand in operands:
            text = ctx.code(operand).replace(" ", "")
            if not _is_number(operand) or text in self.allowed or _is_tolerance(operand):
                continue
            if re.search(rf"(?<![\w.]){re.escape(text.lstrip('-'))}(?![\w.])", comments):
                continue  # the comment beside the branch already says what the number is
            yield Match(operand, {"VALUE": text, "CONDITION": ctx.code(comparison)})


def _comments_at(branch: cst.If | cst.While | cst.IfExp, ctx: FileContext) -> str:
    """The comment lines right above the statement holding ``branch`` and the comment
    ending its first line: where a writer explains the condition."""
    statement: cst.CSTNode | None = branch
    while statement is not None and not isinstance(statement, (cst.BaseCompoundStatement, cst.SimpleStatementLine)):
        statement = ctx.parent(statement)
    if statement is None:
        return ""
    above: list[str] = []
    for line in reversed(getattr(statement, "leading_lines", ())):
        if line.comment is None:
            break
        above.append(line.comment.value)
    trailing: cst.TrailingWhitespace | None = None
    if isinstance(statement, cst.SimpleStatementLine):
        trailing = statement.trailing_whitespace
    elif isinstance(getattr(statement, "body", None), cst.IndentedBlock):
        trailing = statement.body.header  # type: ignore[attr-defined]  # checked just above
    if trailing is not None and trailing.comment is not None:
        above.append(trailing.comment.value)
    return "\n".join(above)


def _is_tolerance(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    return isinstance(node, cst.Float) and 0 < abs(float(node.value.replace("_", ""))) < TOLERANCE_BELOW


def _literal_start(allowed: frozenset[str]) -> "re.Pattern[str]":
    r"""The first character of every numeric literal whose text is not in ``allowed``
    (``.5`` is matched with its digit).

    It starts with one character class, so that ``re`` skips ahead to the next digit or
    dot; lookbehinds then tell which character it took (``(?<=0)(?!(?:|\.0)(?![\w.]))``
    for allowed ``0`` and ``0.0``)."""
    rests: dict[str, list[str]] = {}
    for text in allowed:
        if text[:1].isdigit():
            rests.setdefault(text[0], []).append(re.escape(text[1:]))
    branches = [r"(?<=\.)\d"]
    branches += [rf"(?<={d})(?!(?:{'|'.join(sorted(rests[d], key=len, reverse=True))})(?![\w.]))" for d in sorted(rests)]
    plain = "".join(d for d in "0123456789" if d not in rests)
    if plain:
        branches.append(rf"(?<=[{plain}])")
    return re.compile(rf"[0-9.](?<![\w.][0-9.])(?:{'|'.join(branches)})")


def _is_number(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


def _self_explaining(node: cst.BaseExpression) -> bool:
    while isinstance(node, (cst.Call, cst.Subscript)):
        node = node.func if isinstance(node, cst.Call) else node.value
    name = dotted_name(node) or ""
    return name.rpartition(".")[2] in _SELF_EXPLAINING
