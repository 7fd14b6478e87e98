"""The chain a per-step verdict shows starts, where it can, outside an engine's CPU
backend (``host-backend-paths``): a helper both runners call is per step because the GPU
runner calls it, and the evidence says so. A helper only the CPU runner reaches still
names it. End to end, no configuration, in vLLM's layout."""

from __future__ import annotations

HELPER = ("vllm/v1/worker/dp_utils.py", '''import torch


def post_process_padding(num_tokens):
    return int(num_tokens.max().item())
''')

CPU_RUNNER = ("vllm/v1/worker/cpu_model_runner.py", '''from vllm.v1.worker.dp_utils import post_process_padding
from vllm.v1.worker.gpu_model_runner import GPUModelRunner


class CPUModelRunner(GPUModelRunner):
    def execute_model(self, scheduler_output):
        return post_process_padding(scheduler_output.num_tokens)
''')

GPU_RUNNER = ("vllm/v1/worker/gpu_model_runner.py", '''from vllm.v1.worker.dp_utils import post_process_padding


class GPUModelRunner:
    def execute_model(self, scheduler_output):
        return post_process_padding(scheduler_output.num_tokens)
''')


def _evidence(repo, cli, files) -> str:
    for path, text in files:
        repo.write(path, text)
    repo.commit("engine")
    run = cli("review", HELPER[0], "--format", "json", "--no-cache", cwd=repo.path)
    assert run.code in (0, 1), run.err
    found = [f for f in run.json()["findings"] if f["line"] == 5]
    assert found, run.json()["findings"]
    return found[0]["execution"]["evidence"]


def test_the_chain_shown_starts_at_the_device_runner(repo, cli):
    evidence = _evidence(repo, cli, [HELPER, CPU_RUNNER, GPU_RUNNER])
    assert "GPUModelRunner.execute_model" in evidence and "CPUModelRunner" not in evidence


def test_a_helper_only_the_cpu_runner_reaches_names_it(repo, cli):
    evidence = _evidence(repo, cli, [HELPER, CPU_RUNNER])
    assert "CPUModelRunner.execute_model" in evidence
