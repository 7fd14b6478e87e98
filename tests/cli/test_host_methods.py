"""A custom op's ``forward_cpu`` runs only on its framework's CPU backend (``host-methods`` of
a protocol model): its tensors live in host memory, so device-residency rules leave it and
what it defines; the same code in ``forward_cuda`` is reported. End to end with no
configuration, in two engines' styles."""

from __future__ import annotations

import pytest

VLLM_OP = ("vllm/model_executor/layers/sparse_indexer.py", '''import torch

from vllm.model_executor.custom_op import CustomOp


class SparseIndexer(CustomOp):
    def METHOD(self, seq_lens, kv_cache):
        longest = seq_lens.max().item()
        scratch = torch.empty(longest, device=kv_cache.device)
        return scratch
''', 8)
SGLANG_OP = ("sglang/srt/layers/qk_norm.py", '''import torch

from sglang.kernels.fused_op import BaseFusedOp


class FusedQKNorm(BaseFusedOp):
    def METHOD(self, q, positions):
        def valid(rows):
            return bool(torch.any(rows >= 0).item())

        if not valid(positions):
            return q
        return q * positions.max().item()
''', 9)


@pytest.mark.parametrize("case", [VLLM_OP, SGLANG_OP], ids=["vllm-custom-op", "sglang-fused-op"])
@pytest.mark.parametrize(("method", "reported"), [("forward_cpu", False), ("forward_cuda", True)])
def test_a_cpu_backend_method_has_no_device_to_wait_for(repo, cli, case, method, reported):
    path, text, line = case
    repo.write("README.md", "engine\n")
    repo.commit("base")
    repo.write(path, text.replace("METHOD", method))
    run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    residency = [f for f in run.json()["findings"] if f["area"] == "device-residency"]
    assert (line in {f["line"] for f in residency}) is reported, residency
    if not reported:
        assert residency == [], residency
