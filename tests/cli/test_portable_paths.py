"""A device read on a portable path runs as often as the step's tensors are off the CUDA
device, or the platform lacks an optional kernel: its frequency is unknown, never per step.
The same read behind a configuration flag, a parameter test or a CUDA-only branch stays per
step. A read of a parameter's fallback (``if max_q is None: max_q = ...item()``) runs where
a caller leaves the parameter out: per step where such a caller is seen, unknown where no
caller shows. End to end through ``review --diff``, no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

SYNC_RULES = ("host-sync-in-hot-path", "device-scalar-read-in-hot-path")


def _contexts(review_added, path: str, text: str) -> dict[int, str]:
    """How often the review says each synchronizing finding of ``text`` runs, by line."""
    findings = review_added({path: text})
    return {f["line"]: f["execution"]["context"] for f in findings if f["rule"] in SYNC_RULES}


# SGLang's KV read-table style: a plain PyTorch loop for tensors off CUDA, a kernel otherwise.
SGLANG_TABLE = '''import torch


class ReadTable(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.use_triton = True

    def forward(self, req_to_token, seq_lens, out):
        if TEST:
            for b in range(out.shape[0]):
                live = int(seq_lens[b].item())
                out[b, :live] = req_to_token[b, :live]
        return out
'''


@pytest.mark.parametrize(("test", "context"), [
    ("not req_to_token.is_cuda", "unknown"),
    ('req_to_token.device.type != "cuda"', "unknown"),
    ('req_to_token.device.type == "mps"', "unknown"),
    ("not self.use_triton", "per-step"),
    ('req_to_token.device.type == "cuda"', "per-step"),
], ids=["not-is-cuda", "type-not-cuda", "other-device", "configuration-flag", "cuda-branch"])
def test_a_branch_taken_off_cuda_is_of_unknown_frequency(review_added, test, context):
    contexts = _contexts(review_added, "sglang/kernels/ops/kvcache/read_table.py", SGLANG_TABLE.replace("TEST", test))
    assert contexts.get(12) == context, contexts


# vLLM's sampler style: CUDA tensors leave for a kernel first; the rest is the portable path.
VLLM_REJECTION = '''import torch
from torch import nn

from vllm.kernels.rejection import rejection_kernel


class RejectionSampler(nn.Module):
    def forward(self, probs, counter, top_ks):
        if TEST:
            return rejection_kernel(probs, counter)
        drawn = counter.item()
        return probs[:drawn]
'''


@pytest.mark.parametrize(("test", "context"), [
    ("probs.is_cuda", "unknown"),
    ("rejection_kernel is not None", "unknown"),
    ("top_ks is not None", "per-step"),
    ("probs.dim() == 1", "per-step"),
], ids=["left-on-cuda", "left-with-kernel", "parameter-test", "shape-test"])
def test_code_after_a_return_on_cuda_or_with_a_kernel_is_of_unknown_frequency(review_added, test, context):
    contexts = _contexts(review_added, "vllm/v1/sample/rejection.py", VLLM_REJECTION.replace("TEST", test))
    assert contexts.get(11) == context, contexts


# SGLang's speculative-decoding style: an optional kernel, None where the platform has none.
SGLANG_RENORM = '''import torch
from torch import nn

from sglang.kernels.ops.sampling.renorm import top_k_renorm_prob

HAS_FAST_PATH = True


class Renorm(nn.Module):
    def forward(self, probs, top_ks):
        if TEST:
            return BODY
        max_top_k = int(top_ks.max().item())
        return torch.topk(probs, k=max_top_k, dim=-1).values
'''


@pytest.mark.parametrize(("test", "body", "context"), [
    ("top_k_renorm_prob", "top_k_renorm_prob(probs, top_ks)", "unknown"),
    ("HAS_FAST_PATH", "probs", "per-step"),
], ids=["called-kernel", "flag-not-called"])
def test_a_truth_test_is_a_kernel_only_where_the_branch_calls_it(review_added, test, body, context):
    text = SGLANG_RENORM.replace("TEST", test).replace("BODY", body)
    contexts = _contexts(review_added, "sglang/srt/speculative/renorm.py", text)
    assert contexts.get(13) == context, contexts


def test_a_function_binding_the_name_has_no_optional_kernel(review_added):
    text = SGLANG_RENORM.replace("TEST", "top_k_renorm_prob is not None").replace("BODY", "top_k_renorm_prob(probs, top_ks)")
    text = text.replace("    def forward(self, probs, top_ks):\n", "    def forward(self, probs, top_ks):\n"
                        "        top_k_renorm_prob = self.renorm\n")
    contexts = _contexts(review_added, "sglang/srt/speculative/renorm.py", text)
    assert contexts.get(14) == "per-step", contexts


# SGLang's diffusion style: a length the pipeline computed once, passed to the module's forward.
SGLANG_TEXT_LENGTH = '''import torch
from torch import nn


class VideoTransformer(nn.Module):
    def forward(self, hidden_states, text_mask, max_text_seq_len: int | None = None):
        if max_text_seq_len is None:
            max_text_seq_len = int(text_mask.sum(dim=1).max().item())
        return hidden_states[:, :max_text_seq_len]
'''

# vLLM's attention-op style: a helper whose per-step caller leaves the host bound out.
VLLM_PACK = '''import torch
from torch import nn


def pack_seq(x, lengths, max_len=None):
    if max_len is None:
        max_len = int(lengths.max().item())
    return x[:, :max_len]


class Indexer(nn.Module):
    def forward(self, x, lengths, bound):
        return CALL
'''


def test_a_forward_parameter_fallback_is_of_unknown_frequency(review_added):
    contexts = _contexts(review_added, "sglang/multimodal_gen/runtime/models/dits/video.py", SGLANG_TEXT_LENGTH)
    assert contexts.get(8) == "unknown", contexts


@pytest.mark.parametrize("call", ["pack_seq(x, lengths, max_len=None)", "pack_seq(x, lengths)"],
                         ids=["passed-none", "left-out"])
def test_a_parameter_fallback_a_per_step_caller_takes_stays_per_step(review_added, call):
    contexts = _contexts(review_added, "vllm/v1/attention/ops/pack.py", VLLM_PACK.replace("CALL", call))
    assert contexts.get(7) == "per-step", contexts


def test_a_parameter_fallback_every_caller_fills_is_not_reported(review_added):
    contexts = _contexts(review_added, "vllm/v1/attention/ops/pack.py", VLLM_PACK.replace("CALL", "pack_seq(x, lengths, bound)"))
    assert 7 not in contexts, contexts
