"""The YAML pattern language, compiled into a matcher over a file's indexed nodes.

A pattern block has exactly one positive part and optional refinements::

    pattern: "$X.item()"          # one code pattern, or
    any: [<block>, ...]           # the first alternative that matches, or
    all: [<block>, ...]           # every block matches the same node
    not: <block> | [<block>...]   # ...and none of these matches that node
    inside: [<context>, ...]      # every context holds
    not-inside: [<context>, ...]  # no context holds
    where: {X: {regex: .., not-regex: .., qualified-name: [..], kind: ..}}

Contexts: ``loop: true``, ``function: REGEX``, ``class: REGEX``, ``with: PATTERN``,
``if: PATTERN`` (in the body of such an ``if``), ``pattern: PATTERN`` (any enclosing
node), ``test-file: true``, ``per-step: true``
(the enclosing function runs per step, see ``execution``), ``target: true`` (assigned
or deleted), ``any: [<context>, ...]``. ``where: {X: {on-host: false}}`` keeps only
values not known to live in host memory, ``pinned: false`` only values not known to be
pinned, ``pageable: true`` only values known to be pageable host memory,
``handed-in: true`` only a parameter read before anything assigns it (see
``residency``), ``host-named: false`` only code that names no host data (the
``host-names`` list of ``rules/names.yaml``). Nothing is ever evaluated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping

import libcst as cst

from ..prefilter import AllOf, Prefilter, Token
from ..regions.reach import MatcherReach
from ..matchers.base import FileContext, Match
from .code import Bindings, CodePattern, compile_code, is_ellipsis_suite
from ..matchers.context import configured_per_step, enclosing_functions, guarded_by, in_per_step_function, is_target
from ..matchers.companions import residency_companions
from ..matchers.residency.locations import on_device
from ..matchers.residency.reasons import residency_reason
from ..matchers.returned import returned_where_unplaced
from ..matchers.walk import holders_by, subtree
from ..matchers.options import MatcherSpecError
from .constraints import RESIDENCY_FACTS, compile_regex, compile_where, line_of

POSITIVE_KEYS = ("pattern", "any", "all")
BLOCK_KEYS = POSITIVE_KEYS + ("not", "inside", "not-inside", "where")
CONTEXT_KEYS = (
    "loop", "function", "class", "with", "if", "finally", "pattern", "test-file", "per-step", "configured-per-step",
    "target", "returned-unplaced", "any",
)


@dataclass(frozen=True)
class Block:
    """A compiled pattern block: where matches can start, and how to test a node."""

    anchors: tuple[type[cst.CSTNode], ...]
    test: Callable[[cst.CSTNode, FileContext, Bindings], Bindings | None]
    metavars: frozenset[str]
    tokens: Prefilter  # any-of prefilter; () when nothing is required
    required: frozenset[str] = frozenset()  # metavariables every match binds
    # Matches only simple statements or expressions and reads nothing around them but
    # their ancestors' headers (no ``pattern:`` context compares a whole enclosing node).
    header_only: bool = True


class PatternMatcher:
    def __init__(
        self, rule_id: str, block: Block, *, reads_residency: bool = False, never_in_setup: bool = False,
        device_values: tuple[str, ...] = (),
    ) -> None:
        self.rule_id = rule_id
        self.block = block
        # Metavariables the pattern asks to be off the host (``on-host: false``): each match
        # says whether the function shows the first bound one on a device.
        self.device_values = device_values
        self.prefilter: Prefilter = block.tokens
        # ``on-host`` constraints read how the receivers were assigned.
        self.reach = MatcherReach(
            reads="header" if block.header_only else "function",
            never_in_setup=never_in_setup,
            companions=residency_companions if reads_residency else None,
            companion_lines="assignments",
        )

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for anchor in self.block.anchors:
            for node in ctx.nodes(anchor):
                bindings = self.block.test(node, ctx, {})
                if bindings is not None:
                    texts = {name: ctx.code(value).strip() for name, value in bindings.items()}
                    value = next((bindings[name] for name in self.device_values if name in bindings), None)
                    if value is None:
                        yield Match(node, texts)
                    else:
                        placed = on_device(value, ctx)
                        yield Match(node, texts, "device" if placed else "unknown", ctx.code(value).strip(),
                                    residency_reason(value, ctx, placed))


def compile_pattern(rule_id: str, block: Mapping[str, Any], line: int | None = None) -> PatternMatcher:
    return PatternMatcher(
        rule_id, compile_block(block, line), reads_residency=any(_mentions(block, key) for key in RESIDENCY_FACTS),
        device_values=tuple(name for name in dict.fromkeys(_off_host(block)) if name in _receivers(block)),
    )


def _receivers(block: Mapping[str, Any]) -> frozenset[str]:
    """Metavariables some code pattern of the block calls a method on (``$X.item()``):
    the values a rule about device values reads, as opposed to a device argument."""
    return frozenset(re.findall(r"\$([A-Z][A-Z0-9_]*)\.", " ".join(iter_code_patterns(block))))


def _off_host(data: Any) -> Iterator[str]:
    """Metavariables (as bound, without ``$``) a block constrains with ``on-host: false``."""
    if isinstance(data, dict):
        where = data.get("where")
        if isinstance(where, dict):
            for name, constraints in where.items():
                if isinstance(constraints, dict) and constraints.get("on-host") is False:
                    yield str(name).lstrip("$")
        for value in data.values():
            yield from _off_host(value)
    elif isinstance(data, list):
        for item in data:
            yield from _off_host(item)


def _mentions(data: Any, key: str) -> bool:
    if isinstance(data, dict):
        return key in data or any(_mentions(value, key) for value in data.values())
    if isinstance(data, list):
        return any(_mentions(item, key) for item in data)
    return False


def compile_block(data: Any, line: int | None) -> Block:
    from ...library.fields import suggest

    if isinstance(data, str):
        return _code_block(compile_code(data, line))
    if not isinstance(data, dict):
        raise MatcherSpecError(f"a pattern block must be a mapping or a code string (got {data!r}); fix the matcher", line)
    line = line_of(data, None, line)
    for key in data:
        if key not in BLOCK_KEYS:
            raise MatcherSpecError(f"unknown key {key!r}{suggest(key, BLOCK_KEYS)} in a pattern block; use one of {', '.join(BLOCK_KEYS)}", line_of(data, key, line))
    positive = [key for key in POSITIVE_KEYS if key in data]
    if len(positive) != 1:
        problem = "has none of" if not positive else f"has {' and '.join(positive)}; it needs exactly one of"
        raise MatcherSpecError(f"pattern block {problem} {', '.join(POSITIVE_KEYS)}; nest alternatives under `any` or `all`", line)
    key = positive[0]
    if key == "pattern":
        if not isinstance(data[key], str):
            raise MatcherSpecError(f"pattern: expected a code string (got {data[key]!r}); quote the code", line_of(data, key, line))
        inner = _code_block(compile_code(data[key], line_of(data, key, line)))
    else:
        inner = _combine(key, _blocks(data[key], line_of(data, key, line), key))
    return _refine(inner, data, line)


def _blocks(items: Any, line: int | None, key: str) -> list[Block]:
    if not isinstance(items, list) or not items:
        raise MatcherSpecError(f"{key}: expected a non-empty list of pattern blocks; add the alternatives", line)
    return [compile_block(item, line_of(items, index, line)) for index, item in enumerate(items)]


def _code_block(code: CodePattern) -> Block:
    tokens = (code.token,) if code.token else ()
    return Block(code.anchors, code.match, code.metavars, tokens, code.metavars, _compares_header_only(code.root))


def _compares_header_only(root: cst.CSTNode) -> bool:
    """Whether matching ``root`` reads no more than a statement's header: it is no
    compound statement, or a loop, ``if`` or ``with`` whose body is ``...`` (any block)
    and that has no ``else`` (one a code has is not compared)."""
    if not isinstance(root, cst.BaseCompoundStatement):
        return True
    if not isinstance(root, (cst.For, cst.While, cst.If, cst.With)) or getattr(root, "orelse", None) is not None:
        return False
    return is_ellipsis_suite(root.body)


def _selectivity(token: Token) -> int:
    if isinstance(token, AllOf):
        return max(len(word) + (2 if word in token.calls else 0) if isinstance(word, str) else 8 for word in token.words)
    return len(token) if isinstance(token, str) else 8


def _combine(key: str, children: list[Block]) -> Block:
    if key == "any":
        def test_any(node: cst.CSTNode, ctx: FileContext, b: Bindings) -> Bindings | None:
            for child in children:
                if isinstance(node, child.anchors):
                    found = child.test(node, ctx, b)
                    if found is not None:
                        return found
            return None

        anchors = tuple(dict.fromkeys(a for c in children for a in c.anchors))
        tokens = () if any(not c.tokens for c in children) else tuple(dict.fromkeys(t for c in children for t in c.tokens))
        required = frozenset.intersection(*(c.required for c in children))
        header_only = all(c.header_only for c in children)
        return Block(anchors, test_any, frozenset().union(*(c.metavars for c in children)), tokens, required, header_only)

    def test_all(node: cst.CSTNode, ctx: FileContext, b: Bindings) -> Bindings | None:
        current: Bindings | None = b
        for child in children:
            if current is None or not isinstance(node, child.anchors):
                return None
            current = child.test(node, ctx, current)
        return current

    anchors = tuple(a for a in children[0].anchors if all(a in c.anchors for c in children))
    with_tokens = [c.tokens for c in children if c.tokens]
    tokens = max(with_tokens, key=lambda ts: min(_selectivity(t) for t in ts)) if with_tokens else ()
    required = frozenset().union(*(c.required for c in children))
    header_only = all(c.header_only for c in children)
    return Block(anchors, test_all, frozenset().union(*(c.metavars for c in children)), tokens, required, header_only)


def _refine(inner: Block, data: Mapping[str, Any], line: int | None) -> Block:
    negated = [] if "not" not in data else (
        _blocks(data["not"], line_of(data, "not", line), "not") if isinstance(data["not"], list)
        else [compile_block(data["not"], line_of(data, "not", line))]
    )
    inside = _contexts(data.get("inside"), line_of(data, "inside", line), "inside")
    outside = _contexts(data.get("not-inside"), line_of(data, "not-inside", line), "not-inside")
    where = compile_where(data.get("where"), line_of(data, "where", line), inner.metavars)
    header_only = (
        inner.header_only
        and all(n.header_only for n in negated)
        and not _compares_enclosing_nodes(data.get("inside"), line)
        and not _compares_enclosing_nodes(data.get("not-inside"), line)
    )
    tokens = inner.tokens
    if not tokens and header_only:
        # Planning reads only the headers around a token: it must lie in the match's own code.
        tokens = _derived_tokens(data, inner.required, line, enclosing=False)
    if not tokens:
        tokens = _derived_tokens(data, inner.required, line)
        # An enclosing pattern's tokens lie above the match: the function around them is read.
        header_only = header_only and not tokens
    if not (negated or inside or outside or where):
        return Block(inner.anchors, inner.test, inner.metavars, tokens, inner.required, header_only)

    def test(node: cst.CSTNode, ctx: FileContext, b: Bindings) -> Bindings | None:
        found = inner.test(node, ctx, b)
        if found is None:
            return None
        if any(isinstance(node, n.anchors) and n.test(node, ctx, found) is not None for n in negated):
            return None
        if not all(c(node, ctx) for c in inside) or any(c(node, ctx) for c in outside):
            return None
        return found if all(w(ctx, found) for w in where) else None

    return Block(inner.anchors, test, inner.metavars, tokens, inner.required, header_only)


def _compares_enclosing_nodes(contexts: Any, line: int | None) -> bool:
    """Whether a ``pattern:`` context (possibly under ``any``) compares more of an
    enclosing node than its header (``if:`` and ``with:`` compare only headers, and so
    does ``for $D in $R: ...``). The contexts have been compiled once already."""
    for item in contexts or ():
        if not isinstance(item, dict):
            continue
        if "pattern" in item and not compile_block(item["pattern"], line).header_only:
            return True
        if "finally" in item:  # reads the statements of a ``finally`` block
            return True
        if _compares_enclosing_nodes(item.get("any"), line):
            return True
    return False


# A regex that reads text around its match cannot be moved from a node's code to the
# file's text; one that only looks at the characters it consumes (and at word
# boundaries, which a node's edges always are) can.
_CONTEXT_SENSITIVE = re.compile(r"\^|\$|\\[AZ]|\(\?[=!<]")


def _derived_tokens(data: Mapping[str, Any], required: frozenset[str], line: int | None, *, enclosing: bool = True) -> Prefilter:
    """A prefilter for a block whose code has no literal word: an enclosing pattern's
    tokens (the enclosing node lies in the same top-level statement; only with
    ``enclosing``) and the ``regex`` a metavariable bound by every match must satisfy
    (its code is in the match's text). Where there are both, whichever is rarer in a
    file selects."""
    found: list[Token] = []
    for item in data.get("inside") or () if enclosing else ():
        if isinstance(item, dict) and set(item) == {"pattern"}:
            tokens = compile_block(item["pattern"], line).tokens
            if len(tokens) > 1:
                return tokens  # alternatives: no one word stands for them
            if tokens and not isinstance(tokens[0], re.Pattern):
                return tokens  # words an import may rename: they select on their own
            if tokens:
                found.append(tokens[0])
                break
    for name, constraint in (data.get("where") or {}).items():
        regex = constraint.get("regex") if isinstance(constraint, dict) else None
        if str(name).lstrip("$") in required and isinstance(regex, str) and not _CONTEXT_SENSITIVE.search(regex):
            found.append(re.compile(regex))
            break
    if len(found) > 1:  # both occur in every match's top-level statement: the rarer selects
        return (AllOf(tuple(token for token in found if isinstance(token, (str, re.Pattern)))),)
    return tuple(found)


Context = Callable[[cst.CSTNode, FileContext], bool]


def _contexts(items: Any, line: int | None, key: str) -> list[Context]:
    if items is None:
        return []
    if not isinstance(items, list) or not items:
        raise MatcherSpecError(f"{key}: expected a non-empty list of contexts such as `- loop: true`; fix the list", line)
    return [_context(item, line_of(items, index, line), key) for index, item in enumerate(items)]


def _context(item: Any, line: int | None, key: str) -> Context:
    from ...library.fields import suggest

    if not isinstance(item, dict) or len(item) != 1:
        raise MatcherSpecError(f"{key}: each context is a mapping with one key ({', '.join(CONTEXT_KEYS)}); fix the item", line)
    kind, value = next(iter(item.items()))
    if kind == "cold-code":
        raise MatcherSpecError(f"{key}: context 'cold-code' is gone: declare `applies-to: {{runs: per-step}}` on the rule, and the engine leaves out code that runs once or offline", line)
    if kind not in CONTEXT_KEYS:
        raise MatcherSpecError(f"{key}: unknown context {kind!r}{suggest(kind, CONTEXT_KEYS)}; use one of {', '.join(CONTEXT_KEYS)}", line)
    if kind in _FLAGS:
        if value is not True:
            raise MatcherSpecError(f"{key}: context {kind!r} takes `true` (got {value!r}); use not-inside to negate it", line)
        return _FLAGS[kind]
    if kind in ("function", "class"):
        return _named(kind, compile_regex(value, line, f"{key}: {kind}"))
    if kind == "any":
        options = _contexts(value, line, f"{key}: any")
        return lambda node, ctx: any(c(node, ctx) for c in options)
    block = compile_block(value, line)
    return _enclosing(kind, block)


_FLAGS: Mapping[str, Context] = {
    "loop": lambda node, ctx: ctx.in_loop(node),
    "test-file": lambda node, ctx: ctx.is_test,
    "per-step": in_per_step_function,
    "configured-per-step": configured_per_step,
    "target": is_target,
    "returned-unplaced": returned_where_unplaced,
}


def _named(kind: str, regex: re.Pattern[str]) -> Context:
    if kind == "function":
        return lambda node, ctx: any(regex.search(f.name.value) for f in enclosing_functions(node, ctx))
    return lambda node, ctx: any(
        isinstance(a, cst.ClassDef) and regex.search(a.name.value) is not None for a in ctx.ancestors(node)
    )


def _enclosing(kind: str, block: Block) -> Context:
    def fits(candidate: cst.CSTNode, ctx: FileContext) -> bool:
        return isinstance(candidate, block.anchors) and block.test(candidate, ctx, {}) is not None

    if kind == "if":
        return lambda node, ctx: any(fits(branch.test, ctx) for branch in guarded_by(node, ctx))
    if kind == "with":
        return lambda node, ctx: any(
            isinstance(a, cst.With) and any(fits(item.item, ctx) for item in a.items) for a in ctx.ancestors(node)
        )
    if kind == "finally":
        return lambda node, ctx: any(
            a.finalbody is not None and any(fits(n, ctx) for n in subtree(a.finalbody))
            for a in holders_by(node, ctx, cst.Try, "body", (cst.FunctionDef, cst.Lambda))  # not a handler or ``finally``
        )
    return lambda node, ctx: any(fits(a, ctx) for a in ctx.ancestors(node))


def iter_code_patterns(data: Any) -> Iterable[str]:
    """Every code string of a pattern block (for documentation)."""
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for key, value in data.items():
            if key == "pattern" and isinstance(value, str):
                yield value
            elif key in ("any", "all", "not"):
                for item in value if isinstance(value, list) else [value]:
                    yield from iter_code_patterns(item)
