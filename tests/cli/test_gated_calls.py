"""A helper that a per-step function calls only under a diagnostics gate (``if
self.validate_routing:``, ``if debug:``: ``cold-conditions``) does not run per step
through that call: a full scan holds its findings back as code of unknown frequency. The
same helper called outside the gate, or under a negated gate, stays per step. End to end,
no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

# DeepSpeed style: an MoE layer validates its routed payload only when asked to.
DEEPSPEED_STYLE = '''import torch
from torch import nn


def payload_digest(payload):
    return torch.tensor([payload.sum().item()], device=payload.device)


class AutoEPMoELayer(nn.Module):
    def __init__(self, validate_routing):
        super().__init__()
        self.validate_routing = validate_routing

    def forward(self, hidden, payload):
        GATE
            payload_digest(payload)
        return hidden
'''

# vLLM style: a debug record of the batch's lengths.
VLLM_STYLE = '''import torch
from torch import nn

DEBUG_DUMP = False
RECORDED = []


def record_lengths(seq_lens):
    RECORDED.append(seq_lens.max().item())


class GPUModelRunner(nn.Module):
    def forward(self, input_ids, seq_lens):
        GATE
            record_lengths(seq_lens)
        return input_ids
'''

CASES = {
    "deepspeed": ("deepspeed/moe/auto_ep_layer.py", DEEPSPEED_STYLE, 6, "if self.validate_routing:", "if not self.validate_routing:"),
    "vllm": ("vllm/v1/worker/gpu_model_runner.py", VLLM_STYLE, 9, "if DEBUG_DUMP:", "if seq_lens.numel() > 0:"),
}


def _shown(repo, cli, style: str, gate: str) -> tuple[bool, int]:
    path, text, line, _, _ = CASES[style]
    repo.write(path, text.replace("GATE", gate))
    repo.commit("engine")
    run = cli("review", path, "--format", "json", "--no-cache", cwd=repo.path)
    assert run.code in (0, 1), run.err
    return line in {f["line"] for f in run.json()["findings"]}, run.json()["summary"]["unknown_frequency"]


@pytest.mark.parametrize("style", sorted(CASES))
def test_a_helper_called_only_under_a_diagnostics_gate_is_not_per_step(repo, cli, style):
    shown, held = _shown(repo, cli, style, CASES[style][3])
    assert not shown and held >= 1


@pytest.mark.parametrize(("style", "gate"), [
    *((style, CASES[style][4]) for style in sorted(CASES)),
    ("deepspeed", "if not self.training or self.validate_routing:"),  # holds in every eval step
], ids=["deepspeed", "vllm", "deepspeed-or"])
def test_the_same_helper_called_on_every_step_is_per_step(repo, cli, style, gate):
    shown, _ = _shown(repo, cli, style, gate)
    assert shown
