"""Prefilters never hide a finding: every automated rule, with and without its prefilter.

Without a prefilter a rule may hit anywhere, so planning parses every statement and
leaves nothing empty: that run is the reference. With its prefilter, each rule runs
alone, so no other rule's tokens keep lines it needs. The corpus needs no torch: the
rules' own examples, the demo engine, and variants of both that move tokens and code
around (an import alias, a class around the code, calls wrapped over lines, comments
between a block's header and its body). Every path is hot, so per-step rules apply.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

import pytest

from rltrefactor.config import Config
from rltrefactor.matching.engine import Engine
from rltrefactor.context.filemodel import FileModel
from rltrefactor.library.loader import load_library
from rltrefactor.library.model import Rule
from rltrefactor.matching.matchers.base import FileContext, Match, Matcher
from rltrefactor.matching.matchers.registry import build_matcher
from rltrefactor.matching.prefilter import Prefilter
from rltrefactor.matching.regions.reach import MatcherReach

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo_engine"
LIBRARY = load_library()
AUTOMATED = tuple(rule for rule in LIBRARY.rules if rule.automated and rule.status != "retired")
KNOWN = frozenset(rule.id for rule in LIBRARY.rules)
CONFIG = Config(hot_paths=("**",))


@dataclass(frozen=True)
class Source:
    label: str  # where the text comes from and which variant it is, for failure messages
    path: str  # the repository path it is reviewed as: applicability depends on it
    text: str


# What a finding says, wherever it is: two runs agree when these agree.
FindingKey = tuple[str, str, str, int, int, str, str, str]


class _Unfiltered:
    """A matcher without a prefilter: planning parses every statement of every file for it."""

    def __init__(self, inner: Matcher) -> None:
        self.rule_id = inner.rule_id
        self.prefilter: Prefilter = ()
        self.reach = MatcherReach()  # with no tokens, nothing is left empty anyway
        self._inner = inner

    def find(self, ctx: FileContext) -> Iterable[Match]:
        return self._inner.find(ctx)


# --- variants: each returns the changed text, or None where it has nothing to change ---


def _torch_alias(text: str) -> str | None:
    """``import torch as th``: tokens naming ``torch`` must follow the alias."""
    if not re.search(r"^import torch$", text, re.MULTILINE):
        return None
    lines = []
    for line in text.split("\n"):
        if line == "import torch":
            lines.append("import torch as th")
        elif re.match(r"\s*(?:import|from)\s", line):
            lines.append(line)
        else:
            lines.append(re.sub(r"(?<![\w.])torch\.", "th.", line))
    return "\n".join(lines)


def _in_class(text: str) -> str | None:
    """Everything but the top-level imports inside a class: functions become methods,
    module code becomes class-level code (setup and whole-class handling)."""
    body = ast.parse(text).body
    imports = [node for node in body if isinstance(node, (ast.Import, ast.ImportFrom))]
    rest = [node for node in body if node not in imports]
    if not rest:
        return None
    lines = text.split("\n")
    first = min(_first_line(node) for node in rest)
    import_lines = {n for node in imports if _first_line(node) >= first for n in range(_first_line(node), _last_line(node) + 1)}
    head = lines[: first - 1] + [lines[n - 1] for n in sorted(import_lines)]
    moved = [line for n, line in enumerate(lines[first - 1 :], first) if n not in import_lines]
    return "\n".join(head + ["class Holder:"] + [f"    {line}" if line.strip() else line for line in moved])


def _first_line(node: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _last_line(node: ast.stmt) -> int:
    return node.end_lineno or node.lineno


def _wrapped(text: str) -> str | None:
    """A line break after every opening bracket and every comma inside brackets."""
    breaks, depth = [], 0
    for token in _tokens(text):
        if token.type != tokenize.OP:
            continue
        if token.string in "([{" or (token.string == "," and depth > 0):
            breaks.append(token.end)
        depth += (token.string in "([{") - (token.string in ")]}")
    return _insert_at(text, breaks, "\n        ") if breaks else None


def _commented(text: str) -> str | None:
    """A blank line and a comment between every block's header and its body."""
    tokens = list(_tokens(text))
    headers = [
        token.start for token, after in zip(tokens, tokens[1:])
        if token.type == tokenize.OP and token.string == ":" and after.type == tokenize.NEWLINE
    ]
    return _insert_at(text, [(line, len(text.split("\n")[line - 1])) for line, _ in headers], "\n\n# between header and body") if headers else None


def _tokens(text: str) -> Iterator[tokenize.TokenInfo]:
    return tokenize.generate_tokens(io.StringIO(text).readline)


def _insert_at(text: str, positions: list[tuple[int, int]], inserted: str) -> str:
    """``inserted`` at each (1-based line, 0-based column) of ``text``; right to left,
    so the positions still to come stay where they were."""
    lines = text.split("\n")
    for line, column in sorted(set(positions), reverse=True):
        row = lines[line - 1]
        lines[line - 1] = row[:column] + inserted + row[column:]
    return "\n".join(lines)


VARIANTS: dict[str, Callable[[str], str | None]] = {
    "torch-alias": _torch_alias,
    "in-class": _in_class,
    "wrapped": _wrapped,
    "commented": _commented,
}


def _originals() -> Iterator[Source]:
    for rule in AUTOMATED:
        for number, example in enumerate(rule.examples, 1):
            yield Source(f"{rule.id} {example.kind} example {number}", example.path, example.code)
    for file in sorted(DEMO.rglob("*.py")):
        path = str(file.relative_to(DEMO))
        yield Source(f"demo {path}", path, file.read_text())


def _variants(source: Source) -> Iterator[Source]:
    try:
        ast.parse(source.text)
    except SyntaxError:
        return  # a deliberately broken snippet: there is no code to move around
    for name, vary in VARIANTS.items():
        text = vary(source.text)
        if text is not None and text != source.text:
            ast.parse(text)  # a variant is valid Python, or the variant itself is wrong
            yield Source(f"{source.label} ({name})", source.path, text)


@pytest.fixture(scope="module")
def corpus() -> tuple[Source, ...]:
    originals = list(_originals())
    return tuple(originals + [variant for source in originals for variant in _variants(source)])


@pytest.fixture(scope="module")
def models(corpus: tuple[Source, ...]) -> dict[str, FileModel]:
    """Each source's model, made once: it depends on the text and the configuration, not
    on the rules, so every engine here reviews the same one."""
    maker = Engine((), CONFIG, KNOWN)
    return {source.label: maker.model(source.path, source.text) for source in corpus}


def _findings(engine: Engine, corpus: Iterable[Source], models: dict[str, FileModel]) -> set[FindingKey]:
    found: set[FindingKey] = set()
    for source in corpus:
        for f in engine.review_file(source.path, source.text, model=models[source.label]).findings:
            found.add((source.label, f.rule_id, f.path, f.span.line, f.span.column, f.title, f.impact, f.fix))
    return found


@pytest.fixture(scope="module")
def unfiltered(corpus: tuple[Source, ...], models: dict[str, FileModel]) -> set[FindingKey]:
    """Every rule at once: with nothing left unparsed, a rule's findings do not depend
    on which other rules run."""
    engine = Engine(AUTOMATED, CONFIG, KNOWN, matcher_factory=lambda rule: _Unfiltered(build_matcher(rule)))
    return _findings(engine, corpus, models)


def test_the_corpus_holds_every_variant_and_findings_to_compare(corpus, unfiltered):
    labels = " ".join(source.label for source in corpus)
    assert all(f"({name})" in labels for name in VARIANTS)
    assert len(corpus) > 3 * len(list(_originals()))
    assert len({key[1] for key in unfiltered}) > len(AUTOMATED) // 2


@pytest.mark.parametrize("rule", AUTOMATED, ids=lambda rule: rule.id)
def test_a_prefilter_changes_no_finding_of_its_rule(rule: Rule, corpus, models, unfiltered):
    filtered = _findings(Engine((rule,), CONFIG, KNOWN), corpus, models)
    expected = {key for key in unfiltered if key[1] == rule.id}
    assert sorted(expected - filtered) == [], "hidden by the prefilter or planning"
    assert sorted(filtered - expected) == [], "found only with the prefilter"
