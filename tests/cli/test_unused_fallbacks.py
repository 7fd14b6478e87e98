"""A fallback for an optional parameter (``if k_scale is None: k_scale = torch.tensor(...)``)
runs only when a caller leaves the parameter out. Where every call the repository makes
passes it a value, the fallback runs on no step and its findings are not reported. A
caller that leaves it out, passes ``None``, a lookup or a value its own code shows may be
``None`` (assigned ``None``, tested against it), or hands on its own optional parameter
keeps the fallback reported. End to end through ``review --diff``,
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
        return verify_fwd(q, kv, out, k_scale=scale)
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
        return self.attn.packed(out, metadata.cu_seqlens, bounds=metadata.extras.get("bounds"))
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
''')

CASES = {
    # files, the reviewed file, lines left alone (every caller passes), lines reported
    "vllm": (VLLM_FILES, VLLM_HEAD, {6, 7}, {13, 19, 25}),
    "sglang": (SGLANG_FILES, SGLANG_HEAD, {7}, {12, 17}),
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
