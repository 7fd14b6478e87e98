"""Files of an engine's CPU backend (``host-backend-paths`` in ``rules/names.yaml``) compute
in host memory: device-residency rules leave them, while the same code in a GPU worker, or
in code that offloads to the CPU, stays reported. Reviewed end to end with no
configuration, in two engines' layouts."""

from __future__ import annotations

import pytest


CPU_SAMPLER = '''import torch


class Sampler(torch.nn.Module):
    def forward(self, logits, generators):
        if generators:
            return logits.argmax(-1)
        top = logits.max(-1)
        return top.indices.tolist()
'''


@pytest.mark.parametrize(("path", "reported"), [
    ("vllm/v1/worker/cpu/sampler.py", False),  # the CPU worker: its tensors are in host memory
    ("sglang/srt/hardware_backend/cpu/sampler.py", False),
    ("sglang/srt/layers/attention/intel_amx_backend.py", False),  # Intel AMX: CPU kernels
    ("vllm/v1/worker/gpu/sample/sampler.py", True),
    ("vllm/v1/kv_offload/cpu/sampler.py", True),  # offloading moves data between device and host
    ("sglang/srt/layers/attention/triton_backend.py", True),
], ids=["vllm-cpu-worker", "sglang-cpu-backend", "sglang-amx-attention", "vllm-gpu-worker", "vllm-kv-offload",
        "sglang-triton-attention"])
def test_a_cpu_backend_has_no_device_to_wait_for(repo, cli, path, reported):
    repo.write("README.md", "engine\n")
    repo.commit("base")
    repo.write(path, CPU_SAMPLER)
    run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    lines = {f["line"] for f in run.json()["findings"] if f["path"] == path}
    assert (9 in lines) is reported, run.json()["findings"]
