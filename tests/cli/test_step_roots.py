"""What makes code per step, read from structure rather than names: a function whose name
alone says it runs per step runs at an unknown frequency (a full scan holds its findings
back) unless per-step code is seen calling it; a worker loop handed to a thread serves
transfers beside the step, and a coroutine's loop may serve requests rather than steps
(what they reach runs at an unknown frequency); a framework's step
entry points run per step by their protocol models (a training engine's optimizer, a
serving engine's model worker). End to end with no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

# A periodic step helper nothing seen calls, beside the same helper a model runner's
# per-step ``execute_model`` (protocol model) calls.
VLLM_EPLB = ("vllm/distributed/eplb/eplb_state.py", '''import torch


class EplbState:
    def step(self, model):
        load = model.expert_load.sum(dim=0)
        if load.max().item() > self.threshold:
            self.rearrange(model)
''')
VLLM_CALLER = ("vllm/v1/worker/gpu_model_runner.py", '''from vllm.distributed.eplb.eplb_state import EplbState
from vllm.v1.worker.worker_base import WorkerBase


class GPUModelRunner(WorkerBase):
    def __init__(self):
        self.eplb_state = EplbState()

    def execute_model(self, scheduler_output):
        self.eplb_state.step(self.model)
''')

# A diffusion stage's step-named helper nothing seen calls, beside the same helper a model
# worker's ``forward_batch_generation`` (protocol model) calls.
SGLANG_STAGE = ("sglang/srt/speculative/draft_step.py", '''import torch


def run_draft_step(scores):
    accepted = scores.argmax(dim=-1)
    return accepted.tolist()
''')
SGLANG_CALLER = ("sglang/srt/speculative/eagle_worker.py", '''from sglang.srt.speculative.base_spec_worker import BaseSpecWorker
from sglang.srt.speculative.draft_step import run_draft_step


class EAGLEWorker(BaseSpecWorker):
    def forward_batch_generation(self, batch):
        return run_draft_step(batch.scores)
''')
SGLANG_BASE = ("sglang/srt/speculative/base_spec_worker.py", '''class BaseSpecWorker:
    def forward_batch_generation(self, batch):
        raise NotImplementedError
''')
VLLM_BASE = ("vllm/v1/worker/worker_base.py", '''class WorkerBase:
    def execute_model(self, scheduler_output):
        raise NotImplementedError
''')

NAMED = {
    "vllm": (VLLM_EPLB, VLLM_CALLER, VLLM_BASE, 7),
    "sglang": (SGLANG_STAGE, SGLANG_CALLER, SGLANG_BASE, 6),
}


def _lines(run, path: str, rule: str = "") -> set[int]:
    return {f["line"] for f in run.json()["findings"] if f["path"] == path and (not rule or f["rule"] == rule)}


def _execution(run, path: str, line: int) -> dict:
    (finding,) = [f for f in run.json()["findings"] if f["path"] == path and f["line"] == line]
    return finding["execution"]


@pytest.mark.parametrize("style", sorted(NAMED))
def test_a_step_name_alone_is_no_proof_and_a_full_scan_holds_it_back(repo, cli, style):
    (path, text), _, _, line = NAMED[style]
    repo.write(path, text)
    repo.commit("engine")
    scan = cli("review", path, "--format", "json", "--no-cache", cwd=repo.path)
    assert line not in _lines(scan, path) and scan.json()["summary"]["unknown_frequency"] >= 1, scan.json()
    shown = cli("review", path, "--format", "json", "--no-cache", "--show-unknown-frequency", cwd=repo.path)
    execution = _execution(shown, path, line)
    assert execution["context"] == "unknown" and "only its name says" in execution["evidence"], execution


@pytest.mark.parametrize("style", sorted(NAMED))
def test_a_step_named_function_per_step_code_calls_runs_per_step(repo, cli, style):
    (path, text), (caller_path, caller), (base_path, base), line = NAMED[style]
    repo.write(path, text)
    repo.write(caller_path, caller)
    repo.write(base_path, base)
    repo.commit("engine")
    scan = cli("review", path, "--format", "json", "--no-cache", cwd=repo.path)
    assert line in _lines(scan, path), scan.json()["findings"]
    execution = _execution(scan, path, line)
    assert execution["context"] == "per-step" and execution["evidence"].startswith("per step: "), execution


# Worker loops: a transfer thread's queue loop and a coroutine's request loop, beside the
# engine's own busy loop. Each loop calls a helper that reads a device value back.
SGLANG_TRANSFER = ("sglang/srt/disaggregation/transfer.py", '''import threading

import torch


def checksum(chunk):
    return int(chunk.sum().item())


class KVManager:
    def __init__(self, queue):
        self.queue = queue
        threading.Thread(
            target=self.transfer_worker, daemon=True
        ).start()

    def transfer_worker(self):
        while True:
            chunk = self.queue.get()
            self.send(checksum(chunk.to("cuda")))
''', 7)
VLLM_OUTPUTS = ("vllm/v1/engine/output_handler.py", '''import torch


def first_token(output):
    return output.sampled.max().item()


class OutputHandler:
    async def run(self, queue):
        while True:
            output = await queue.get()
            self.publish(first_token(output))
''', 5)
BUSY_LOOP = '''

class EngineCore:
    def run_busy_loop(self):
        while True:
            work = self.input_queue.get()
            self.step(work)
            LOOP_CALL
'''


@pytest.mark.parametrize("case", [SGLANG_TRANSFER, VLLM_OUTPUTS], ids=["sglang-transfer-thread", "vllm-coroutine"])
def test_a_thread_or_coroutine_loop_is_not_a_step(repo, cli, case):
    path, text, line = case
    repo.write(path, text)
    repo.commit("engine")
    scan = cli("review", path, "--format", "json", "--no-cache", "--show-unknown-frequency", cwd=repo.path)
    executions = [f["execution"] for f in scan.json()["findings"] if f["line"] == line]
    assert executions and all(e["context"] == "unknown" for e in executions), scan.json()["findings"]


@pytest.mark.parametrize("case", [SGLANG_TRANSFER, VLLM_OUTPUTS], ids=["sglang-transfer-thread", "vllm-coroutine"])
def test_the_engines_own_busy_loop_is_a_step(repo, cli, case):
    path, text, line = case
    helper = "checksum(self.chunk)" if "checksum" in text else "first_token(self.output)"
    repo.write(path, text + BUSY_LOOP.replace("LOOP_CALL", helper))
    repo.commit("engine")
    scan = cli("review", path, "--format", "json", "--no-cache", cwd=repo.path)
    execution = _execution(scan, path, line)
    assert execution["context"] == "per-step" and "EngineCore.run_busy_loop" in execution["evidence"], execution


# A ``while True:`` that reads a mapping (``counts.get(key, 0)``) searches and stops: no
# loop waiting for work. Beside it, the same search over a queue's items.
VLLM_PLACEMENT = ("vllm/v1/worker/sentinel/placement.py", '''import torch


def redistribute(placement, slots, replica_count, missing):
    for logical_id in missing:
        while True:
            slot = next(slots, None)
            if slot is None:
                raise RuntimeError(f"no spare slot for {logical_id}")
            if replica_count.get(slot, 0) > 1:
                placement[slot] = logical_id
                break
    return placement.cpu()
''', 13)
SGLANG_SLOT_QUEUE = ("sglang/srt/managers/slot_server.py", '''import torch


def serve_slots(requests, placement):
    while True:
        request = requests.get(timeout=1.0)
        placement[request.slot] = request.logical_id
        request.reply(placement.cpu())
''', 8)


@pytest.mark.parametrize(("case", "per_step"), [(VLLM_PLACEMENT, False), (SGLANG_SLOT_QUEUE, True)],
                         ids=["vllm-mapping-search", "sglang-queue-server"])
def test_a_loop_that_reads_a_mapping_waits_for_no_work(repo, cli, case, per_step):
    path, text, line = case
    repo.write(path, text)
    repo.commit("engine")
    scan = cli("review", path, "--format", "json", "--no-cache", "--show-unknown-frequency", cwd=repo.path)
    executions = [f["execution"] for f in scan.json()["findings"] if f["line"] == line]
    assert executions, scan.json()["findings"]
    assert all((e["context"] == "per-step") is per_step for e in executions), executions


# A training engine's optimizer step, per step by the framework's protocol model.
DEEPSPEED_OPTIMIZER = ("deepspeed/runtime/fp16/fused_optimizer.py", '''import torch

from deepspeed.runtime.base_optimizer import DeepSpeedOptimizer


class FP16_Optimizer(DeepSpeedOptimizer):
    def step(self, closure=None):
        norm = self.fp32_groups_flat[0].grad.norm()
        if norm.item() > self.clip:
            self.clip_grads(norm)
''', 9)
DEEPSPEED_LOOK_ALIKE = ("deepspeed/runtime/data_pipeline/sampler.py", '''import torch


class CurriculumSampler:
    def step(self, difficulty):
        return difficulty.max().item()
''', 6)


@pytest.mark.parametrize(("case", "context"), [(DEEPSPEED_OPTIMIZER, "per-step"), (DEEPSPEED_LOOK_ALIKE, "unknown")],
                         ids=["optimizer-step", "sampler-step-look-alike"])
def test_a_training_engines_optimizer_step_runs_per_step_by_its_protocol(repo, cli, case, context):
    path, text, line = case
    repo.write("deepspeed/runtime/base_optimizer.py", "class DeepSpeedOptimizer(object):\n    pass\n")
    repo.write(path, text)
    repo.commit("engine")
    scan = cli("review", path, "--format", "json", "--no-cache", "--show-unknown-frequency", cwd=repo.path)
    execution = _execution(scan, path, line)
    assert execution["context"] == context, execution
    if context == "per-step":
        assert "protocol model `deepspeed.*.DeepSpeedOptimizer`" in execution["evidence"], execution
