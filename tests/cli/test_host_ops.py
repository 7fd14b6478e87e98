"""The result of a ``torch`` op lives where its input does: a clamp, a multinomial draw, a
flip or an elementwise minimum of a host tensor (``torch.normal(..., device="cpu")``, ``torch.tensor([...])``) is read
without a device wait, and the same op of a tensor the function does not place is reported.
End to end with no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

SGLANG_SIMULATED = ("sglang/srt/speculative/spec_utils.py", '''import torch


class DraftWorker(torch.nn.Module):
    def forward(self, accept_len, max_len, probs):
        values = torch.normal(mean=accept_len, std=1.0, size=(1,), device="cpu")
        values = torch.clamp(values, min=1.0, max=max_len)
        drawn = int(values.round().item())
        index = torch.multinomial(SOURCE, num_samples=1)
        return drawn, index.item()
''', 10, "torch.tensor([0.5, 0.5])", "probs", 8)
VLLM_LENGTHS = ("vllm/v1/attention/backends/utils.py", '''import torch


class Builder(torch.nn.Module):
    def forward(self, num_reqs, query_lens):
        starts = torch.arange(num_reqs + 1, dtype=torch.int32)
        last = int(torch.clip(starts, max=4096).max().item())
        ordered = torch.flip(SOURCE, dims=(0,))
        longest = int(torch.clip(ordered, max=4096).max().item())
        return last, longest
''', 9, "starts", "query_lens", 7)

VLLM_WINDOWS = ("vllm/v1/attention/backends/rocm_aiter_fa.py", '''import torch


class WindowBuilder(torch.nn.Module):
    def forward(self, seq_lens, query_lens, window):
        extend = torch.minimum(SOURCE, query_lens + window)
        longest = extend.max().item()
        offsets = torch.maximum(torch.zeros(4, dtype=torch.int32), torch.ones(4, dtype=torch.int32))
        return longest, offsets.sum().item()
''', 7, "seq_lens.cpu()", "seq_lens", 9)

# (path, text, line read from SOURCE, a host SOURCE, an unplaced SOURCE, a line always on the host)
@pytest.mark.parametrize("case", [SGLANG_SIMULATED, VLLM_LENGTHS, VLLM_WINDOWS], ids=["sglang-draws", "vllm-lengths", "vllm-windows"])
@pytest.mark.parametrize(("source", "reported"), [("HOST", False), ("DEVICE", True)], ids=["host-input", "unplaced-input"])
def test_an_op_of_a_host_tensor_is_a_host_tensor(review_added, case, source, reported):
    path, text, line, host, device, host_line = case
    findings = review_added({path: text.replace("SOURCE", host if source == "HOST" else device)})
    lines = {f["line"] for f in findings if f["rule"] == "host-sync-in-hot-path"}
    assert (line in lines) is reported, findings
    assert host_line not in lines, findings  # a clamp of a CPU draw or a CPU arange: never a device read
