"""YAML reading that keeps line numbers, on top of PyYAML's safe loader.

Only the safe loader's tags are constructed, so nothing in a rule file can create an
object or run code. Mappings and sequences come back as ``dict``/``list`` subclasses
that remember where each key and item was written, for ``file:line`` errors.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..errors import RuleLibraryError
from .lines import LineList, LineMap

__all__ = ["LineList", "LineMap", "load_yaml"]


class _DuplicateKey(Exception):
    def __init__(self, key: str, line: int) -> None:
        self.key, self.line = key, line


# libyaml's parser when present (several times faster); constructors stay the safe ones.
class _LineLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]  # a base picked at import time
    pass


def _content_line(node: yaml.Node) -> int:
    block = isinstance(node, yaml.ScalarNode) and node.style in ("|", ">")
    return node.start_mark.line + 1 + (1 if block else 0)


def _construct_map(loader: _LineLoader, node: yaml.MappingNode) -> LineMap:
    loader.flatten_mapping(node)
    result = LineMap()
    result.line = node.start_mark.line + 1
    result.key_lines, result.value_lines = {}, {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            key = str(key)
        if key in result:
            raise _DuplicateKey(key, key_node.start_mark.line + 1)
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
        result.value_lines[key] = _content_line(value_node)
    return result


def _construct_seq(loader: _LineLoader, node: yaml.SequenceNode) -> LineList:
    result = LineList(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    result.item_lines = [child.start_mark.line + 1 for child in node.value]
    return result


_LineLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_LineLoader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


def _reject_aliases(text: str, path: str) -> None:
    """Rule files need no anchors; refusing aliases rules out expansion bombs."""
    for event in yaml.parse(text, Loader=_LineLoader):
        if isinstance(event, yaml.AliasEvent):
            raise RuleLibraryError(
                f"{path}:{event.start_mark.line + 1 if event.start_mark else 1}: YAML alias '*{event.anchor}': rule files may not "
                "use anchors and aliases; write the value out"
            )


def load_yaml(text: str, path: str) -> Any:
    """Parse one YAML document; every failure is a one-line ``RuleLibraryError``."""
    try:
        _reject_aliases(text, path)
        return yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass
    except _DuplicateKey as exc:
        raise RuleLibraryError(
            f"{path}:{exc.line}: duplicate key {exc.key!r}: a key may appear once per mapping; "
            "merge the two entries"
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise RuleLibraryError(
            f"{path}{line}: invalid YAML: {exc.problem or exc.context}; fix the syntax"
        ) from None
    except yaml.YAMLError as exc:
        raise RuleLibraryError(f"{path}: invalid YAML: {exc}; fix the syntax") from None
