"""Lifecycle analyses built from the PyTorch, asyncio and Python docs: what each must
catch, and the look-alikes it must leave alone, in serving-engine and trainer code."""

from __future__ import annotations

from .helpers import engine_lines as lines

def test_in_place_write_to_index_copy_follows_where_the_index_came_from():
    code = """
        import torch

        class Sampler:
            def apply(self, logits, rows: list[int], scores, step):
                keep = torch.nonzero(scores > 0).squeeze(1)
                logits[keep].zero_()                 # 7: index from a torch call
                logits[rows].add_(1.0)               # 8: annotated list
                top = torch.argsort(scores, descending=True)
                logits[top][:, 0] += 1               # 10: written through a copy
                for i in range(step):
                    logits[i].fill_(0)               # 12: an int: a view
                logits[step:].fill_(0)
                logits[keep] = 0
                logits[keep] += 1
                out = logits[keep].mul_(2)
                return out

        class Trainer:
            def mask(self, batch, pad_id):
                pad = (batch.ids == pad_id) | (batch.ids < 0)
                batch.labels[pad].fill_(-100)       # 22: a mask combined with |
                batch.labels[batch.unknown].fill_(-100)
    """
    assert lines("in-place-write-to-index-copy", code) == [7, 8, 10, 22]


def test_autograd_history_is_followed_from_the_backward_call_only():
    code = """
        import torch

        HISTORY = []

        class Trainer:
            def step(self, batch):
                out = self.model(batch)
                loss = out.loss
                self.before = loss                       # 10: stored before backward, same graph
                torch.autograd.backward(loss)
                for part in [loss, out.aux]:
                    HISTORY.append(part)                 # 13: an element of a carrying list
                self.grads.append(out.logits.grad)
                self.count = len(HISTORY)
                self.flags = loss.requires_grad

            def pipeline_stage(self, grad_output):
                output = self.stage(self.inputs)
                output.backward(grad_output)
                self.sent = grad_output
                self.kept = output                       # 22: the tensor backward ran on

            @torch.no_grad()
            def evaluate(self, batch):
                loss = self.model(batch).loss
                self.eval_losses.append(loss)

        class ModelRunner:
            def execute_model(self, batch):
                hidden = self.model(batch)
                self.last_hidden = hidden
                return hidden
    """
    assert lines("autograd-history-kept-in-state", code) == [10, 13, 22]


def test_identity_keys_are_reported_only_when_nothing_holds_the_object():
    code = """
        import weakref
        import torch

        _GRAPHS = {}

        def graph_for(x):
            _GRAPHS[id(x)] = capture(x)                  # 8: capture(x) reads x, holds nothing
            _GRAPHS[x.data_ptr()] = Entry(x)
            return _GRAPHS[id(x)]

        class BlockTable:
            def remember(self, req, tensor):
                key = id(req)
                self.by_req[key] = torch.empty_like(tensor)   # 15: through a local key
                self.refs[id(tensor)] = weakref.ref(tensor)
                self.stamps[(tensor.data_ptr(), tensor.dtype)] = 1   # 17: identity plus metadata
                self.mixed[(tensor.data_ptr(), req.name)] = 1
                memo = {}
                memo[id(req)] = 1
                return memo
    """
    assert lines("cache-keyed-by-object-identity", code) == [8, 15, 17]


def test_discarded_tasks_and_futures_are_reported_where_they_are_dropped():
    code = """
        import asyncio
        from concurrent.futures import ProcessPoolExecutor

        class Server:
            async def serve(self, loop):
                _ = asyncio.create_task(self.heartbeat())       # 7: bound, never read
                asyncio.run_coroutine_threadsafe(self.ping(), loop)   # 8
                pending = asyncio.create_task(self.poll())
                await pending
                async with asyncio.TaskGroup() as group:
                    group.create_task(self.poll())
                self.engine.submit(self.poll)

            def export(self, shards):
                executor = ProcessPoolExecutor(2)
                executor.submit(write, shards)                   # 17
                return [executor.submit(write, s) for s in shards]
    """
    assert lines("task-result-discarded", code) == [7, 8, 17]


def test_cancel_without_await_needs_a_task_the_file_stores():
    code = """
        import asyncio

        class Streams:
            def start(self, loop, rid):
                self.streams[rid] = asyncio.ensure_future(self.run(rid))
                self.timers[rid] = loop.call_later(1.0, self.expire, rid)

            def abort(self, rid):
                stream = self.streams.get(rid)
                stream.cancel()                                  # 11
                self.streams.pop(rid, None)

            def expire(self, rid):
                self.timers[rid].cancel()
                del self.timers[rid]

            def abort_checked(self, rid):
                stream = self.streams.pop(rid)
                stream.cancel()
                stream.add_done_callback(self.report)
    """
    assert lines("task-cancelled-without-await", code) == [11]


def test_no_op_lifecycle_methods_in_stateful_classes_only():
    code = """
        from abc import ABCMeta
        from typing import Generic, Protocol, TypeVar

        T = TypeVar("T")

        class KVCacheManager:
            def __init__(self, pool):
                self.pool = pool
                self.req_to_blocks = {}

            def reset(self): pass                               # 12
            def clear(self):
                self.req_to_blocks.clear()

        class Store(Protocol[T]):
            def __init__(self, items):
                self.items = items

            def close(self) -> None: ...

        class Meta(metaclass=ABCMeta):
            def __init__(self, sizes):
                self.sizes = list(sizes)

            def reset(self):
                pass

        class Counter(Generic[T]):
            def __init__(self):
                self.count = 0
                self.label = "steps"

            def reset(self):
                pass
    """
    assert lines("no-op-lifecycle-method", code) == [12]


def test_a_task_started_in_a_finalizer_is_left_alone():
    code = """
        import asyncio

        class Client:
            async def close(self):
                await self.session.close()

            def shutdown(self):
                asyncio.get_event_loop().create_task(self.close())   # 9

            def __del__(self):
                asyncio.get_event_loop().create_task(self.close())
    """
    assert lines("task-result-discarded", code) == [9]
