"""How often the methods of well-known bases run, as data (``rules/protocols.yaml``).

A model names bases by qualified-name pattern and says, for each method, how often it
runs: ``per-layer``, ``per-step``, ``per-request`` or ``once``. A pattern is a dotted
name whose ``*`` stands for any number of dotted parts, none included (``vllm.*.AttentionImpl``
holds ``vllm.attention.backends.abstract.AttentionImpl`` and the same class in later module
layouts), so one model covers a framework's releases and its forks that keep the names.
A model may also name the methods its framework runs only on its CPU backend
(``host-methods``: a custom op's ``forward_cpu``), whose tensors live in host memory.
It is read like the rule library: unknown keys and values are ``file:line`` errors.

The evidence is the class's base as the file's imports resolve it, never the method's
name alone: a ``forward`` of a class whose base no model holds is left to the other
evidence of ``context.execution``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal, get_args

Frequency = Literal["per-layer", "per-step", "per-request", "once"]
FREQUENCIES: tuple[Frequency, ...] = get_args(Frequency)
_MODEL_KEYS = ("bases", "methods", "source", "host-methods")


@dataclass(frozen=True)
class ProtocolModel:
    bases: tuple[str, ...]  # qualified-name patterns; ``*`` spans dotted parts
    methods: tuple[tuple[str, Frequency], ...]
    source: str  # where the frequency is documented
    host_methods: tuple[str, ...] = ()  # run only on the framework's CPU backend

    @functools.cached_property
    def _pattern(self) -> re.Pattern[str]:
        return re.compile("|".join(_pattern_text(base) for base in self.bases))

    def holds(self, qualified_base: str) -> bool:
        return self._pattern.fullmatch(qualified_base) is not None


@dataclass(frozen=True)
class ProtocolMatch:
    """A method a model covers: how often it runs, and the model's base that says so."""

    frequency: Frequency
    base: str  # the class's base, qualified as the file's imports resolve it
    pattern: str  # the model's pattern that holds it


@dataclass(frozen=True)
class Protocols:
    models: tuple[ProtocolModel, ...]

    def method(self, bases: tuple[str, ...], method: str) -> ProtocolMatch | None:
        """How often ``method`` of a class whose (qualified) ``bases`` are given, nearest
        first, runs: by the nearest base a model holds that names the method (``*``: every
        method the model does not name itself), and among models of that base, the first.
        A framework's subclass (a diffusion text encoder) is more specific than its base
        (``torch.nn.Module``)."""
        for base in bases:
            for model in self.models:
                named = dict(model.methods)
                frequency = named.get(method, named.get("*"))
                if frequency is not None and model.holds(base):
                    pattern = next(p for p in model.bases if re.fullmatch(_pattern_text(p), base))
                    return ProtocolMatch(frequency, base, pattern)
        return None


    def host_method(self, bases: tuple[str, ...], method: str) -> ProtocolMatch | None:
        """The model that says ``method`` of a class whose (qualified) ``bases`` are given
        runs only on its framework's CPU backend, read by the nearest base as ``method``."""
        for base in bases:
            for model in self.models:
                if method in model.host_methods and model.holds(base):
                    pattern = next(p for p in model.bases if re.fullmatch(_pattern_text(p), base))
                    frequency = dict(model.methods).get(method, "per-layer")
                    return ProtocolMatch(frequency, base, pattern)
        return None


def _pattern_text(base: str) -> str:
    """``a.*.B`` as a regex: ``*`` spans any number of dotted parts, none included."""
    parts = base.split(".")
    pieces = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "*":
            pieces.append(r"\w+(?:\.\w+)*" if last else r"(?:\w+\.)*")
        else:
            pieces.append(re.escape(part) + ("" if last else r"\."))
    return "".join(pieces)


def protocol_model(item: object) -> ProtocolModel:
    """One model from its mapping (``bases``, ``methods``, ``source``); a ``ValueError``
    says on one line what is wrong and how to fix it (the caller adds where)."""
    if not isinstance(item, dict):
        raise ValueError("expected a mapping of bases, methods and source; fix the entry")
    unknown = sorted(set(item) - set(_MODEL_KEYS))
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r}; use {', '.join(_MODEL_KEYS)}")
    bases = item.get("bases")
    if not isinstance(bases, list) or not bases or not all(isinstance(b, str) for b in bases):
        raise ValueError("bases: expected a non-empty list of qualified names; list the bases")
    for base in bases:
        if not re.fullmatch(r"[A-Za-z_]\w*(?:\.(?:\*|[A-Za-z_]\w*))*", base):
            raise ValueError(f"bases: {base!r} is not a dotted name (a part may be `*`); fix it")
    methods = item.get("methods")
    if not isinstance(methods, dict) or not methods:
        raise ValueError("methods: expected a mapping of method name to frequency; name the methods")
    pairs: list[tuple[str, Frequency]] = []
    for name, frequency in methods.items():
        if frequency not in FREQUENCIES:
            raise ValueError(f"methods: {name}: unknown frequency {frequency!r}; use one of {', '.join(FREQUENCIES)}")
        pairs.append((str(name), frequency))
    source = item.get("source", "")
    if not isinstance(source, str):
        raise ValueError("source: expected text saying where the frequency is documented; fix it")
    host = item.get("host-methods", [])
    if not isinstance(host, list) or not all(isinstance(name, str) and name.isidentifier() for name in host):
        raise ValueError("host-methods: expected a list of method names; list the methods run on the CPU backend")
    return ProtocolModel(tuple(bases), tuple(pairs), source, tuple(host))


@functools.lru_cache(maxsize=1)
def bundled_protocols() -> Protocols:
    """The protocol models shipped with the rule library."""
    from .location import PROTOCOLS_FILE, bundled_rules_dir

    path = bundled_rules_dir() / PROTOCOLS_FILE
    return parse_protocols(path.read_text(encoding="utf-8"), f"rules/{PROTOCOLS_FILE}")


def parse_protocols(text: str, display: str) -> Protocols:
    from .fields import Reader
    from .yamlsafe import load_yaml

    top = Reader(load_yaml(text, display), display, "", 1)
    top.check_keys(("protocols",))
    table = top.get("protocols", list, required=True)
    models = []
    for index, item in enumerate(table):
        line = table.line_of(index) if hasattr(table, "line_of") else 1
        try:
            models.append(protocol_model(item))
        except ValueError as exc:
            raise top.error(line, f"protocols[{index}]: {exc}") from None
    return Protocols(tuple(models))
