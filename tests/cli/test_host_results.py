"""More of what lives on the host, read from PyTorch's own catalogue: a quantile, median or
norm of a host tensor; the ``values`` of a host reduction's named result; a generator's
state (a CPU byte tensor whatever device it draws for); and a host field a caller hands on
through ``getattr(batch, "seq_lens_cpu", None)``. The same reads of a tensor the code does
not place stay reported. End to end with no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

# vLLM's forward-time logging: a median of host timings.
VLLM_TIMINGS = ("vllm/forward_context.py", '''import torch


class ForwardTimer(torch.nn.Module):
    def forward(self, times, recorded):
        samples = SOURCE
        medium = torch.quantile(samples, q=0.5).item()
        spread = torch.std(samples).item()
        return round(medium, 2), spread
''', 7, "torch.tensor(times)", "recorded")

# vLLM's chunked-context metadata: the longest chunk of each request, from a host arange.
VLLM_CHUNKS = ("vllm/v1/attention/backends/rocm_aiter_fa.py", '''import torch


class ChunkedPrefillBuilder(torch.nn.Module):
    def forward(self, num_chunks, num_extends, context_lens):
        chunk_starts = SOURCE
        chunk_seq_lens = torch.min(context_lens, chunk_starts + 512) - chunk_starts
        return chunk_seq_lens.max(dim=1).values.tolist()
''', 8, "torch.arange(num_chunks, dtype=torch.int32).unsqueeze(1).expand(-1, num_extends) * 512",
                "context_lens.unsqueeze(0) * 0")


@pytest.mark.parametrize("case", [VLLM_TIMINGS, VLLM_CHUNKS], ids=["quantile", "named-result"])
@pytest.mark.parametrize(("source", "reported"), [("HOST", False), ("UNPLACED", True)], ids=["host-input", "unplaced-input"])
def test_a_reduction_of_a_host_tensor_is_read_without_a_device_wait(review_added, case, source, reported):
    path, text, line, host, unplaced = case
    findings = review_added({path: text.replace("SOURCE", host if source == "HOST" else unplaced)})
    lines = {f["line"] for f in findings if f["rule"] == "host-sync-in-hot-path"}
    assert (line in lines) is reported, findings


# vLLM's XPU sampler: the seed and offset of the device's default generator.
VLLM_GENERATOR = ("vllm/v1/sample/ops/topk_topp_sampler.py", '''import torch


class XpuSampler(torch.nn.Module):
    def forward(self, logits, saved):
        generator = torch.Generator(device=logits.device)
        state = SOURCE
        seed, offset = state.view(torch.int64).tolist()
        return seed, offset
''', 8)
# SGLang's CUDA-graph runner style: the RNG state saved around a replay.
SGLANG_RNG = ("sglang/srt/model_executor/graph_rng.py", '''import torch


class GraphReplay(torch.nn.Module):
    def forward(self, logits, saved):
        state = SOURCE
        return int(state[:8].view(torch.int64).item())
''', 7)


@pytest.mark.parametrize(("case", "host"), [(VLLM_GENERATOR, "generator.get_state()"), (SGLANG_RNG, "torch.cuda.get_rng_state()")],
                         ids=["generator-state", "rng-state"])
@pytest.mark.parametrize(("source", "reported"), [("HOST", False), ("UNPLACED", True)], ids=["rng-state", "unplaced-input"])
def test_a_generators_state_is_a_host_tensor(review_added, case, host, source, reported):
    (path, text, line), unplaced = case, "saved"
    findings = review_added({path: text.replace("SOURCE", host if source == "HOST" else unplaced)})
    lines = {f["line"] for f in findings if f["rule"] in ("host-sync-in-hot-path", "device-scalar-read-in-hot-path")}
    assert (line in lines) is reported, findings


# SGLang's Ascend backend style: a helper every caller hands a host field, looked up by name.
SGLANG_LOOKUP = ("sglang/srt/hardware_backend/npu/attention/lens_backend.py", '''import torch


class LensBackend(torch.nn.Module):
    @staticmethod
    def _to_int_list(values):
        if values is None:
            return None
        if isinstance(values, torch.Tensor):
            values = values.cpu().tolist()
        return [int(v) for v in values]

    def forward(self, forward_batch):
        seq_lens = self._to_int_list(getattr(forward_batch, "FIELD", None))
        return seq_lens
''', 10)


@pytest.mark.parametrize(("field", "reported"), [("seq_lens_cpu", False), ("seq_lens", True)], ids=["host-field", "device-field"])
def test_a_host_field_looked_up_by_name_is_a_host_argument(review_added, field, reported):
    path, text, line = SGLANG_LOOKUP
    findings = review_added({path: text.replace("FIELD", field)})
    lines = {f["line"] for f in findings if f["rule"] == "host-sync-in-hot-path"}
    assert (line in lines) is reported, findings
