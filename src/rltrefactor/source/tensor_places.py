"""Where a tensor method leaves its result: the names both readers of residency share
(``context.calls.facts`` over tree-sitter, ``matching.matchers.residency.locations`` over
LibCST), so that the call index and the rules agree on what a host value is."""

from __future__ import annotations

# Methods whose result lives where their receiver lives.
SAME_PLACE_METHODS = frozenset(
    "view view_as reshape flatten contiguous detach clone float half bfloat16 int long bool squeeze unsqueeze "
    "permute transpose t expand narrow select split chunk to_dense type_as "
    "sum mean max min amax amin argmax argmin prod any all cumsum cumprod abs neg round diff clamp clamp_min clamp_max "
    "floor ceil".split()
)
# Methods whose result is in host memory wherever the receiver lives.
HOST_METHODS = frozenset({"cpu", "numpy", "tolist", "pin_memory"})
