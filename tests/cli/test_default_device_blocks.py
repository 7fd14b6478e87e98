"""A tensor a factory makes with no device inside ``with <device>:`` lives on that device:
a buffer built there and filled in a loop is no host staging tensor. The same buffer
built outside the block, or in a block that names the host, is. End to end through
``review --diff``, no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

# SGLang's Mllama image batching: the batch is built on the device of the step's tensors.
SGLANG_BATCHING = ("sglang/srt/models/mllama_images.py", '''import torch
from torch import nn


class MllamaImages(nn.Module):
    def forward(self, forward_batch, images):
        BLOCK
            batched = torch.zeros(len(images), 3, 224, 224, dtype=torch.float32)
        for i, image in enumerate(images):
            batched[i] = image
        return batched
''')

# vLLM's encoder inputs: a runner that makes its device the default while it batches.
VLLM_BATCHING = ("vllm/v1/worker/encoder_inputs.py", '''import torch
from torch import nn


class EncoderInputs(nn.Module):
    def forward(self, pixel_values):
        BLOCK
            batched = torch.empty(len(pixel_values), 3, 336, 336)
        for i, pixels in enumerate(pixel_values):
            batched[i] = pixels
        return batched
''')

BLOCKS = {
    "sglang": (SGLANG_BATCHING, "with forward_batch.out_cache_loc.device:", 'with torch.device("cpu"):'),
    "vllm": (VLLM_BATCHING, "with torch.device(self.device):", "if pixel_values:"),
}


@pytest.mark.parametrize("on_device", [True, False], ids=["device-block", "host-or-no-block"])
@pytest.mark.parametrize("style", sorted(BLOCKS))
def test_a_factory_under_a_default_device_block_is_no_host_staging(review_added, style, on_device):
    (path, text), device_block, other = BLOCKS[style]
    findings = review_added({path: text.replace("BLOCK", device_block if on_device else other)})
    staged = {f["line"] for f in findings if f["rule"] == "per-step-host-staging-tensor"}
    assert (8 in staged) is not on_device, findings
