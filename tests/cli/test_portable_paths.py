"""A device read on a portable path runs as often as the step's tensors are off the CUDA
device, or the platform lacks an optional kernel: its frequency is unknown, never per step.
The same read behind a configuration flag, a parameter test or a CUDA-only branch stays per
step. A read of a parameter's fallback (``if max_q is None: max_q = ...item()``) runs where
a caller leaves the parameter out: per step where such a caller is seen, unknown where no
caller shows. End to end through ``review --diff``, no configuration, in two engines' styles;
each test reviews its variants as the files of one change."""

from __future__ import annotations

SYNC_RULES = ("host-sync-in-hot-path", "device-scalar-read-in-hot-path")


def _contexts(review_added, variants: dict[str, str]) -> dict[str, dict[int, str]]:
    """How often the review of one change adding every variant (path -> text) says each
    synchronizing finding runs, by path and line."""
    found: dict[str, dict[int, str]] = {path: {} for path in variants}
    for finding in review_added(variants):
        if finding["rule"] in SYNC_RULES:
            found[finding["path"]][finding["line"]] = finding["execution"]["context"]
    return found


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


def test_a_branch_taken_off_cuda_is_of_unknown_frequency(review_added):
    expected = {
        "not req_to_token.is_cuda": "unknown",
        'req_to_token.device.type != "cuda"': "unknown",
        'req_to_token.device.type == "mps"': "unknown",
        "not self.use_triton": "per-step",  # a configuration flag picks a path the step may always take
        'req_to_token.device.type == "cuda"': "per-step",
    }
    paths = {f"sglang/kernels/ops/kvcache/read_table_{i}.py": test for i, test in enumerate(expected)}
    found = _contexts(review_added, {path: SGLANG_TABLE.replace("TEST", test) for path, test in paths.items()})
    assert {test: found[path].get(12) for path, test in paths.items()} == expected, found


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


def test_code_after_a_return_on_cuda_or_with_a_kernel_is_of_unknown_frequency(review_added):
    expected = {
        "probs.is_cuda": "unknown",
        "rejection_kernel is not None": "unknown",
        "top_ks is not None": "per-step",  # a parameter, not an optional kernel
        "probs.dim() == 1": "per-step",
    }
    paths = {f"vllm/v1/sample/rejection_{i}.py": test for i, test in enumerate(expected)}
    found = _contexts(review_added, {path: VLLM_REJECTION.replace("TEST", test) for path, test in paths.items()})
    assert {test: found[path].get(11) for path, test in paths.items()} == expected, found


# SGLang's speculative-decoding style: an optional kernel, None where the platform has none.
SGLANG_RENORM = '''import torch
from torch import nn

from sglang.kernels.ops.sampling.renorm import top_k_renorm_prob

HAS_FAST_PATH = True


class Renorm(nn.Module):
    def forward(self, probs, top_ks):
        BOUND
        if TEST:
            return BODY
        max_top_k = int(top_ks.max().item())
        return torch.topk(probs, k=max_top_k, dim=-1).values
'''


def test_an_optional_kernel_is_a_global_the_leaving_branch_calls(review_added):
    variants = {
        "called-kernel": ("top_k_renorm_prob", "top_k_renorm_prob(probs, top_ks)", "pass", "unknown"),
        "flag-not-called": ("HAS_FAST_PATH", "probs", "pass", "per-step"),
        "bound-in-function": ("top_k_renorm_prob is not None", "top_k_renorm_prob(probs, top_ks)",
                              "top_k_renorm_prob = self.renorm", "per-step"),
    }
    paths = {f"sglang/srt/speculative/renorm_{i}.py": name for i, name in enumerate(variants)}
    found = _contexts(review_added, {
        path: SGLANG_RENORM.replace("TEST", variants[name][0]).replace("BODY", variants[name][1])
        .replace("BOUND", variants[name][2])
        for path, name in paths.items()})
    assert {name: found[path].get(14) for path, name in paths.items()} == {n: v[3] for n, v in variants.items()}, found


# SGLang's diffusion style: a length the pipeline computed once, passed to the module's forward.
SGLANG_TEXT_LENGTH = '''import torch
from torch import nn


class VideoTransformer(nn.Module):
    def forward(self, hidden_states, text_mask, max_text_seq_len: int | None = None):
        if max_text_seq_len is None:
            max_text_seq_len = int(text_mask.sum(dim=1).max().item())
        return hidden_states[:, :max_text_seq_len]
'''

# vLLM's attention-op style: a helper whose per-step caller may leave the host bound out.
VLLM_PACK = '''import torch
from torch import nn


def pack_seq_INDEX(x, lengths, max_len=None):
    if max_len is None:
        max_len = int(lengths.max().item())
    return x[:, :max_len]


class IndexerINDEX(nn.Module):
    def forward(self, x, lengths, bound):
        return pack_seq_INDEX(x, lengths, CALL)
'''


def test_a_parameter_fallback_runs_where_a_caller_leaves_the_parameter_out(review_added):
    calls = {"passed-none": ("max_len=None", "per-step"), "left-out": ("", "per-step"),
             "always-passed": ("bound", None)}  # every caller fills it: the fallback is dropped
    paths = {f"vllm/v1/attention/ops/pack_{i}.py": name for i, name in enumerate(calls)}
    variants = {path: VLLM_PACK.replace("INDEX", str(i)).replace(", CALL", f", {calls[name][0]}" if calls[name][0] else "")
                for i, (path, name) in enumerate(paths.items())}
    forward = "sglang/multimodal_gen/runtime/models/dits/video.py"
    found = _contexts(review_added, {**variants, forward: SGLANG_TEXT_LENGTH})
    assert {name: found[path].get(7) for path, name in paths.items()} == {n: c[1] for n, c in calls.items()}, found
    assert found[forward].get(8) == "unknown", found  # a module's forward: no caller shows


# SGLang's vision-attention style: the caller may pass the metadata it precomputed; the
# other arm computes the same values from the sequence bounds.
SGLANG_VISION = '''import torch
from torch import nn


class VisionFlash3Attention(nn.Module):
    def forward(self, q, cu_seqlens, forward_metadata=None):
        if TEST:
            cu = cu_seqlens.to(q.device)
            max_seqlen = (cu[1:] - cu[:-1]).max().item()
        else:
            OTHER
        return q[:max_seqlen]
'''

# vLLM's metadata-builder style: a helper writes into the caller's buffer where it gets one.
VLLM_VERIFY = '''import torch


def build_verify_indices_INDEX(lens, out_indices=None):
    clamped = lens.clamp_min(1)
    if out_indices is None:
        kv_indices = lens.new_empty((int(clamped.sum().item()),))
    else:
        kv_indices = OTHER
    return kv_indices


class VerifyBuilderINDEX(torch.nn.Module):
    def forward(self, lens, buffer):
        return build_verify_indices_INDEX(lens, CALL)
'''


def test_an_arm_that_stands_in_for_an_optional_parameter_runs_where_a_caller_leaves_it_out(review_added):
    forwards = {  # (the branch's test, the other arm): how often the read at line 9 runs
        "absent": ("forward_metadata is None", "max_seqlen = forward_metadata.max_seqlen", "unknown"),
        "required-parameter": ("q is None", "max_seqlen = q.shape[0]", "per-step"),  # every caller gives one
        "unrelated-arm": ("forward_metadata is None", "max_seqlen = 0", "per-step"),  # the other arm ignores the parameter
    }
    helpers = {  # (the call's argument, the other arm's value): how often the read at line 7 runs
        "left-out": ("", "out_indices", "per-step"),
        "always-passed": ("buffer", "out_indices", None),  # every caller fills it: the fallback is dropped
    }
    vision = {f"sglang/srt/layers/attention/vision_{i}.py": n for i, n in enumerate(forwards)}
    verify = {f"vllm/v1/attention/backends/verify_{i}.py": n for i, n in enumerate(helpers)}
    texts = {path: SGLANG_VISION.replace("TEST", forwards[n][0]).replace("OTHER", forwards[n][1]) for path, n in vision.items()}
    for i, (path, name) in enumerate(verify.items()):
        argument, other, _ = helpers[name]
        texts[path] = VLLM_VERIFY.replace("INDEX", str(i)).replace("OTHER", other).replace(
            ", CALL", f", {argument}" if argument else "")
    found = _contexts(review_added, texts)
    assert {n: found[p].get(9) for p, n in vision.items()} == {n: c[2] for n, c in forwards.items()}, found
    assert {n: found[p].get(7) for p, n in verify.items()} == {n: c[2] for n, c in helpers.items()}, found
