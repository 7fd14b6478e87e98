"""Matchers for coroutines, shutdown and exceptions: the edges their examples do not pin."""

from __future__ import annotations

import pytest

from rltrefactor.matching.matchers.options import MatcherSpecError
from rltrefactor.matching.matchers.registry import PYTHON_MATCHERS

from .test_teardown_matchers import lines, matcher


def test_blocking_call_reads_only_the_coroutine_body():
    m = matcher("blocking-call-in-coroutine")
    code = (
        "import time\n"
        "async def run(self, fut):\n"
        "    cb = lambda: fut.call().get()\n"      # 3: runs later, elsewhere
        "    def later():\n"
        "        time.sleep(1)\n"                  # 5: a nested def is not the coroutine
        "    await asyncio.sleep(0)\n"
        "    value = await self.step.call().get()\n"  # 7: awaited get of an async API
        "    self.step.call().get()\n"             # 8
        "    return fut.get(), fut.result()\n"     # 9: not a call's fresh future
    )
    assert lines(m, code) == [8]


def test_rollback_handler_is_read_only_when_the_try_body_awaits():
    m = matcher("rollback-skipped-on-cancellation")
    code = (
        "async def launch(self, uid):\n"
        "    try:\n"
        "        self.pool.start(uid)\n"           # no await: a cancel cannot land here
        "    except Exception:\n"
        "        self.release(uid)\n"
        "        raise\n"
        "    try:\n"
        "        await self.pool.load(uid)\n"
        "    except Exception:\n"                  # 9
        "        self.release(uid)\n"
        "        raise\n"
        "    try:\n"
        "        await self.pool.load(uid)\n"
        "    except Exception:\n"                  # logs only: nothing to roll back
        "        logger.exception('load failed')\n"
        "        raise\n"
    )
    assert lines(m, code) == [9]


def test_teardown_guard_must_test_the_attribute_itself():
    m = matcher("teardown-not-idempotent")
    code = (
        "class M:\n"
        "    def stop(self):\n"
        "        if self.engine.alive:\n"          # 3: reads through it, tests nothing about it
        "            self.engine.close()\n"
        "        self.engine = None\n"
        "    def shutdown(self):\n"
        "        if self.pool is not None and self.pool.busy:\n"
        "            self.pool.drain()\n"
        "        self.pool = None\n"
        "    def step(self):\n"
        "        self.cache.flush()\n"             # not a teardown
        "        self.cache = None\n"
    )
    assert lines(m, code) == [3]


def test_process_group_teardown_resolves_import_aliases():
    unguarded = matcher("process-group-teardown", shape="unguarded")
    code = (
        "from torch import distributed as tdist\n"
        "import torch.distributed\n"
        "def stop():\n"
        "    tdist.destroy_process_group()\n"      # 4
        "def stop_again(group):\n"
        "    group.destroy_process_group()\n"      # not torch.distributed's
    )
    assert lines(unguarded, code) == [4]


def test_process_group_teardown_rejects_an_unknown_shape():
    with pytest.raises(MatcherSpecError, match="expected 'unguarded' or 'failure-path' .got 'always'"):
        PYTHON_MATCHERS["process-group-teardown"].build("r", "process-group-teardown", {"shape": "always"})


def test_exception_statement_leaves_calls_that_use_the_exception():
    m = matcher("exception-not-raised")
    code = (
        "def f(x):\n"
        "    ValueError('bad')\n"                  # 2
        "    handle_error(x)\n"
        "    self.OnError(x)\n"
        "    log(KeyError(x))\n"
        "    raise KeyError(x)\n"
    )
    assert lines(m, code) == [2]


def test_del_reports_only_the_first_unprotected_module_call():
    m = matcher("del-calls-into-modules")
    code = (
        "import gc\n"
        "import torch\n"
        "class C:\n"
        "    def __del__(self):\n"
        "        self.close()\n"
        "        gc.collect()\n"                   # 6
        "        torch.cuda.empty_cache()\n"
        "    def close(self):\n"
        "        gc.collect()\n"
    )
    assert lines(m, code) == [6]


@pytest.mark.parametrize("guard", ["contextlib.suppress(Exception)", "suppress(Exception, OSError)"])
def test_del_under_suppress_is_the_prescribed_last_resort(guard):
    m = matcher("del-calls-into-modules")
    code = (
        "import contextlib\n"
        "from contextlib import suppress\n"
        "import zmq\n"
        "class Listener:\n"
        "    def __del__(self):\n"
        f"        with {guard}:\n"
        "            self.cleanup()\n"
        "            zmq.Context.instance().term()\n"
        "        zmq.Context.instance().term()\n"  # 9: outside the guard
    )
    assert lines(m, code) == [9]
    # A context manager that suppresses nothing protects nothing.
    assert lines(m, code.replace(guard, "zmq.Context()")) == [6]


def test_consumer_loop_needs_the_flag_and_the_final_item_in_one_method():
    m = matcher("consumer-loop-ends-on-producer-flag")
    code = (
        "class S:\n"
        "    def finish(self):\n"
        "        self.done = True\n"
        "    def put(self, item):\n"
        "        self.q.put_nowait(item)\n"        # the flag and the item in two methods
        "    async def read(self):\n"
        "        while not self.done:\n"
        "            yield await self.q.get()\n"
    )
    assert lines(m, code) == []
    assert lines(m, code.replace("        self.done = True\n", "        self.done = True\n        self.q.put_nowait(None)\n")) == [8]


def test_thread_with_an_explicit_daemon_argument_is_a_decision():
    m = matcher("non-daemon-worker-thread")
    code = (
        "import queue, threading\n"
        "class C:\n"
        "    def __init__(self):\n"
        "        self.q = queue.Queue()\n"
        "        self.t = threading.Thread(target=work, args=(self.q,), daemon=False)\n"
        "        self.u = threading.Thread(target=work, args=(self.q,))\n"   # 6
        "        self.v = threading.Thread(target=work, args=(self.other,))\n"  # nothing says it waits
    )
    assert lines(m, code) == [6]


def test_atexit_cleanup_is_read_only_where_children_start():
    m = matcher("child-cleanup-only-at-exit")
    code = (
        "import atexit, subprocess\n"
        "def start_logging(handler):\n"
        "    atexit.register(handler.close)\n"
        "def start(args):\n"
        "    proc = subprocess.Popen(args)\n"
        "    atexit.register(proc.terminate)\n"    # 6
    )
    assert lines(m, code) == [6]
