"""A ``non_blocking=True`` upload is reported from host memory the function shows to be
pageable (a tensor it builds from Python data or NumPy, a ``.cpu()`` result), and of a
parameter uploaded as its caller hands it in, every call; from a tensor read from another
object, or staged into pinned memory on the way (``x.new_empty(..., pin_memory=True).copy_(x)``),
the author asked for an overlapping copy and nothing shows it blocks. End to end with no
configuration, in two engines' styles."""

from __future__ import annotations

import pytest

VLLM_STAGED = ("vllm/multimodal/inputs.py", '''import torch


class Batch(torch.nn.Module):
    def forward(self, x, device, pin_memory):
        if pin_memory and x.is_cpu and not x.is_pinned():
            x = x.new_empty(x.shape, pin_memory=True).copy_(x)
        return x.to(device=device, non_blocking=True)
''', 8)
VLLM_PAGEABLE = ("vllm/multimodal/inputs.py", '''import torch


class Batch(torch.nn.Module):
    def forward(self, values, device):
        x = torch.tensor(values, dtype=torch.int64)
        return x.to(device=device, non_blocking=True)
''', 7)
DEEPSPEED_HANDED_IN = ("deepspeed/ops/adam/zenflow_adam.py", '''import torch


class ZenFlowAdam(torch.nn.Module):
    def forward(self, params):
        for param in params:
            param.exp_avg = param.exp_avg_cpu_data.to(param.device, non_blocking=True)
''', 7)
DEEPSPEED_PAGEABLE = ("deepspeed/ops/adam/zenflow_adam.py", '''import torch


class ZenFlowAdam(torch.nn.Module):
    def forward(self, params):
        for param in params:
            state = torch.from_numpy(param.exp_avg_np)
            param.exp_avg = state.to(param.device, non_blocking=True)
''', 8)


VLLM_HANDED_IN = ("vllm/v1/attention/backends/flash_attn.py", '''import torch


class FlashAttn(torch.nn.Module):
    def forward(self, q, cu_seqlens, max_seqlen):
        if max_seqlen.is_cpu:
            max_seqlen = max_seqlen.to(q.device, non_blocking=True)
        return q[:, :max_seqlen]
''', 7)


@pytest.mark.parametrize(("case", "reported"), [
    (VLLM_PAGEABLE, True), (VLLM_HANDED_IN, True), (VLLM_STAGED, False), (DEEPSPEED_PAGEABLE, True),
    (DEEPSPEED_HANDED_IN, False),
], ids=["vllm-built-here", "vllm-parameter", "vllm-staged-pinned", "deepspeed-numpy-view", "deepspeed-read-from-another-object"])
def test_a_non_blocking_upload_blocks_only_from_memory_shown_pageable(review_added, case, reported):
    path, text, line = case
    findings = review_added({path: text})
    lines = {f["line"] for f in findings if f["rule"] == "host-to-device-copy-per-call"}
    assert (line in lines) is reported, findings
