"""A function whose name says it runs per step (``_run_step``, ``_forward_step``) runs as
often as its callers when every call of it is seen: only warm-up or capture code calls it,
it runs at start-up; any other caller keeps its findings reported (per step where that
caller is, else at an unknown frequency: a name is no proof). Reviewed end to end with no
configuration, in two engines' styles."""

from __future__ import annotations

import pytest

VLLM_WARMUP = ("vllm/v1/worker/gpu/warmup.py", '''import torch


def _run_step(runner, num_tokens):
    runner.execute_model(torch.zeros(num_tokens, dtype=torch.int64, device=runner.device))
    torch.cuda.synchronize()


def warmup_kernels(runner, sizes):
    for size in sizes:
        _run_step(runner, size)
''')

SGLANG_RUNNER = ("sglang/srt/model_executor/graph_runner.py", '''import torch


class GraphRunner:
    def __init__(self, model_runner):
        self.model_runner = model_runner

    def capture(self, batch_sizes):
        for bs in batch_sizes:
            self._forward_step(bs)

    def _forward_step(self, bs):
        ids = torch.zeros(bs, dtype=torch.int64, device="cuda")
        torch.cuda.synchronize()
        return self.model_runner.forward(ids)
''')

PER_STEP_CALLERS = {
    VLLM_WARMUP[0]: '''

def execute_model(runner, scheduler_output):
    _run_step(runner, scheduler_output.total_num_scheduled_tokens)
''',
    SGLANG_RUNNER[0]: '''
    def replay(self, forward_batch):
        return self._forward_step(forward_batch.batch_size)
''',
}


@pytest.mark.parametrize("file", [VLLM_WARMUP, SGLANG_RUNNER], ids=["vllm-warmup", "sglang-capture"])
@pytest.mark.parametrize("per_step_caller", [False, True], ids=["start-up-only", "also-per-step"])
def test_a_step_named_function_runs_as_often_as_its_callers(repo, cli, file, per_step_caller):
    path, text = file
    repo.write("README.md", "engine\n")
    repo.commit("base")
    repo.write(path, text + (PER_STEP_CALLERS[path] if per_step_caller else ""))
    run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    synchronizing = [f for f in run.json()["findings"] if f["rule"] == "device-synchronize-in-hot-path"]
    assert bool(synchronizing) is per_step_caller, run.json()["findings"]
