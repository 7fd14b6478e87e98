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


# The gate in a conditional expression: SGLang's model runner enters a KV-cache canary's
# context only when one is installed; a vLLM runner takes a debug record's value only
# with its debug switch on.
SGLANG_CHOSEN = ("sglang/srt/model_executor/model_runner.py", '''import contextlib

import torch
from torch import nn


def verify_kv_slots(forward_batch):
    return torch.tensor([forward_batch.seq_lens.sum().item()], device="cuda")


class ModelRunner(nn.Module):
    def __init__(self, canary_manager, overlap_manager):
        super().__init__()
        self.canary_manager = canary_manager
        self.overlap_manager = overlap_manager

    def forward(self, forward_batch):
        checked = (
            verify_kv_slots(forward_batch)
            if (c := GATED) is not None
            else contextlib.nullcontext()
        )
        return forward_batch, checked
''', 8)
VLLM_CHOSEN = ("vllm/v1/worker/gpu_model_runner.py", '''import torch
from torch import nn


class GPUModelRunner(nn.Module):
    def __init__(self, debug_dump, dump_lengths):
        super().__init__()
        self.debug_dump = debug_dump
        self.dump_lengths = dump_lengths

    def forward(self, input_ids, seq_lens):
        longest = seq_lens.max().item() if GATED else -1
        return input_ids[:longest]
''', 12)
CHOSEN = {  # the gate, and a look-alike switch that holds on ordinary steps
    "sglang": (SGLANG_CHOSEN, "self.canary_manager", "self.overlap_manager"),
    "vllm": (VLLM_CHOSEN, "self.debug_dump", "self.dump_lengths"),
}


@pytest.mark.parametrize("gated", [True, False], ids=["diagnostics-gate", "ordinary-switch"])
@pytest.mark.parametrize("style", sorted(CHOSEN))
def test_a_value_a_conditional_expression_chooses_under_a_diagnostics_gate_is_not_per_step(repo, cli, style, gated):
    (path, text, line), gate, ordinary = CHOSEN[style]
    repo.write(path, text.replace("GATED", gate if gated else ordinary))
    repo.commit("engine")
    run = cli("review", path, "--format", "json", "--no-cache", cwd=repo.path)
    assert run.code in (0, 1), run.err
    shown = {f["line"] for f in run.json()["findings"]}
    assert (line in shown) is not gated, run.json()["findings"]


# An environment flag that asks for a check, in capitals (vLLM's ``envs.VLLM_MONO_CHECK``,
# SGLang's ``envs.SGLANG_CHECK_KV_PAGE_INVARIANTS.get()``), gates diagnostics; a lower-case
# switch that merely contains the word is an ordinary one.
@pytest.mark.parametrize(("style", "gate", "gated"), [
    ("vllm", "if envs.VLLM_MONO_CHECK:", True),
    ("deepspeed", "if envs.SGLANG_CHECK_KV_PAGE_INVARIANTS.get():", True),
    ("deepspeed", "if self.check_overflow:", False),
    ("vllm", "if envs.VLLM_CHECKPOINT_EVERY_STEP:", False),
], ids=["vllm-env-check", "sglang-env-check", "lower-case-switch", "checkpoint-flag"])
def test_an_environment_check_flag_is_a_diagnostics_gate(repo, cli, style, gate, gated):
    shown, held = _shown(repo, cli, style, gate)
    assert shown is not gated and (held >= 1 or not gated)
