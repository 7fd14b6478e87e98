"""``cache[tensor][shape] = view`` into a mapping the type engine names (``defaultdict``,
``dict``) is a lookup and a store, not advanced indexing: the write lands in the mapping.
The same write into a tensor indexed by a tensor lands in a copy and stays reported. End
to end through ``review --diff``, no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

RULE = "in-place-write-to-index-copy"

# DeepSpeed's inference allocator style: views cached per tensor and shape.
DEEPSPEED_ALLOCATOR = ("deepspeed/inference/v2/view_cache.py", '''from collections import defaultdict

import torch


class ViewCache:
    cache = HOLDER

    def view_of(tensor: torch.Tensor, shape: tuple) -> torch.Tensor:
        try:
            return ViewCache.cache[tensor][shape]
        except KeyError:
            ViewCache.cache[tensor][shape] = tensor.flatten()[: shape[0]].view(shape)
            return ViewCache.cache[tensor][shape]
''', 13)

# vLLM's style: buffers kept per request tensor, zeroed in place.
VLLM_BUFFERS = ("vllm/v1/worker/buffer_cache.py", '''import torch


class BufferCache:
    def __init__(self, n):
        self.buffers = HOLDER

    def reset(self, index: torch.Tensor):
        self.buffers[index].zero_()
''', 9)


@pytest.mark.parametrize("case", [DEEPSPEED_ALLOCATOR, VLLM_BUFFERS], ids=["deepspeed", "vllm"])
@pytest.mark.parametrize(("holder", "reported"), [("MAPPING", False), ("torch.zeros(8, 4)", True)],
                         ids=["mapping", "tensor"])
def test_a_lookup_in_a_mapping_is_no_index_copy(review_added, case, holder, reported):
    path, text, line = case
    mapping = "defaultdict(dict)" if "defaultdict" in text else "{}"
    findings = review_added({path: text.replace("HOLDER", mapping if holder == "MAPPING" else holder)})
    lines = {f["line"] for f in findings if f["rule"] == RULE}
    assert (line in lines) is reported, findings
