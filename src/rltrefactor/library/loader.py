"""Loading the rule library: the bundled ``rules/`` plus repository-local rule dirs.

Invariants a loaded ``Library`` keeps: ids are unique across every directory, no
active id is a retired one, every file's area is its name, and every rule passes the
caller's ``check_rule`` as soon as it is read (``matchers.registry.check_matcher``
compiles its matcher block; this package does not import the matchers). Any
violation stops the load with one ``file:line`` message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterable

from ..errors import RuleLibraryError
from .fields import Reader, suggest
from .location import LIBRARY_FILE, NAMES_FILE, PROTOCOLS_FILE, bundled_rules_dir
from .model import AREAS, Library, Rule
from .schema import VERSION, parse_rule
from .yamlsafe import load_yaml

SCHEMA_VERSION = 1
_BUNDLED_KEYS = ("schema", "version", "retired-ids")
_LOCAL_KEYS = ("schema", "version", "retired-ids", "disable")

RuleCheck = Callable[[Rule], None]  # raises RuleLibraryError naming the rule's file and line


@dataclass(frozen=True)
class RuleDir:
    """One directory's rules, before cross-directory checks."""

    label: str  # how the directory is named in messages: "rules" or the path given
    version: str
    rules: tuple[Rule, ...]
    retired: frozenset[str]
    disable: tuple[tuple[str, str], ...] = ()  # (id, "file:line") pairs


def load_library(extra_dirs: Iterable[str] | None = (), *, check_rule: RuleCheck | None = None) -> Library:
    """The bundled library plus ``extra_dirs`` (repo-local rules), validated.

    ``check_rule`` runs on each rule right after it is parsed, so its errors come in
    file order, before any cross-directory check.
    """
    bundled = read_rule_dir(bundled_rules_dir(), label="rules", bundled=True, check_rule=check_rule)
    locals_ = [
        read_rule_dir(Path(d), label=display_dir(d), bundled=False, check_rule=check_rule) for d in (extra_dirs or ())
    ]
    retired = set(bundled.retired)
    seen: dict[str, Rule] = {}
    for directory in (bundled, *locals_):
        retired |= directory.retired
    for directory in (bundled, *locals_):
        for rule in directory.rules:
            _check_unique(rule, seen, retired)
            seen[rule.id] = rule
    drop = _disabled_ids(locals_, seen)
    rules = tuple(rule for rule in seen.values() if rule.id not in drop)
    return Library(version=bundled.version, schema=SCHEMA_VERSION, rules=rules, retired_ids=frozenset(retired),
                   local_versions=tuple((directory.label, directory.version) for directory in locals_))


def _check_unique(rule: Rule, seen: dict[str, Rule], retired: set[str]) -> None:
    where = f"{rule.origin}: rule {rule.id!r}"
    if rule.id in seen:
        raise RuleLibraryError(f"{where}: duplicate id, first defined at {seen[rule.id].origin}; ids are unique forever, pick a new one")
    if rule.id in retired and rule.status != "retired":
        raise RuleLibraryError(f"{where}: id was retired and may never be reused; pick a new id")
    if rule.status == "retired" and rule.id not in retired:
        raise RuleLibraryError(f"{where}: status is retired but the id is not in retired-ids; add it to {LIBRARY_FILE}")


def _disabled_ids(locals_: list[RuleDir], seen: dict[str, Rule]) -> set[str]:
    wanted = [pair for directory in locals_ for pair in directory.disable]
    for rule_id, where in wanted:
        if rule_id not in seen:
            raise RuleLibraryError(f"{where}: disable: unknown rule {rule_id!r}{suggest(rule_id, seen)}; check the id with 'rltrefactor rules list'")
    return {rule_id for rule_id, _ in wanted}


def read_rule_dir(directory: Path, *, label: str, bundled: bool, check_rule: RuleCheck | None = None) -> RuleDir:
    """Every ``<area>.yaml`` in ``directory`` plus its ``library.yaml``."""
    if not directory.is_dir():
        raise RuleLibraryError(f"{label}: rule directory does not exist; create it or fix rule-dirs")
    meta_path = directory / LIBRARY_FILE
    if bundled or meta_path.is_file():
        meta = _read_meta(meta_path, f"{label}/{LIBRARY_FILE}", bundled)
    else:
        meta = RuleDir(label, "0.0.0", (), frozenset())
    rules: list[Rule] = []
    # The bundled library's name lists (``names``) are read where they are used.
    skipped = (LIBRARY_FILE, NAMES_FILE, PROTOCOLS_FILE) if bundled else (LIBRARY_FILE,)
    files = sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml") and p.name not in skipped)
    files.sort(key=lambda p: AREAS.index(p.stem) if p.stem in AREAS else len(AREAS))
    for path in files:
        rules.extend(_read_area_file(path, f"{label}/{path.name}", "bundled" if bundled else label, check_rule))
    return replace(meta, rules=tuple(rules))


def _read_meta(path: Path, display: str, bundled: bool) -> RuleDir:
    if not path.is_file():
        raise RuleLibraryError(f"{display}: missing; the rule library needs schema, version and retired-ids")
    data = load_yaml(path.read_text(encoding="utf-8"), display)
    r = Reader(data, display, "", 1)
    r.check_keys(_BUNDLED_KEYS if bundled else _LOCAL_KEYS)
    schema = r.get("schema", int, required=True)
    if schema != SCHEMA_VERSION:
        raise r.error(r.line_of("schema"), f"schema: unsupported rule schema {schema} (this rltrefactor reads {SCHEMA_VERSION}); upgrade rltrefactor or rewrite the rules")
    version = r.get("version", str, required=bundled, default="0.0.0")
    if not VERSION.match(version):
        raise r.error(r.line_of("version"), f"version: expected MAJOR.MINOR.PATCH (got {version!r}); fix the value")
    retired = r.strings("retired-ids")
    disable = r.strings("disable")
    disable_pairs = tuple((rule_id, f"{display}:{r.line_of('disable')}") for rule_id in disable)
    return RuleDir(display.rsplit("/", 1)[0], version, (), frozenset(retired), disable_pairs)


def _read_area_file(path: Path, display: str, library: str, check_rule: RuleCheck | None) -> list[Rule]:
    area = path.stem
    if area not in AREAS:
        raise RuleLibraryError(f"{display}: unknown area {area!r}{suggest(area, AREAS)}; name each rule file after its area ({', '.join(AREAS)})")
    data = load_yaml(path.read_text(encoding="utf-8"), display)
    r = Reader(data, display, "", 1)
    r.check_keys(("area", "rules"))
    declared = r.get("area", str, required=True)
    if declared != area:
        raise r.error(r.line_of("area"), f"area: {declared!r} does not match the file name {path.name!r}; rename the file or fix the area")
    items = r.get("rules", list, required=True)
    rules = []
    for index, item in enumerate(items):
        rule = parse_rule(item, display, area, items.line_of(index), library)
        if check_rule is not None:
            check_rule(rule)
        rules.append(rule)
    return rules


def library_version(directory: str) -> str | None:
    """The version in ``directory``'s ``library.yaml``, or None when it has none."""
    meta = Path(directory) / LIBRARY_FILE
    if not meta.is_file():
        return None
    return _read_meta(meta, f"{display_dir(directory)}/{LIBRARY_FILE}", bundled=False).version


def display_dir(directory: str) -> str:
    path = os.path.abspath(directory)
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative
