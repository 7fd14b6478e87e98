"""A fallback for an optional parameter (``if k_scale is None: k_scale = torch.tensor(...)``)
runs only when a caller leaves the parameter out. Where every call the repository makes
passes it a value, the fallback runs on no step and its findings are not reported. A
caller that leaves it out, passes ``None``, a lookup or a value its own code shows may be
``None`` (assigned ``None``, tested against it), or hands on its own optional parameter
keeps the fallback reported; one that runs once (a warm-up) does not. End to end through ``review --diff``,
no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

VLLM_FILES = {
    "vllm/attention/backends/abstract.py": '''class AttentionImpl:
    def forward(self, *args):
        raise NotImplementedError
''',
    "vllm/v1/attention/backends/mla/triton_mla.py": '''from vllm.attention.backends.abstract import AttentionImpl
from vllm.v1.attention.ops.triton_decode import chunked_fwd, decode_fwd, prefill_fwd, verify_fwd


class TritonMLAImpl(AttentionImpl):
    def forward(self, layer, q, kv, out, scale=None):
        decode_fwd(q, kv, out, k_scale=layer._k_scale, v_scale=layer._v_scale)
        prefill_fwd(q, kv, out, layer._k_scale)
        prefill_fwd(q, kv, out)
        plan = None
        if layer.use_plan:
            plan = layer.plan
        chunked_fwd(q, kv, out, plan=plan)
        warm_fwd(q, kv, out, k_scale=layer._k_scale)
        return verify_fwd(q, kv, out, k_scale=scale)
''',
    # A warm-up runs once: the fallback it takes runs on no step.
    "vllm/model_executor/warmup/kernel_warmup.py": '''from vllm.v1.attention.ops.triton_decode import warm_fwd


def triton_warmup(q, kv, out):
    warm_fwd(q, kv, out)
''',
}
VLLM_HEAD = ("vllm/v1/attention/ops/triton_decode.py", '''import torch


def decode_fwd(q, kv, out, k_scale=None, v_scale=None):
    if k_scale is None:
        k_scale = torch.tensor(1.0, device=q.device)
    v_scale = v_scale if v_scale is not None else torch.tensor(1.0, device=q.device)
    return out * k_scale * v_scale


def prefill_fwd(q, kv, out, k_scale=None):
    if k_scale is None:
        k_scale = torch.tensor(1.0, device=q.device)
    return out * k_scale


def verify_fwd(q, kv, out, k_scale=None):
    if k_scale is None:
        k_scale = torch.tensor(1.0, device=q.device)
    return out * k_scale


def chunked_fwd(q, kv, out, plan=None):
    if plan is None:
        plan = torch.tensor([0, 1]).to(q.device)
    return out[plan]


def warm_fwd(q, kv, out, k_scale=None):
    if k_scale is None:
        k_scale = torch.tensor(1.0, device=q.device)
    return out * k_scale
''')

SGLANG_FILES = {
    "sglang/srt/layers/attention/base_attn_backend.py": '''class AttentionBackend:
    def forward_extend(self, *args):
        raise NotImplementedError
''',
    "sglang/srt/layers/attention/laser_backend.py": '''from sglang.srt.layers.attention.base_attn_backend import AttentionBackend
from sglang.srt.layers.attention.laser_attn import LaserAttention


class LaserAttnBackend(AttentionBackend):
    def __init__(self):
        self.attn = LaserAttention()

    def forward_extend(self, q, k, v, metadata):
        out = self.attn.varlen(q, k, v, metadata.cu_seqlens, cu_seqlens_host=metadata.cu_seqlens_cpu)
        offsets = metadata.offsets
        if offsets is not None and offsets.numel() == 0:
            offsets = metadata.default_offsets
        out = self.attn.segments(out, metadata.cu_seqlens, offsets=offsets)
        out = self.attn.ragged(out, metadata.cu_seqlens, lens=metadata.lens_host)
        return self.attn.packed(out, metadata.cu_seqlens, bounds=metadata.extras.get("bounds"))

    def run_warmup(self, q, cu_seqlens):
        return self.attn.ragged(q, cu_seqlens)
''',
}
SGLANG_HEAD = ("sglang/srt/layers/attention/laser_attn.py", '''import torch


class LaserAttention:
    def varlen(self, q, k, v, cu_seqlens, cu_seqlens_host=None):
        if cu_seqlens_host is None:
            cu_seqlens_host = cu_seqlens.tolist()
        return q[: cu_seqlens_host[-1]]

    def packed(self, out, cu_seqlens, bounds=None):
        if bounds is None:
            bounds = cu_seqlens.tolist()
        return out[: bounds[-1]]

    def segments(self, out, cu_seqlens, offsets=None):
        if offsets is None:
            offsets = cu_seqlens.tolist()
        return out[offsets[0]:]

    def ragged(self, out, cu_seqlens, lens=None):
        if lens is None:
            lens = cu_seqlens.tolist()
        return out[: lens[-1]]
''')

CASES = {
    # files, the reviewed file, lines left alone (every caller passes), lines reported
    "vllm": (VLLM_FILES, VLLM_HEAD, {6, 7, 31}, {13, 19, 25}),
    "sglang": (SGLANG_FILES, SGLANG_HEAD, {7, 22}, {12, 17}),
}


@pytest.mark.parametrize("style", sorted(CASES))
def test_a_fallback_every_caller_skips_is_not_reported_and_one_a_caller_takes_is(repo, cli, style):
    files, (path, text), left_alone, reported = CASES[style]
    for name, body in files.items():
        repo.write(name, body)
    repo.write(path, "")
    repo.commit("base")
    repo.write(path, text)
    run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    assert run.code in (0, 1), run.err
    lines = {line for f in run.json()["findings"] if f["path"] == path for line in (f["line"], *f.get("also_at", []))}
    assert reported <= lines, run.json()["findings"]
    assert not (left_alone & lines), run.json()["findings"]


# vLLM's Mamba style: the layer looks its metadata up, which a profiling run leaves out,
# and returns before the kernel when it is missing; SGLang's style tests it with ``not``.
GUARDED_KERNEL = ("vllm/model_executor/layers/mamba/ops/conv_kernel.py", '''import torch


def conv_fn(x, weight, metadata=None):
    if metadata is None:
        metadata = torch.tensor([x.shape[0]], device=x.device)
    return x * weight * metadata
''')
GUARDED_LAYER = ("vllm/model_executor/layers/mamba/conv_mixer.py", '''import torch

from vllm.model_executor.layers.mamba.ops.conv_kernel import conv_fn


class ConvMixer(torch.nn.Module):
    def forward(self, x, forward_context):
        metadata = forward_context.attn_metadata.get(self.prefix)
        GUARD
        return conv_fn(x, self.weight, metadata=metadata)
''')


@pytest.mark.parametrize(("guard", "reported"), [
    ("if metadata is None:\n            # Profile runs carry no metadata.\n            x = x * 2\n            return x", False),
    ("if not metadata:\n            return x", False),
    ("if metadata is None:\n            if self.strict:\n                return x", True),
    ("pass", True),
], ids=["vllm-guard", "sglang-not-guard", "nested-return", "no-guard"])
def test_a_lookup_the_caller_returns_on_when_missing_is_passed(review_added, guard, reported):
    layer = GUARDED_LAYER[1].replace("GUARD", guard)
    findings = review_added({GUARDED_KERNEL[0]: GUARDED_KERNEL[1], GUARDED_LAYER[0]: layer})
    lines = {f["line"] for f in findings if f["path"] == GUARDED_KERNEL[0] and f["rule"] == "host-to-device-copy-per-call"}
    assert (6 in lines) is reported, findings
