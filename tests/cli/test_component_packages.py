"""SGLang's diffusion runtime runs the classes of its ``vaes`` and ``encoders`` packages once
per request (``rules/protocols.yaml``): a VAE's inner block, loaded by the registry and
never seen constructed by a caller, is no step. The same block in the ``dits`` package,
run at every denoising step, stays per step. End to end, no configuration, in the
runtime's VAE and text-encoder styles."""

from __future__ import annotations

import pytest

VAE_BLOCK = '''import torch
from torch import nn


class TemporalBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Conv3d(dim, dim, 1)

    def forward(self, x, frame_lengths):
        longest = int(frame_lengths.max().item())
        return self.proj(x[:, :, :longest])
'''

ENCODER_LAYER = '''from torch import nn


class PromptEncoderLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, hidden, attention_mask):
        if not bool(attention_mask.all()):
            hidden = hidden * attention_mask[..., None]
        return self.proj(hidden)
'''


@pytest.mark.parametrize(("text", "package", "line"), [
    (VAE_BLOCK, "vaes/video_vae_blocks.py", 11), (ENCODER_LAYER, "encoders/prompt_encoder.py", 10)],
    ids=["vae-block", "encoder-layer"])
@pytest.mark.parametrize(("component", "reported"), [("COMPONENT", False), ("dits", True)], ids=["component", "transformer"])
def test_a_vae_or_encoder_package_class_runs_per_request(review_added, text, package, line, component, reported):
    folder, _, module = package.partition("/")
    path = f"sglang/multimodal_gen/runtime/models/{folder if component == 'COMPONENT' else component}/{module}"
    findings = review_added({path: text})
    lines = {f["line"] for f in findings if f["rule"] in ("host-sync-in-hot-path", "device-scalar-read-in-hot-path")}
    assert (line in lines) is reported, findings
