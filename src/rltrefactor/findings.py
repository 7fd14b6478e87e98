"""What identifies a finding, and how its texts are filled in."""

from __future__ import annotations

import hashlib
import re
from typing import Mapping

_TEMPLATE_VAR = re.compile(r"\$([A-Z][A-Z0-9_]*)")
_WHITESPACE = re.compile(r"\s+")


def fill_template(template: str, bindings: Mapping[str, str]) -> str:
    return _TEMPLATE_VAR.sub(lambda m: bindings.get(m.group(1), m.group(0)), template)


def fingerprint(rule_id: str, definition: str, matched_text: str) -> str:
    """Identity of a finding that survives line shifts and re-indentation."""
    normalised = _WHITESPACE.sub(" ", matched_text).strip()
    digest = hashlib.sha256(f"{rule_id}\0{definition}\0{normalised}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:20]
