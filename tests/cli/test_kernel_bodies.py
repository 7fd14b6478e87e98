"""The body of a function a kernel decorator compiles (``kernel-decorators`` in
``rules/names.yaml``: ``@cute.kernel``, ``@triton.jit``, ``@flyc.kernel``...) is traced into a device
program, not run as Python: no rule reads it, nested or a method. The same body in a
plain or ``torch.compile``d function is still read. End to end, no configuration."""

from __future__ import annotations

import pytest


# CuTe style (vLLM's sparse compressors): a kernel defined inside a builder method.
CUTE = '''import cutlass.cute as cute


class Compressor:
    def __init__(self, pool):
        self.pool = pool

    def build(self):
        @DECORATOR
        def device_kernel(out):
            self.pool.slots[0] = out[0]
        return device_kernel
'''

# Triton style (SGLang's kernels): a module-level kernel holding a sync-looking call.
TRITON = '''import torch
import triton


class Sampler(torch.nn.Module):
    def forward(self, x):
        return step(x)


@DECORATOR
def step(x):
    return x.sum().item()
'''

# FlyDSL style (vLLM's ROCm decode kernels): a kernel nested in a launcher builder, whose
# branch on a device expression compiles to a device-side branch.
FLYDSL = '''import torch
import flydsl.compiler as flyc
import flydsl.expr as fx


class MonoDecode(torch.nn.Module):
    def forward(self, topk_ids, bound):
        @DECORATOR
        def mono_kernel(j):
            if j < fx.min(topk_ids.max().item(), bound):
                return j
        return mono_kernel
'''

CASES = {
    "cute": ("vllm/v1/attention/ops/compress.py", CUTE, "cute.kernel", 11, "collaborator-container-mutation"),
    "flydsl": ("vllm/models/mono/kernel.py", FLYDSL, "flyc.kernel(known_block_size=[256, 1, 1])", 10, "device-scalar-read-in-hot-path"),
    "triton": ("sglang/srt/layers/sampler.py", TRITON, "triton.jit", 12, "host-sync-in-hot-path"),
}


@pytest.mark.parametrize("style", sorted(CASES))
@pytest.mark.parametrize(("decorator", "read"), [("KERNEL", False), ("torch.compile", True), ("torch.no_grad()", True)])
def test_a_compiled_kernel_body_is_not_python_that_runs(repo, cli, style, decorator, read):
    path, text, kernel, line, rule = CASES[style]
    repo.write("README.md", "engine\n")
    repo.commit("base")
    repo.write(path, text.replace("DECORATOR", kernel if decorator == "KERNEL" else decorator))
    run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    hits = {(f["line"], f["rule"]) for f in run.json()["findings"]}
    assert ((line, rule) in hits) is read, run.json()["findings"]
