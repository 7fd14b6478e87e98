"""Every lifecycle defect class of the published catalogues, written in a third engine's
style (TensorRT-LLM's PyTorch executor, unlike the rule examples' vLLM, SGLang, LMDeploy
and ktransformers code): its analysis finds the defect and leaves the look-alike alone.
The rule's group does not matter here: the matcher runs through the engine either way."""

from __future__ import annotations

import pytest

from .helpers import engine_lines as lines

CLASSES = {
    "ids released only on the success path": (
        "release-skipped-on-exit-path",
        """
        class PyExecutor:
            def _fetch_new_requests(self, req):
                seq_slot = self.seq_slot_manager.add_slot(req.py_request_id)
                try:
                    self._prepare(req, seq_slot)
                except Exception:
                    self.seq_slot_manager.free_slot(req.py_request_id)
                    raise

            def _schedule(self, req):
                seq_slot = self.seq_slot_manager.add_slot(req.py_request_id)
                if req.is_context_only_request:
                    return None  # defect
                self._forward_step(req, seq_slot)
                self.seq_slot_manager.free_slot(req.py_request_id)
        """,
        """
        class PyExecutor:
            def _fetch_new_requests(self, req):
                seq_slot = self.seq_slot_manager.add_slot(req.py_request_id)
                try:
                    self._prepare(req, seq_slot)
                except Exception:
                    self.seq_slot_manager.free_slot(req.py_request_id)
                    raise

            def _schedule(self, req):
                seq_slot = self.seq_slot_manager.add_slot(req.py_request_id)
                try:
                    if req.is_context_only_request:
                        return None
                    self._forward_step(req, seq_slot)
                finally:
                    self.seq_slot_manager.free_slot(req.py_request_id)
        """,
    ),
    "exception in a fire-and-forget task never retrieved": (
        "task-result-discarded",
        """
        import asyncio

        class GenerationExecutorProxy:
            async def _start_dispatch(self):
                asyncio.create_task(self._dispatch_stats_task())  # defect
        """,
        """
        import asyncio

        class GenerationExecutorProxy:
            async def _start_dispatch(self):
                self._stats_task = asyncio.create_task(self._dispatch_stats_task())
                self._stats_task.add_done_callback(self._report_failure)
        """,
    ),
    "task cancelled and its bookkeeping dropped without awaiting": (
        "task-cancelled-without-await",
        """
        import asyncio

        class GenerationExecutorProxy:
            def submit(self, rid):
                self.result_tasks[rid] = asyncio.ensure_future(self._collect(rid))

            def abort_request(self, rid):
                task = self.result_tasks.get(rid)
                task.cancel()  # defect
                self.result_tasks.pop(rid, None)
        """,
        """
        import asyncio

        class GenerationExecutorProxy:
            def submit(self, rid):
                self.result_tasks[rid] = asyncio.ensure_future(self._collect(rid))

            def abort_request(self, rid):
                task = self.result_tasks.pop(rid)
                task.cancel()
                task.add_done_callback(self._on_cancelled)
        """,
    ),
    "tensor stored with its autograd history": (
        "autograd-history-kept-in-state",
        """
        class LoraTrainer:
            def train_step(self, batch):
                loss = self.model(batch).loss
                loss.backward()
                self.loss_history.append(loss)  # defect
        """,
        """
        class LoraTrainer:
            def train_step(self, batch):
                loss = self.model(batch).loss
                loss.backward()
                self.loss_history.append(loss.detach().item())
        """,
    ),
    "in-place write lost to an advanced-indexing copy": (
        "in-place-write-to-index-copy",
        """
        import torch

        class KVCacheManager:
            def reset_slots(self, slots):
                rows = torch.tensor(slots, device="cuda")
                self.host_cache_lens[rows].zero_()  # defect
        """,
        """
        import torch

        class KVCacheManager:
            def reset_slots(self, slots):
                rows = torch.tensor(slots, device="cuda")
                self.host_cache_lens[rows] = 0
        """,
    ),
    "cache keyed by object identity": (
        "cache-keyed-by-object-identity",
        """
        class CudaGraphRunner:
            def graph_for(self, inputs):
                self.graphs[inputs.data_ptr()] = self._capture(inputs)  # defect
                return self.graphs[inputs.data_ptr()]
        """,
        """
        class CudaGraphRunner:
            def graph_for(self, inputs):
                self.graphs[(inputs.data_ptr(), tuple(inputs.shape))] = (inputs, self._capture(inputs))
                return self.graphs[(inputs.data_ptr(), tuple(inputs.shape))]
        """,
    ),
    "no-op reset in a class that holds state": (
        "no-op-lifecycle-method",
        """
        class ResourceManager:
            def __init__(self, managers):
                self.resource_managers = dict(managers)

            def reset(self):  # defect
                pass
        """,
        """
        class ResourceManager:
            def __init__(self, managers):
                self.resource_managers = dict(managers)

            def reset(self):
                for manager in self.resource_managers.values():
                    manager.reset()
        """,
    ),
    "tensor made on one stream and used on another": (
        "stream-handoff-without-wait",
        """
        import torch

        class ModelEngine:
            def _prepare_inputs(self, scheduled):
                with torch.cuda.stream(self.h2d_stream):
                    input_ids = self.input_ids_host.to("cuda", non_blocking=True)
                return self.model.forward(input_ids=input_ids)  # defect
        """,
        """
        import torch

        class ModelEngine:
            def _prepare_inputs(self, scheduled):
                with torch.cuda.stream(self.h2d_stream):
                    input_ids = self.input_ids_host.to("cuda", non_blocking=True)
                    self.inputs_ready.record()
                self.inputs_ready.wait()
                return self.model.forward(input_ids=input_ids)
        """,
    ),
    "exception suppressed by a context manager's handler": (
        "exception-swallowed-by-context-manager",
        """
        from contextlib import contextmanager

        import torch

        @contextmanager
        def release_with_nvtx_range(name, stats):
            torch.cuda.nvtx.range_push(name)
            try:
                yield stats
            except torch.cuda.OutOfMemoryError:  # defect
                stats.oom_count += 1
            torch.cuda.nvtx.range_pop()
        """,
        """
        from contextlib import contextmanager

        import torch

        @contextmanager
        def release_with_nvtx_range(name, stats):
            torch.cuda.nvtx.range_push(name)
            try:
                yield stats
            except torch.cuda.OutOfMemoryError:
                stats.oom_count += 1
                raise
            finally:
                torch.cuda.nvtx.range_pop()
        """,
    ),
    "pinned staging slot rewritten while its copy may be in flight": (
        "pinned-slot-rewritten-while-in-flight",
        """
        import torch

        class ModelEngine:
            def __init__(self, n):
                self.host_lens = [torch.zeros(n, dtype=torch.int32, pin_memory=True) for _ in range(2)]
                self.device_lens = torch.zeros(n, dtype=torch.int32, device="cuda")

            def _prepare_lengths(self, step, lens):
                slot = self.host_lens[step % 2]
                slot.copy_(torch.tensor(lens, dtype=torch.int32))  # defect
                self.device_lens.copy_(slot, non_blocking=True)
        """,
        """
        import torch

        class ModelEngine:
            def __init__(self, n):
                self.host_lens = [torch.zeros(n, dtype=torch.int32, pin_memory=True) for _ in range(2)]
                self.device_lens = torch.zeros(n, dtype=torch.int32, device="cuda")
                self.copied = [torch.cuda.Event() for _ in range(2)]

            def _prepare_lengths(self, step, lens):
                slot = self.host_lens[step % 2]
                self.copied[step % 2].synchronize()
                slot.copy_(torch.tensor(lens, dtype=torch.int32))
                self.device_lens.copy_(slot, non_blocking=True)
                self.copied[step % 2].record()
        """,
    ),
}


@pytest.mark.parametrize("defect_class", sorted(CLASSES))
def test_each_class_is_found_in_a_third_engine_and_its_look_alike_is_left_alone(defect_class):
    matcher_id, defect, look_alike = CLASSES[defect_class]
    expected = [number for number, line in enumerate(defect.splitlines(), 1) if line.rstrip().endswith("# defect")]
    assert expected and lines(matcher_id, defect) == expected
    assert lines(matcher_id, look_alike) == []
