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
def test_a_cpu_backend_method_has_no_device_to_wait_for(review_added, case, method, reported):
    path, text, line = case
    residency = [f for f in review_added({path: text.replace("METHOD", method)}) if f["area"] == "device-residency"]
    assert (line in {f["line"] for f in residency}) is reported, residency
    if not reported:
        assert residency == [], residency


VLLM_HELPER = ("vllm/model_executor/layers/fused_moe/native.py", '''import torch

from vllm.model_executor.custom_op import CustomOp


def moe_forward_native(topk_ids, num_experts):
    counts = torch.bincount(topk_ids.flatten(), minlength=num_experts)
    return counts.max().item()


class FusedMoE(CustomOp):
    def METHOD(self, topk_ids):
        return moe_forward_native(topk_ids, self.num_experts)
''', 7)
SGLANG_HELPER = ("sglang/kernels/ops/qk_norm_store.py", '''import torch

from sglang.kernels.fused_op import BaseFusedOp


class FusedQKNorm(BaseFusedOp):
    def _store_kv(self, slots, cache):
        if torch.any(slots < 0):
            raise ValueError("slot out of range")
        cache[slots] = 0

    def METHOD(self, slots, cache):
        self._store_kv(slots, cache)
''', 8)


@pytest.mark.parametrize("case", [VLLM_HELPER, SGLANG_HELPER], ids=["vllm-native-helper", "sglang-store-helper"])
@pytest.mark.parametrize(("method", "reported"), [("forward_cpu", False), ("forward_cuda", True)])
def test_code_only_a_cpu_backend_method_calls_runs_no_device_step(review_added, case, method, reported):
    path, text, line = case
    findings = review_added({path: text.replace("METHOD", method)})
    per_step = [f for f in findings if f["area"] == "device-residency" and f["line"] == line
                and (f.get("execution") or {}).get("context") == "per-step"]
    assert bool(per_step) is reported, findings
