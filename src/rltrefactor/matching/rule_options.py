"""The ``[tool.rltrefactor.rule-options.RULE]`` tables (``[rule-options.RULE]`` in a file of
their own), checked against the options each rule's Python matcher declares. A bad table is
a one-line error naming the file and line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ..config import Config
from ..config.toml_text import key_line, located, read_text, section_line, table_name
from ..errors import ConfigError
from ..library.fields import suggest
from ..library.model import Library

if TYPE_CHECKING:
    from .matchers.registry import MatcherFactory


def check_rule_options(config: Config, library: Library) -> None:
    """Every rule-options table names a rule whose matcher takes those options."""
    if not config.rule_options:
        return
    # The registry imports every matcher module, and with them LibCST: only a review
    # whose configuration has rule options pays for that here.
    from .matchers.registry import PYTHON_MATCHERS

    rules = {rule.id: rule for rule in library.rules}
    text = read_text(config.source)
    for rule_id, options in config.rule_options.items():
        _check_rule_options(config.source, text, config.source_prefix, rule_id, options, rules, PYTHON_MATCHERS)


def _check_rule_options(
    path: str, text: str, prefix: str, rule_id: str, options: Any, rules: Mapping[str, Any],
    matchers: Mapping[str, MatcherFactory],
) -> None:
    from .matchers.options import MatcherSpecError

    section = table_name(prefix, "rule-options", rule_id)
    where = f"{located(path, text, section_line(text, section), 'rule-options', prefix=prefix)}: [{section}]"
    rule = rules.get(rule_id)
    if rule is None:
        raise ConfigError(
            f"{where}: unknown rule {rule_id!r}{suggest(rule_id, rules)}; list the ids with 'rltrefactor rules list'"
        )
    factory = matchers.get(rule.matcher.python) if rule.matcher and rule.matcher.python else None
    if factory is None or not factory.options:
        raise ConfigError(f"{where}: rule {rule_id!r} takes no options; delete the table")
    if not isinstance(options, dict):
        raise ConfigError(f"{where}: expected a table of option = value (got {options!r}); fix the value")
    try:
        factory.build(rule_id, rule.matcher.python, options)
    except MatcherSpecError as exc:
        bad = next((name for name in options if repr(name) in str(exc)), None)
        line = key_line(text, section, bad) if bad else None
        raise ConfigError(f"{located(path, text, line, 'rule-options', prefix=prefix)}: [{section}]: {exc}") from None
