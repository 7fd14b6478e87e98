"""A buffer an op writes as its output is not a workspace: one handed to a kernel as
``out=`` whose result later code reads (vLLM's Kimi delta attention), or a view of it handed
to a wrapper whose result the function returns under the buffer's name (SGLang's Ascend
attention). A buffer the op fills and nothing reads stays reported, and so does a sized
scratch beside a zero-element placeholder, which allocates nothing. End to end with no
configuration."""

from __future__ import annotations

import pytest

VLLM_CONV = ("vllm/model_executor/layers/mamba/kimi_linear_attn.py", '''import torch

from vllm.model_executor.layers.mamba.ops.causal_conv1d import causal_conv1d_update


class KimiDeltaAttention(torch.nn.Module):
    def forward(self, mixed_qkv, conv_state):
        spec_conv_out = torch.empty_like(mixed_qkv)
        USE
''', 8)
VLLM_USES = {
    "read": '''mixed_qkv_spec = causal_conv1d_update(mixed_qkv, conv_state, self.weight, out=spec_conv_out)
        q, k, v = torch.split(mixed_qkv_spec, [4, 4, 4], dim=-1)
        return self.recurrent(q, k, v)''',
    "dropped": '''causal_conv1d_update(mixed_qkv, conv_state, self.weight, out=spec_conv_out)
        return self.recurrent(mixed_qkv, mixed_qkv, mixed_qkv)''',
}
SGLANG_ATTENTION = ("sglang/srt/hardware_backend/npu/attention/ascend_backend.py", '''import torch


class AscendAttnBackend(torch.nn.Module):
    def forward(self, q, k_cache, layer):
        attn_output = q.new_empty((q.shape[0], layer.heads * layer.v_dim))
        o_ = attn_output.view(-1, layer.heads, layer.v_dim)
        USE
''', 6)
SGLANG_USES = {
    "read": '''attn_output = self.native_attn.run_sdpa_forward_decode(q, o_, k_cache)
        return attn_output.view(q.shape[0], -1)''',
    "dropped": '''lse = self.native_attn.run_sdpa_forward_decode(q, o_, k_cache)
        return q * lse''',
}


@pytest.mark.parametrize(("case", "uses"), [(VLLM_CONV, VLLM_USES), (SGLANG_ATTENTION, SGLANG_USES)],
                         ids=["vllm-out-argument", "sglang-view-handed-back"])
@pytest.mark.parametrize(("use", "reported"), [("read", False), ("dropped", True)])
def test_an_ops_output_is_not_a_workspace(review_new_file, case, uses, use, reported):
    path, text, line = case
    found = review_new_file(path, text.replace("USE", uses[use]))
    assert (found.get(line) == "device-workspace-allocated-per-call") is reported, found


SGLANG_PLACEHOLDER = '''import torch


class MoeFinalizeFuseShared(torch.nn.Module):
    def forward(self, hidden, shared_output=None):
        if shared_output is None:
            shared_output = hidden.new_empty(SIZE)
        finalize_kernel[(1,)](hidden, shared_output)
        return hidden
'''


@pytest.mark.parametrize(("size", "reported"), [("(0, 0)", False), ("(hidden.shape[0], 8)", True)],
                         ids=["zero-element-placeholder", "sized-scratch"])
def test_a_placeholder_with_no_elements_allocates_nothing(review_new_file, size, reported):
    found = review_new_file("sglang/srt/layers/moe/moe_finalize_fuse_shared.py", SGLANG_PLACEHOLDER.replace("SIZE", size))
    assert (found.get(7) == "device-workspace-allocated-per-call") is reported, found
