"""Cancelling an asyncio future in a rollback handler releases nothing: nothing runs for a
future the loop made, so a cancellation that skips ``fut.cancel()`` leaves nothing held.
What the type engine proves a future is read so; a task, an executor's future, or a
receiver the engine cannot type is still a rollback. End to end through ``review --diff``,
no configuration, in two engines' styles."""

from __future__ import annotations

RULE = "rollback-skipped-on-cancellation"

# vLLM's engine-client style: a notification future registered for a reply, awaited after
# the engines are told to switch.
VLLM_CLIENT = '''import asyncio


class AsyncMPClient:
    def __init__(self):
        self.utility_results = {}

    def _wait_for_switch(self) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        self.utility_results[0] = future
        return future

    async def scale(self, engines):
        waiter = WAITER
        try:
            await asyncio.gather(*[e.reconfigure() for e in engines])
            await waiter
        except Exception:
            waiter.cancel()
            raise
'''

# SGLang's tokenizer-manager style: the handle is a future made on the loop, or the task
# that streams the reply.
SGLANG_MANAGER = '''import asyncio


class TokenizerManager:
    async def generate(self, obj):
        loop = asyncio.get_running_loop()
        handle = HANDLE
        try:
            await self.send(obj)
            return await handle
        except Exception:
            handle.cancel()
            raise

    async def stream(self, obj):
        return obj

    async def send(self, obj):
        return obj
'''


def test_cancelling_a_future_is_no_rollback(review_added):
    variants = {
        "vllm/v1/engine/client_future.py": (VLLM_CLIENT.replace("WAITER", "self._wait_for_switch()"), 18, False),
        "vllm/v1/engine/client_task.py": (VLLM_CLIENT.replace("WAITER", "asyncio.create_task(asyncio.sleep(1))"), 18, True),
        "sglang/srt/managers/manager_future.py": (SGLANG_MANAGER.replace("HANDLE", "loop.create_future()"), 11, False),
        "sglang/srt/managers/manager_task.py": (SGLANG_MANAGER.replace("HANDLE", "asyncio.create_task(self.stream(obj))"),
                                                11, True),
        "sglang/srt/managers/manager_untyped.py": (SGLANG_MANAGER.replace("HANDLE", "obj.handle"), 11, True),
    }
    found = review_added({path: text for path, (text, _, _) in variants.items()})
    reported = {(f["path"], f["line"]) for f in found if f["rule"] == RULE}
    assert {path: (path, line) in reported for path, (_, line, _) in variants.items()} == \
        {path: expected for path, (_, _, expected) in variants.items()}, found
