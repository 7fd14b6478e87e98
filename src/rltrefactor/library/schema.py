"""One rule entry of a rule file, validated strictly into a ``Rule``.

Every key is known, typed and checked here; what a matcher block means is checked
by compiling it (``matchers.registry.build_matcher``) once the rule is built.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

from .globs import GlobError, compile_glob
from ..severity import SEVERITIES
from .fields import Reader, _kind, _short, suggest
from .model import (
    AREAS,
    CONFIDENCES,
    DEFAULT_GROUP_MIN_TRUE,
    FIX_SAFETY,
    GROUPS,
    MODULE_KINDS,
    REPORTS_ON,
    STATUSES,
    Applicability,
    Example,
    ExampleKind,
    MatcherSpec,
    ModuleKind,
    Origin,
    Precision,
    Rule,
    RuleGroup,
)

RULE_ID = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)+$")
VERSION = re.compile(r"^\d+\.\d+\.\d+$")
EXPECT = re.compile(r"#\s*expect\b")
RULE_KEYS = (
    "id", "title", "area", "status", "since", "severity", "confidence", "applies-to",
    "problem", "preferred", "exceptions", "impact", "fix", "fix-safety", "references",
    "matcher", "manual", "examples", "group", "precision", "kept-default", "reports-on",
)  # fmt: skip
# ``true`` and ``false`` are YAML booleans; the loader keys them by their ``str``.
PRECISION_KEYS = {"true": ("true", "True"), "debatable": ("debatable",), "false": ("false", "False")}
APPLIES_KEYS = ("paths", "exclude", "exclude-modules", "runs", "tests")
# ``runs``: where a rule's findings can be (see docs/writing-rules.md), and whether that is per-step code only.
RUNS = {"anywhere": False, "per-step": True}
EXAMPLE_KEYS = ("path", "bad", "good")
# The three forms of a matcher block, as a bad one's error names them (docs/writing-rules.md).
MATCHER_FORMS = (
    "write a pattern block (keys pattern, any, all, not, inside, not-inside, where), "
    "`python: ID` with optional `options:`, or `emitted-by: perf-hook`; see docs/writing-rules.md"
)
EMITTERS = ("perf-hook", "engine")  # "engine": suppression checks


def default_example_path(rule_id: str) -> str:
    """Where an example without a ``path`` is reviewed: a hot-path module."""
    return f"model_executor/examples/{rule_id.replace('-', '_')}.py"


def parse_rule(data: object, file: str, area: str, line: int, library: str) -> Rule:
    head = Reader(data, file, "", line)
    rule_id = head.get("id", str, required=True)
    if not RULE_ID.match(rule_id):
        raise head.error(
            head.line_of("id"),
            f"id: {rule_id!r} is not a kebab-case hazard name; use lowercase words joined by '-', "
            "such as 'host-sync-in-hot-path'",
        )
    r = Reader(data, file, f"rule {rule_id!r}", line)
    r.check_keys(RULE_KEYS)
    rule_area = r.get("area", str, default=area)
    if rule_area not in AREAS:
        raise r.error(r.line_of("area"), f"area: unknown area {rule_area!r}; use one of {', '.join(AREAS)}")
    if rule_area != area:
        raise r.error(
            r.line_of("area"),
            f"area: {rule_area!r} does not match the file's area {area!r}; move the rule to rules/{rule_area}.yaml",
        )
    since = r.get("since", str, required=True)
    if not VERSION.match(since):
        raise r.error(r.line_of("since"), f"since: expected a library version such as 1.0.0 (got {since!r}); fix the value")
    origin = Origin(file, r.line)
    matcher = _matcher(r, origin)
    severity, confidence = r.choice("severity", SEVERITIES), r.choice("confidence", CONFIDENCES)
    if severity == "error" and confidence != "high":
        raise r.error(
            r.line_of("severity"),
            f"severity: error needs confidence: high (got confidence {confidence}); an error fails the run, "
            "so lower the severity to warning or raise the confidence",
        )
    precision = _precision(r)
    group, kept_default = _group(r, precision)
    if matcher is None and r.has("reports-on"):
        raise r.error(r.line_of("reports-on"), "reports-on: a manual rule reports no findings; remove the key")
    return Rule(
        id=rule_id,
        title=r.get("title", str, required=True),
        area=area,
        status=r.choice("status", STATUSES),
        since=since,
        severity=severity,
        confidence=confidence,
        applicability=_applicability(r),
        problem=r.get("problem", str, required=True).strip(),
        preferred=r.get("preferred", str, required=True).strip(),
        exceptions=r.get("exceptions", str, required=True).strip(),
        impact=r.get("impact", str, required=True).strip(),
        fix=r.get("fix", str, required=True).strip(),
        fix_safety=r.choice("fix-safety", FIX_SAFETY),
        references=r.strings("references"),
        examples=_examples(r, rule_id, testable=matcher is not None and matcher.emitted_by is None),
        matcher=matcher,
        origin=origin,
        library=library,
        group=group,
        precision=precision,
        kept_default=kept_default,
        reports_on=r.choice("reports-on", REPORTS_ON, default="all-code"),
    )


def _precision(r: Reader) -> Precision | None:
    data = r.get("precision", dict, default=None)
    if data is None:
        return None
    p = Reader(data, r.file, r.where + ": precision", r.line_of("precision"))
    p.check_keys(("measured", *(spelling for spellings in PRECISION_KEYS.values() for spelling in spellings)))
    counts: dict[str, int] = {}
    for name, spellings in PRECISION_KEYS.items():
        key = next((s for s in spellings if p.has(s)), None)
        if key is None:
            raise p.error(p.line, f"missing required key {name!r}; add the number of findings judged {name}")
        count = p.get(key, int)
        if count < 0:
            raise p.error(p.line_of(key), f"{name}: a count of findings cannot be negative (got {count}); fix the value")
        counts[name] = count
    return Precision(counts["true"], counts["debatable"], counts["false"], p.get("measured", str, required=True))


def _group(r: Reader, precision: Precision | None) -> tuple[RuleGroup, str]:
    """The rule's group, and why a rule measured under half true stays in the default one.

    A default-group rule under half true needs ``kept-default: <reason>``, so that the
    exception is written where the figure is, and shown beside it."""
    group = r.choice("group", GROUPS, default="default")
    share = precision.true_share if precision is not None else None
    noisy = share is not None and share < DEFAULT_GROUP_MIN_TRUE
    kept = r.get("kept-default", str, default="").strip()
    if kept and not (noisy and group == "default"):
        raise r.error(r.line_of("kept-default"), "kept-default: only a default-group rule measured under 50 % true needs a reason; remove the key")
    if noisy and group == "default" and not kept:
        raise r.error(
            r.line_of("precision"),
            f"precision: {precision.figure if precision else ''} is under {round(DEFAULT_GROUP_MIN_TRUE * 100)} % true, "
            "too noisy for the default set; add `group: pedantic` (or `kept-default: <reason>` to keep it by exception)",
        )
    return group, kept


def _matcher(r: Reader, origin: Origin) -> MatcherSpec | None:
    manual = r.get("manual", bool, default=False)
    if manual and r.has("matcher"):
        raise r.error(r.line_of("manual"), "a rule is either `manual: true` or has a `matcher`, not both; remove one")
    if manual:
        return None
    if not r.has("matcher"):
        raise r.error(r.line, "missing required key 'matcher'; add a matcher, or `manual: true` for a checklist rule")
    if r.has("manual"):
        raise r.error(r.line_of("manual"), "manual: false is the default; remove the key")
    value = r.data["matcher"]
    if not isinstance(value, dict):
        raise r.error(r.line_of("matcher"), f"matcher: expected a mapping (got {_kind(value)} {_short(value)}); {MATCHER_FORMS}")
    block = r.get("matcher", dict)
    where = Origin(origin.file, r.line_of("matcher"))
    if "emitted-by" in block:
        m = Reader(block, r.file, r.where + ": matcher", where.line)
        m.check_keys(("emitted-by",))
        return MatcherSpec(origin=where, emitted_by=m.choice("emitted-by", EMITTERS))
    if "python" in block:
        m = Reader(block, r.file, r.where + ": matcher", where.line)
        m.check_keys(("python", "options"))
        return MatcherSpec(origin=where, python=m.get("python", str), options=m.get("options", dict, default={}))
    return MatcherSpec(origin=where, pattern=block)


def _applicability(r: Reader) -> Applicability:
    data = r.get("applies-to", dict, default=None)
    if data is None:
        return Applicability()
    a = Reader(data, r.file, r.where + ": applies-to", r.line_of("applies-to"))
    if a.has("hot-paths-only"):
        raise a.error(a.line_of("hot-paths-only"), "hot-paths-only: replaced by `runs: per-step` (the engine then leaves out code that runs once or offline); rename the key")
    a.check_keys(APPLIES_KEYS)
    paths = a.strings("paths", default=("**/*.py",))
    exclude = a.strings("exclude")
    for key, globs in (("paths", paths), ("exclude", exclude)):
        for glob in globs:
            try:
                compile_glob(glob)
            except GlobError as exc:
                raise a.error(a.line_of(key), f"{key}: {exc}") from None
    return Applicability(
        paths=paths,
        exclude=exclude,
        per_step=RUNS[a.choice("runs", tuple(RUNS), default="anywhere")],
        exclude_modules=_module_kinds(a),
        tests=a.get("tests", bool, default=False),
    )


def _module_kinds(a: Reader) -> tuple[ModuleKind, ...]:
    kinds = a.strings("exclude-modules")
    for kind in kinds:
        if kind not in MODULE_KINDS:
            raise a.error(a.line_of("exclude-modules"), f"exclude-modules: unknown module kind {kind!r}{suggest(kind, MODULE_KINDS)}; use one of {', '.join(MODULE_KINDS)}")
    return tuple(k for k in MODULE_KINDS if k in kinds)


def _examples(r: Reader, rule_id: str, *, testable: bool) -> tuple[Example, ...]:
    items = r.get("examples", list, required=True)
    examples: list[Example] = []
    for index, item in enumerate(items):
        line = items.line_of(index) if hasattr(items, "line_of") else r.line_of("examples")
        e = Reader(item, r.file, f"{r.where}: examples[{index}]", line)
        e.check_keys(EXAMPLE_KEYS)
        if not (e.has("bad") or e.has("good")):
            raise e.error(e.line, "an example needs `bad:` or `good:` code (or both); add the code")
        path = e.get("path", str, default=default_example_path(rule_id))
        kind: ExampleKind
        for kind in ("bad", "good"):
            if e.has(kind):
                examples.append(_example(e, kind, path, testable=testable))
    for kind in ("bad", "good"):
        if not any(example.kind == kind for example in examples):
            raise r.error(r.line_of("examples"), f"examples: no {kind} example; add one with `{kind}: |`")
    return tuple(examples)


def _example(e: Reader, kind: ExampleKind, path: str, *, testable: bool) -> Example:
    code = e.get(kind, str)
    first_line = e.value_line(kind)
    try:
        # CPython's parser checks the syntax far faster than building a LibCST tree.
        compile(code, "<example>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        raise e.error(
            first_line + (exc.lineno or 1) - 1,
            f"{kind}: example does not parse as Python ({exc.msg}); fix the code",
        ) from None
    expected = expect_lines(code)
    origin = Origin(e.file, first_line)
    if kind == "good" and expected:
        raise e.error(first_line + expected[0] - 1, "good: a good example must not carry `# expect`; move the line to a bad example")
    if kind == "bad" and testable and not expected:
        raise e.error(
            e.line_of("bad"),
            "bad: no line is marked `# expect`; mark each line the rule must report",
        )
    return Example(kind=kind, code=code, path=path, origin=origin, expected_lines=expected if kind == "bad" else ())


def expect_lines(code: str) -> tuple[int, ...]:
    """1-based lines whose comment is an ``# expect`` marker (never text inside strings)."""
    lines: list[int] = []
    if "expect" not in code:
        return ()
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.COMMENT and EXPECT.match(token.string):
                lines.append(token.start[0])
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return ()
    return tuple(lines)
