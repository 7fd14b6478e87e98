"""A helper that returns values keeping one parameter's place (``return torch.clamp(lens,
max=n)``, ``return torch.where(lens <= cap, lens, padded)``) returns a host tensor where its caller passes one, wherever it is defined: a
read of what it returns then waits for no device. The same helper given a tensor the
caller does not place stays reported. End to end through ``review --diff``, no
configuration, in two engines' styles."""

from __future__ import annotations

import pytest

# SGLang's sparse-attention style: cache lengths rounded to blocks from host lengths.
SGLANG_HELPER = ("sglang/srt/layers/attention/sparse_lens.py", '''import torch


def sparse_cache_lens(seq_lens, capacity, block_size):
    blocks = (seq_lens + block_size - 1) // block_size
    return torch.clamp(blocks * block_size, max=capacity)
''')
SGLANG_CALLER = ("sglang/srt/layers/attention/sparse_backend.py", '''import torch

from sglang.srt.layers.attention.sparse_lens import sparse_cache_lens


class SparseBackend(torch.nn.Module):
    def forward(self, prefix_len, query_len, seq_lens):
        token_seq_lens = SOURCE
        return sparse_cache_lens(token_seq_lens, 4096, 64).tolist()
''', 9, "torch.arange(prefix_len + 1, prefix_len + query_len + 1, dtype=torch.int32)", "seq_lens")

# DeepSpeed's gating style: the capacity from host scalars, through a helper that casts.
DEEPSPEED_HELPER = ("deepspeed/moe/capacity.py", '''import torch


def capacity_of(gates, capacity_factor, min_capacity):
    num_tokens = gates.shape[0]
    capacity = torch.ceil(num_tokens * capacity_factor).to(torch.int64)
    return torch.maximum(capacity, min_capacity.to(torch.int64))
''')
DEEPSPEED_CALLER = ("deepspeed/moe/gate.py", '''import torch

from deepspeed.moe.capacity import capacity_of


class TopKGate(torch.nn.Module):
    def forward(self, logits):
        capacity = capacity_of(logits, SOURCE, torch.tensor(self.min_capacity))
        return logits[: int(capacity.item())]
''', 9, "torch.tensor(self.capacity_factor)", "self.capacity_factors[0]")


# vLLM's sparse indexer style: a selection whose condition compares the lengths.
VLLM_HELPER = ("vllm/v1/attention/ops/sparse_lens.py", '''import torch


def capped_lens(seq_lens, capacity, block_size):
    remainder = seq_lens % block_size
    padded = torch.where(remainder == 0, capacity, capacity - block_size + remainder)
    return torch.where(seq_lens <= capacity, seq_lens, padded)
''')
VLLM_CALLER = ("vllm/v1/attention/backends/sparse_indexer.py", '''import torch

from vllm.v1.attention.ops.sparse_lens import capped_lens


class SparseIndexer(torch.nn.Module):
    def forward(self, query_start_loc, seq_lens):
        lens = SOURCE
        return capped_lens(lens, 2048, 64).tolist()
''', 9, "torch.from_numpy(self.seq_lens_np)", "seq_lens")


@pytest.mark.parametrize("case", [(SGLANG_HELPER, SGLANG_CALLER), (DEEPSPEED_HELPER, DEEPSPEED_CALLER),
                                  (VLLM_HELPER, VLLM_CALLER)],
                         ids=["sglang-lengths", "deepspeed-capacity", "vllm-selection"])
@pytest.mark.parametrize(("source", "reported"), [("HOST", False), ("UNPLACED", True)], ids=["host-argument", "unplaced-argument"])
def test_a_helper_returns_where_its_argument_lives(review_added, case, source, reported):
    (helper_path, helper), (path, text, line, host, unplaced) = case
    findings = review_added({helper_path: helper, path: text.replace("SOURCE", host if source == "HOST" else unplaced)})
    lines = {f["line"] for f in findings if f["path"] == path
             and f["rule"] in ("host-sync-in-hot-path", "device-scalar-read-in-hot-path", "device-tensor-as-python-number")}
    assert (line in lines) is reported, findings
