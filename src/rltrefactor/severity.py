"""How severe a finding is: the one definition, shared by rules and findings."""

from __future__ import annotations

from typing import Literal, get_args

Severity = Literal["error", "warning", "info"]  # most severe first
SEVERITIES: tuple[Severity, ...] = get_args(Severity)


def at_least(severity: Severity, threshold: Severity) -> bool:
    """Whether ``severity`` is ``threshold`` or more severe (the ``--fail-on`` test)."""
    return SEVERITIES.index(severity) <= SEVERITIES.index(threshold)
