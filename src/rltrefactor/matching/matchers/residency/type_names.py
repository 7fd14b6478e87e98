"""Types as the type engine prints them (``numpy.ndarray``, ``list[int]``, ``Tensor | None``),
read for where their values live. Text in, verdict out: no syntax tree, no engine."""

from __future__ import annotations


def is_host_type(answer: str, host_types: tuple[str, ...]) -> bool:
    """Whether every alternative of a type the engine printed lives in host memory: a
    ``host-types`` name, a container (``list[...]``, ``dict[...]``) of host types only, or an
    intersection with one (what ``isinstance(n, Tensor)`` narrows a declared ``int`` to)."""
    alternatives = split_top(answer, "|")
    return bool(alternatives) and all(_host_alternative(alt.strip(), host_types) for alt in alternatives)


def _host_alternative(text: str, host_types: tuple[str, ...]) -> bool:
    narrowed = split_top(text, "&")
    if len(narrowed) > 1:  # ``Tensor & int``: an ``int`` narrowed by ``isinstance``; declared a host value
        return any(_host_alternative(part.strip(), host_types) for part in narrowed)
    base, _, rest = text.partition("[")
    name = base.strip().rpartition(".")[2]
    if name in ("Optional", "Union"):
        return is_host_type(" | ".join(split_top(rest.removesuffix("]"), ",")), host_types)
    if name not in host_types:
        return False
    if not rest or name == "Literal":
        return True
    arguments = [a.strip() for a in split_top(rest.removesuffix("]"), ",")]
    if name in ("ndarray", "NDArray"):  # numpy's shape and dtype parameters are not values
        return True
    return all(a in ("...", "()") or is_host_type(a, host_types) for a in arguments)


def split_top(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` outside brackets."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"[": 1, "(": 1, "]": -1, ")": -1}.get(char, 0)
        if char == separator and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return [part for part in parts if part.strip()]


# A module's parameters live on its device (the model is placed before it runs); so do
# their gradients and data. What the type engine calls them:
PARAMETER_TYPES = frozenset({"Parameter", "UninitializedParameter", "Buffer"})
PARAMETER_TENSORS = frozenset({"grad", "data"})


# What the type engine prints for a value it knows nothing of (``None`` where it is optional).
NO_ANSWER = ("Unknown", "None", "Any", "typing.Any")


def known_alternatives(answer: str | None, unknown: tuple[str, ...] = NO_ANSWER) -> list[str]:
    """The alternatives of a printed type (``a | b``, brackets kept whole) but ``unknown``."""
    if answer is None:
        return []
    return [alt.strip() for alt in split_top(answer, "|") if alt.strip() not in unknown]


def is_tensor_type(answer: str | None) -> bool:
    """A type the engine printed is a tensor (``torch._tensor.Tensor``, a ``Parameter``; in a
    union, every alternative but ``Unknown`` and ``None``)."""
    known = known_alternatives(answer, ("Unknown", "None"))
    return bool(known) and all(alt.rpartition(".")[2] in ({"Tensor"} | PARAMETER_TYPES) for alt in known)
