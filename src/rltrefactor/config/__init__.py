"""``[tool.rltrefactor]`` in the reviewed repository's pyproject.toml, or the same keys in a file of
their own (``files``), plus CLI overrides."""

from __future__ import annotations

import difflib
import functools
import os
import re
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from ..errors import ConfigError
from ..library.globs import GlobError, compile_glob, matches
from ..library.names import NameChange, Names, bundled_names
from ..library.protocols import ProtocolModel, Protocols, bundled_protocols, protocol_model
from ..severity import SEVERITIES, Severity
from .function_patterns import compile_entry
from .files import ConfigFile, find_config
from .toml_text import array_headers, key_label, key_line, key_location, located, read_text, table_name

# Globs of files whose functions run per step unless their own code says otherwise.
# Empty by default: where code runs is read from the code (``execution``); this is
# the override for layouts the code does not show.
DEFAULT_HOT_PATHS: tuple[str, ...] = ()
# Where code that never runs in serving usually lives: everything there is offline.
DEFAULT_COLD_PATHS = (
    "**/examples/**", "**/example/**", "**/benchmarks/**", "**/benchmark/**", "**/scripts/**", "**/docs/**",
)
DEFAULT_TEST_PATHS = ("**/tests/**", "**/test/**", "**/test_*.py", "**/*_test.py", "**/conftest.py")
# Code a repository carries but does not write: never reviewed unless configured.
DEFAULT_EXCLUDE = ("**/third_party/**", "**/vendor/**", "**/vendors/**", "**/_vendor/**")



@dataclass(frozen=True)
class Declared:
    """What the configuration says about one file's functions; it beats every heuristic.

    Function keys beat path keys, and ``cold-functions`` beats ``hot-functions`` (a cold
    pattern names the exceptions to a broad hot one)."""

    hot_functions: tuple[str, ...] = ()  # plain-name regexes or qualified names (``function_patterns``)
    cold_functions: tuple[str, ...] = ()
    hot_file: bool = False  # under hot-paths
    cold_file: bool = False  # under cold-paths
    names: Names | None = None  # the name lists, changed by the configuration; None: the bundled ones
    protocols: Protocols | None = None  # the protocol models, the configuration's first; None: the bundled ones


NOTHING_DECLARED = Declared()


@functools.lru_cache(maxsize=4)
def names_for(changes: tuple[NameChange, ...]) -> Names:
    """The bundled name lists with the configuration's changes."""
    return bundled_names().overridden(changes)


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] = ()  # rule ids, areas or opt-in groups; empty = every default-group rule
    ignore: tuple[str, ...] = ()
    per_path_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    hot_paths: tuple[str, ...] = DEFAULT_HOT_PATHS
    cold_paths: tuple[str, ...] = DEFAULT_COLD_PATHS
    # Functions that run per step / never run per step, as plain-name regexes or qualified
    # names (``function_patterns``); they beat whatever the code or the names suggest.
    hot_functions: tuple[str, ...] = ()
    cold_functions: tuple[str, ...] = ()
    names: tuple[NameChange, ...] = ()  # changes to the bundled name lists (``names``)
    protocols: tuple[ProtocolModel, ...] = ()  # the project's own protocol models, read before the bundled ones
    test_paths: tuple[str, ...] = DEFAULT_TEST_PATHS
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    rule_dirs: tuple[str, ...] = ()  # absolute, resolved against the repository root
    rule_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    fail_on: Severity = "warning"
    fail_on_unreviewable: bool = False  # a file that could not be reviewed fails the run
    # What a file the review could not read does: "fail" or "warn"; None (unset): it
    # fails a pre-commit review (``--staged``) only. ``fail_on_unreviewable`` beats it.
    unreviewable: str | None = None
    # Where functions run, read across the repository (``context.calls``): None (unset) or
    # True for every review, full scans included; False never (per file only).
    call_index: bool | None = None
    # Ask the type engine (``context.typeengine``) what values are; False: read them from the code only.
    type_engine: bool = True
    # The interpreter of the project's environment, where the type engine finds numpy and
    # torch (absolute, resolved against the repository root); None: the one running the review.
    type_engine_python: str | None = None
    perf_hooks: str = "perf_hooks"
    perf_tests: tuple[str, ...] = ()  # pytest arguments (test paths) for ``perf --tests``; (): pytest's own
    perf_stubs: tuple[str, ...] = ()  # modules the perf hook's processes import as stubs (``flash_attn``)
    perf_env: tuple[str, ...] = ()  # variable names or globs the perf hook's processes keep beside its allow-list
    docs_url: str | None = None  # the rules reference rule ids link to; None: no links
    warnings: tuple[str, ...] = ()  # one line each, for the user: read but not an error
    source: str = "defaults"  # the file the values came from, for error messages
    source_prefix: str = "tool.rltrefactor"  # the table's prefix in ``source`` ("" in a file of its own)


_KEYS = {
    "select": "list of rule ids, areas or opt-in groups (pedantic)",
    "ignore": "list of rule ids or areas",
    "per-path-ignores": "table of glob = [rule ids or areas]",
    "hot-paths": "list of globs",
    "extend-hot-paths": "list of globs",
    "cold-paths": "list of globs",
    "extend-cold-paths": "list of globs",
    "hot-functions": "list of function names (Class.method, *.step) or regular expressions",
    "cold-functions": "list of function names (Class.method, *.step) or regular expressions",
    "names": "table of extend-<list> / remove-<list> = [values]",
    "protocols": "array of tables {bases, methods, source, host-methods}",
    "test-paths": "list of globs",
    "exclude": "list of globs",
    "extend-exclude": "list of globs",
    "rule-dirs": "list of directories",
    "rule-options": "table of rule id = {option = value}",
    "fail-on": "one of error, warning, info",
    "fail-on-unreviewable": "true or false",
    "unreviewable": "one of fail, warn",
    "call-index": "true or false",
    "type-engine": "true or false",
    "type-engine-python": "a path to the project environment's python",
    "perf-hooks": "a directory",
    "perf-tests": "list of test paths (pytest arguments)",
    "perf-stubs": "list of module names",
    "perf-env": "list of environment variable names or globs",
    "docs-url": "URL",
}


def default_cache_dir() -> str:
    """``RLTREFACTOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/rltrefactor``, else ``~/.cache/rltrefactor``."""
    explicit = os.environ.get("RLTREFACTOR_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "rltrefactor")


def load_config(repo_root: str, overrides: Mapping[str, Any] | None = None, path: str | None = None) -> Config:
    """The configuration in the file ``path`` names (``--config``), else in the one found
    at ``repo_root`` (``files.find_config``), with ``overrides`` applied."""
    found = find_config(repo_root, path)
    config = _from_table(found, repo_root)
    if found.warnings:
        config = replace(config, warnings=found.warnings)
    return apply_overrides(config, overrides or {})


def apply_overrides(config: Config, overrides: Mapping[str, Any]) -> Config:
    changes = {key: value for key, value in overrides.items() if value not in (None, ())}
    if "fail_on" in changes:
        _check_choice(changes["fail_on"], SEVERITIES, "--fail-on", "")
    if "docs_url" in changes:
        _check_url(changes["docs_url"], "--docs-url")
    return replace(config, **changes)


def _from_table(found: ConfigFile, root: str) -> Config:
    table, path, text, prefix = found.table, found.path, found.text, found.prefix
    for key in table:
        if key not in _KEYS:
            near = difflib.get_close_matches(key, _KEYS, n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else ""
            raise ConfigError(
                f"{key_location(path, text, key, prefix=prefix)}: {f'[{prefix}]: ' if prefix else ''}unknown key '{key}'{hint}; "
                f"valid keys: {', '.join(_KEYS)}"
            )
    get: Callable[[str], Any] = lambda key: _typed(table, key, path, text, prefix)  # noqa: E731
    per_path = get("per-path-ignores") or {}
    for glob in per_path:
        line = key_line(text, table_name(prefix, "per-path-ignores"), glob)
        _check_glob(glob, f"{path}:{line}" if line else path, text, "per-path-ignores", prefix)
    hot = tuple(get("hot-paths") or DEFAULT_HOT_PATHS) + tuple(get("extend-hot-paths") or ())
    cold = tuple(get("cold-paths") if get("cold-paths") is not None else DEFAULT_COLD_PATHS)
    cold += tuple(get("extend-cold-paths") or ())
    # Micro-checks of the perf hook exercise engine code; they never run in serving.
    cold += (f"{(get('perf-hooks') or 'perf_hooks').strip('/')}/**",)
    hot_functions = tuple(get("hot-functions") or ())
    cold_functions = tuple(get("cold-functions") or ())
    for key, patterns in (("hot-functions", hot_functions), ("cold-functions", cold_functions)):
        for pattern in patterns:
            _check_regex(pattern, path, text, key, prefix)
    exclude = tuple(get("exclude") if get("exclude") is not None else DEFAULT_EXCLUDE) + tuple(get("extend-exclude") or ())
    for key, globs in (("hot-paths", hot), ("cold-paths", cold), ("test-paths", get("test-paths") or ()), ("exclude", exclude)):
        for glob in globs:
            _check_glob(glob, path, text, key, prefix)
    fail_on: Severity = get("fail-on") or "warning"  # checked on the next line
    _check_choice(fail_on, SEVERITIES, "fail-on", key_location(path, text, "fail-on", prefix=prefix))
    unreviewable = _unreviewable(get("unreviewable"), bool(get("fail-on-unreviewable")), path, text, prefix)
    return Config(
        select=tuple(get("select") or ()),
        ignore=tuple(get("ignore") or ()),
        per_path_ignores={glob: tuple(ids) for glob, ids in per_path.items()},
        hot_paths=hot,
        cold_paths=cold,
        hot_functions=hot_functions,
        cold_functions=cold_functions,
        names=_name_changes(get("names") or {}, path, text, prefix),
        protocols=_protocol_models(get("protocols") or [], path, text, prefix),
        test_paths=tuple(get("test-paths") or DEFAULT_TEST_PATHS),
        exclude=exclude,
        rule_dirs=tuple(os.path.normpath(os.path.join(root, d)) for d in get("rule-dirs") or ()),
        rule_options=dict(get("rule-options") or {}),
        fail_on=fail_on,
        fail_on_unreviewable=bool(get("fail-on-unreviewable")),
        unreviewable=unreviewable,
        call_index=get("call-index"),
        type_engine=get("type-engine") is not False,
        type_engine_python=os.path.normpath(os.path.join(root, get("type-engine-python")))
        if get("type-engine-python") else None,
        perf_hooks=get("perf-hooks") or "perf_hooks",
        perf_tests=tuple(get("perf-tests") or ()),
        perf_stubs=_checked_stubs(tuple(get("perf-stubs") or ()), _at_key(path, text, prefix, "perf-stubs")),
        perf_env=_checked_env(tuple(get("perf-env") or ()), _at_key(path, text, prefix, "perf-env")),
        docs_url=_check_url(get("docs-url"), _at_key(path, text, prefix, "docs-url")),
        source=path if table else "defaults",
        source_prefix=prefix,
    )


def _unreviewable(value: str | None, fail_on_unreviewable: bool, path: str, text: str, prefix: str) -> str | None:
    """``unreviewable``, checked; ``fail-on-unreviewable = true`` is its older spelling of "fail"."""
    where = key_location(path, text, "unreviewable", prefix=prefix)
    if value is not None:
        _check_choice(value, ("fail", "warn"), key_label(prefix, "unreviewable"), where)
    if value == "warn" and fail_on_unreviewable:
        raise ConfigError(f"{where}: {key_label(prefix, 'unreviewable')} = \"warn\" contradicts fail-on-unreviewable = true "
                          f"({key_location(path, text, 'fail-on-unreviewable', prefix=prefix)}); keep one of the two")
    return value


def _name_changes(table: Mapping[str, Any], path: str, text: str, prefix: str) -> tuple[NameChange, ...]:
    """``[tool.rltrefactor.names]``: ``extend-<list>`` / ``remove-<list>`` of a bundled name list."""
    from ..library.names import bundled_names

    changes: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for key, values in table.items():
        line = key_line(text, table_name(prefix, "names"), key)
        where = f"{located(path, text, line, 'names', prefix=prefix)}: [{table_name(prefix, 'names')}] {key}"
        action, _, entry = key.partition("-")
        if action not in ("extend", "remove") or not entry:
            raise ConfigError(f"{where}: expected extend-<list> or remove-<list> (got {key!r}); "
                              "name a list of rules/names.yaml, such as extend-set-up-words")
        if not (isinstance(values, list) and all(isinstance(v, str) for v in values)):
            raise ConfigError(f"{where}: expected a list of strings (got {values!r}); fix the value")
        problem = bundled_names().check_change(action, entry, tuple(values))
        if problem:
            raise ConfigError(f"{where}: {problem}")
        extend, remove = changes.get(entry, ((), ()))
        changes[entry] = (extend + tuple(values), remove) if action == "extend" else (extend, remove + tuple(values))
    return tuple(NameChange(entry, extend, remove) for entry, (extend, remove) in sorted(changes.items()))


_MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
# Modules the perf hook's own processes run on: a stub in their place would stop every check.
_UNSTUBBABLE = frozenset({"torch", "rltrefactor", "pytest", "_pytest", "pluggy"})


def _checked_stubs(names: tuple[str, ...], where: str) -> tuple[str, ...]:
    for name in names:
        if not _MODULE_NAME.fullmatch(name):
            raise ConfigError(f"{where}: expected a dotted module name such as "
                              f"flash_attn or triton.language (got {name!r}); fix the entry")
        top = name.split(".")[0]
        if top in _UNSTUBBABLE or top in sys.stdlib_module_names:
            raise ConfigError(f"{where}: {top} cannot be stubbed, the perf hook "
                              f"itself runs on it (got {name!r}); remove the entry")
    return names


def _checked_env(globs: tuple[str, ...], where: str) -> tuple[str, ...]:
    for glob in globs:
        if not re.fullmatch(r"[\w*?]+", glob, re.ASCII):
            raise ConfigError(f"{where}: expected a variable name or a glob such as "
                              f"MYAPP_* (got {glob!r}); use letters, digits, _ and the wildcards * and ?")
        if not re.search(r"\w", glob, re.ASCII):
            raise ConfigError(f"{where}: a glob matching every name passes every "
                              f"credential on (got {glob!r}); name the variables, or prefixes such as MYAPP_*")
    return globs


def _check_url(url: str | None, where: str) -> str | None:
    if url is not None and not re.fullmatch(r"https?://[^\s/]+\S*", url):
        raise ConfigError(
            f"{where}: expected an http(s) URL of the rules reference (got {url!r}); "
            "e.g. https://github.com/acme/engine/blob/main/docs/rules.md, made by 'rltrefactor rules docs'"
        )
    return url


def _at_key(path: str, text: str, prefix: str, key: str) -> str:
    """``file:line: [tool.rltrefactor] key``: where a message about a top-level key starts."""
    return f"{key_location(path, text, key, prefix=prefix)}: {key_label(prefix, key)}"


def _typed(table: Mapping[str, Any], key: str, path: str, text: str, prefix: str) -> Any:
    value = table.get(key)
    if value is None:
        return None
    expected = _KEYS[key]
    if expected.startswith("list"):
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    elif expected.startswith("array of tables"):
        ok = isinstance(value, list) and all(isinstance(v, dict) for v in value)
    elif expected.startswith("table"):
        ok = isinstance(value, dict)
    else:
        ok = isinstance(value, bool) if expected == "true or false" else isinstance(value, str)
    if key == "per-path-ignores" and ok:
        ok = all(isinstance(v, list) and all(isinstance(i, str) for i in v) for v in value.values())
    if not ok:
        raise ConfigError(
            f"{_at_key(path, text, prefix, key)}: expected {_article(expected)} "
            f"(got {value!r}); fix the value"
        )
    return value


def _article(expected: str) -> str:
    return expected if expected.startswith(("one of", "true")) else f"a {expected}"


def _check_glob(glob: str, path: str, text: str, key: str, prefix: str) -> None:
    try:
        compile_glob(glob)
    except GlobError as exc:
        raise ConfigError(f"{_at_key(path, text, prefix, key)}: {exc}") from None


def _check_regex(pattern: str, path: str, text: str, key: str, prefix: str) -> None:
    try:
        compile_entry(pattern)
    except ValueError as exc:
        raise ConfigError(f"{_at_key(path, text, prefix, key)}: {exc}; fix it") from None


def _check_choice(value: str, choices: tuple[str, ...], name: str, where: str) -> None:
    if value not in choices:
        prefix = f"{where}: " if where else ""
        raise ConfigError(f"{prefix}{name}: expected one of {', '.join(choices)} (got {value!r})")


# Command-line flags that name rules, and the Config field each one replaces.
_NAMING_FLAGS = {"select": "--select", "ignore": "--ignore"}


def check_names(config: Config, overrides: Mapping[str, Any], library: Any) -> None:
    """Every rule id or area the configuration names exists (the rule options are checked
    against their matchers by ``matching.rule_options``).

    A name given on the command line is blamed on its flag, a name from the configuration
    on the file and line that holds it. ``library`` is the loaded rule library.
    """
    from ..library.model import GROUPS

    rules = {rule.id: rule for rule in library.rules}
    known = list(rules) + sorted({rule.area for rule in library.rules})
    # An opt-in group is selected by name; "default" runs anyway and names nothing to select.
    selectable = known + [group for group in GROUPS if group != "default"]
    text, prefix = read_text(config.source), config.source_prefix
    for key, flag in _NAMING_FLAGS.items():
        from_flag = overrides.get(key) not in (None, ())
        names_here = selectable if key == "select" else known
        for name in getattr(config, key):
            if name not in names_here:
                where = flag if from_flag else _at_key(config.source, text, prefix, key)
                _unknown_name(where, name, names_here)
    for glob, names in config.per_path_ignores.items():
        for name in names:
            if name not in known:
                table = table_name(prefix, "per-path-ignores")
                line = key_line(text, table, glob)
                where = f"{located(config.source, text, line, 'per-path-ignores', prefix=prefix)}: [{table}] {glob!r}"
                _unknown_name(where, name, known)


def _unknown_name(where: str, name: str, known: list[str]) -> None:
    from ..library.fields import closest

    near = closest(name, known)
    hint = f"did you mean {near!r}?" if near else "list them with 'rltrefactor rules list'"
    raise ConfigError(f"{where}: unknown rule or area {name!r}; {hint}")


def declared_for(config: Config, path: str) -> Declared:
    """What ``config`` declares about the functions of ``path`` (it wins over every heuristic)."""
    return Declared(
        config.hot_functions, config.cold_functions,
        hot_file=matches(path, config.hot_paths), cold_file=matches(path, config.cold_paths),
        names=names_for(config.names),
        protocols=protocols_for(config.protocols),
    )


@functools.lru_cache(maxsize=4)
def protocols_for(models: tuple[ProtocolModel, ...]) -> Protocols:
    """The configuration's protocol models, then the bundled ones: the first model that
    holds a base and names the method decides."""
    return Protocols(models + bundled_protocols().models)


def _protocol_models(tables: list[Any], path: str, text: str, prefix: str) -> tuple[ProtocolModel, ...]:
    """``[[tool.rltrefactor.protocols]]``: models of the project's own bases, written like
    the entries of ``rules/protocols.yaml``."""
    section = table_name(prefix, "protocols")
    headers = array_headers(text, section)
    models = []
    for index, table in enumerate(tables):
        line = headers[index] if index < len(headers) else None
        where = f"{located(path, text, line, 'protocols', prefix=prefix)}: [[{section}]]"
        try:
            models.append(protocol_model(table))
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return tuple(models)
