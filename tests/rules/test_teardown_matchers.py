"""Matchers for cancel, finish and close paths: what they catch and what they leave."""

from __future__ import annotations

from rltrefactor.matching.matchers.registry import PYTHON_MATCHERS
from rltrefactor.matching.matchers.lifecycle.teardown import name_words

from .helpers import hits


def matcher(matcher_id: str, **options):
    built = PYTHON_MATCHERS[matcher_id].build("test-rule", matcher_id, options)
    built.rule_id_source = matcher_id
    return built


def lines(m, code: str) -> list[int]:
    """The matcher's lines, checked to be the same through the engine with its
    prefilter: a prefilter that drops a hit is a silent false negative."""
    found = [line for line, _ in hits(m, code)]
    assert _through_engine(m, code) == sorted(set(found))
    return found


def _through_engine(m, code: str) -> list[int]:
    from rltrefactor.config import Config
    from rltrefactor.matching.engine import Engine
    from rltrefactor.library.loader import load_library

    rule = next(r for r in load_library().rules if r.matcher is not None and r.matcher.python == m.rule_id_source)
    engine = Engine((rule,), Config(), frozenset({rule.id}), matcher_factory=lambda _: m)
    return sorted({f.span.line for f in engine.review_file("engine/module.py", code).findings})


def test_name_words_match_inflected_verbs():
    assert {"cancel", "finish", "free"} <= name_words("cancelled_finished_freed")
    assert "abort" in name_words("_abort_requests")


def test_unchecked_removal_reports_caller_ids_on_cancel_and_finished_loops():
    m = matcher("unchecked-removal-on-release-path")
    code = (
        "class G:\n"
        "    def cancel(self, job):\n"
        "        assert job.key in self.jobs\n"          # 3: asserts a late cancel away
        "        del self.jobs[job.key]\n"               # 4: the assert above reports already
        "    def step(self, out):\n"
        "        for rid in out.finished_req_ids:\n"
        "            if rid in self.blocks:\n"
        "                del self.blocks[rid]\n"         # 8: checked
        "                del self.pads[rid]\n"           # 9: another container, unchecked
        "            self.requests.pop(rid)\n"           # 10
        "    def abort(self, seq):\n"
        "        if seq in self.waiting:\n"
        "            self.waiting.remove(seq)\n"
        "        else:\n"
        "            assert False, 'not queued'\n"       # 15
    )
    assert lines(m, code) == [3, 9, 10, 15]


def test_unchecked_removal_leaves_allocators_own_keys_and_handled_misses():
    m = matcher("unchecked-removal-on-release-path")
    code = (
        "class Pool:\n"
        "    def free(self, block):\n"
        "        assert block in self.used\n"            # a double-free check is deliberate
        "        del self.used[block]\n"
        "    def remove_hook(self, idx):\n"
        "        del self.hooks[idx]\n"
        "    def finish_request(self, req_id):\n"
        "        index = self.index_of[req_id]\n"
        "        del self.index_of[req_id]\n"            # read above: it exists
        "        lora = self.lora_of[index]\n"
        "        self.refs.pop(lora)\n"                   # own bookkeeping, not the caller's id
        "        self.extra.pop(req_id, None)\n"
        "        self.order.pop(0)\n"
        "        try:\n"
        "            del self.pinned[req_id]\n"
        "        except KeyError:\n"
        "            pass\n"
        "    def flush(self):\n"
        "        for rid in list(self.aborted_ids):\n"
        "            self.aborted_ids.pop(rid)\n"
        "    def step(self, ids):\n"
        "        for rid in ids:\n"
        "            del self.pending[rid]\n"              # not an ending path
    )
    assert lines(m, code) == []


def test_resource_without_close_sees_unnamed_and_unclosed_handles():
    m = matcher("resource-without-close")
    code = (
        "import asyncio, torch\n"
        "def load(p):\n"
        "    return torch.load(open(p, 'rb'))\n"        # 3
        "def body(p):\n"
        "    return open(p).read()\n"                    # 5
        "def run(coros):\n"
        "    loop = asyncio.new_event_loop()\n"          # 7
        "    return [loop.run_until_complete(c) for c in coros]\n"
    )
    assert lines(m, code) == [3, 5, 7]


def test_resource_without_close_leaves_owned_and_closed_handles():
    m = matcher("resource-without-close")
    code = (
        "import asyncio, contextlib\n"
        "LOG = open('log.txt', 'a')\n"
        "def a(p):\n"
        "    with open(p) as f:\n"
        "        return f.read()\n"
        "def b(p, stack):\n"
        "    return stack.enter_context(open(p))\n"
        "def c():\n"
        "    loop = asyncio.new_event_loop()\n"
        "    try:\n"
        "        loop.run_forever()\n"
        "    finally:\n"
        "        loop.close()\n"
        "def d(self, p):\n"
        "    f = open(p)\n"
        "    self.handle = f\n"
        "def e(p):\n"
        "    f = open(p)\n"
        "    return f, p\n"
        "def g(p):\n"
        "    with contextlib.closing(open(p)) as f:\n"
        "        return f.read()\n"
        "def h(self, p):\n"
        "    return self.open(p).read()\n"
        "def i(paths):\n"
        "    for p in paths:\n"
        "        yield Stream(open(p))\n"
        "def k(path, debug):\n"
        "    out: IO = sys.stderr\n"
        "    if debug:\n"
        "        out = open(path, 'w')\n"
        "    handle = io.open(path, 'rb')\n"
        "    return _Reader(handle, close_handle=True), out\n"
        "def l(dst):\n"
        "    dst = open(dst, 'wb')\n"
        "class Opened(Base):\n"
        "    def __init__(self, name):\n"
        "        super().__init__(open(name))\n"
        "def j(fd):\n"
        "    return io.TextIOWrapper(open(fd, 'wb', closefd=False))\n"
    )
    assert lines(m, code) == []


def test_awaited_delivery_only_for_per_iteration_consumers():
    m = matcher("awaited-delivery-in-fan-out-loop")
    code = (
        "import asyncio\n"
        "async def fan_out(self, results):\n"
        "    for r in results:\n"
        "        job = self.jobs.get(r.key)\n"
        "        await job.put_result(r)\n"             # 5
        "    for client in self.clients:\n"
        "        await client.ws.send(b'bye')\n"        # 7
        "    for chunk in results:\n"
        "        await self.socket.send(chunk)\n"       # one stream, in order
        "    for q in self.queues:\n"
        "        q.put_nowait(None)\n"
        "        await asyncio.wait_for(q.put(None), 1)\n"
        "def sync(self, results):\n"
        "    for r in results:\n"
        "        self.jobs[r].put(r)\n"
    )
    assert lines(m, code) == [5, 7]


def test_state_flag_after_await_only_in_async_cancel_and_close():
    m = matcher("state-flag-set-after-await")
    code = (
        "class Job:\n"
        "    async def cancel(self):\n"
        "        await self.gen.cancel(self)\n"
        "        self.cancelled = True\n"              # 4
        "    async def Abort(self):\n"
        "        self.aborted = True\n"
        "        await self.task\n"
        "    async def close(self):\n"
        "        await self.flush()\n"
        "        self.closed = True\n"
        "    async def step(self):\n"
        "        await self.gen.poll()\n"
        "        self.ready = True\n"
        "    def abort(self):\n"
        "        self.gen.abort(self)\n"
        "        self.aborted = True\n"
        "    async def cancel_all(self):\n"
        "        await self.task\n"
        "        self.count = 0\n"
    )
    assert lines(m, code) == [4]


def test_cancel_past_its_owner_needs_two_hops_and_a_cancel_function():
    m = matcher("cancel-past-its-owner")
    code = (
        "class Handle:\n"
        "    async def cancel(self):\n"
        "        self.wrapper.inner.cancel(self.job)\n"          # 3
        "        self.wrapper.cancel(self.job)\n"
        "        self.a.b.c.abort_request(self.job)\n"           # 5
        "    def abort(self):\n"
        "        self.engine.core.abort_requests([self.rid])\n"   # 7
        "    def step(self):\n"
        "        self.wrapper.inner.cancel(self.job)\n"
        "    def cancel_all(self):\n"
        "        self.wrapper.inner.flush()\n"
    )
    assert lines(m, code) == [3, 5, 7]


def test_chunk_kept_alive_only_for_generators_of_large_items():
    m = matcher("chunk-kept-alive-by-loop-variable")
    code = (
        "def sync(self, model):\n"
        "    for chunk in self.weight_chunks(model):\n"
        "        refs, handles = self.send(chunk)\n"
        "        wait(refs)\n"
        "        del handles\n"                                 # 5
        "    for batch in loader():\n"
        "        out = model(batch)\n"
        "        del out, batch\n"
        "    for name in self.names():\n"
        "        tmp = self.lookup(name)\n"
        "        del tmp\n"
        "    for tensor in self.tensors:\n"
        "        copy = clone(tensor)\n"
        "        del copy\n"
        "    for shard in iter_shards():\n"
        "        other = load()\n"
        "        del other\n"
    )
    assert lines(m, code) == [5]


def test_cleanup_after_try_only_when_a_handler_leaves_without_it():
    m = matcher("cleanup-after-try-not-in-finally")
    code = (
        "def send(self, req):\n"
        "    blocks = self.pool.allocate(req.n)\n"
        "    try:\n"
        "        self.channel.push(req, blocks)\n"
        "    except TimeoutError:\n"
        "        raise\n"
        "    self.pool.free(blocks)\n"                 # 7
        "def create(fd, data):\n"
        "    try:\n"
        "        write(fd, data)\n"
        "    except BaseException:\n"
        "        os.close(fd)\n"
        "        raise\n"
        "    os.close(fd)\n"                           # the handler closes on its way out
        "def run(cmd):\n"
        "    with Pty() as pty:\n"
        "        try:\n"
        "            proc = spawn(cmd, pty)\n"
        "        except OSError:\n"
        "            return None\n"
        "        pty.close_w()\n"                      # the with closes it anyway
        "def stop(self):\n"
        "    try:\n"
        "        self.flush()\n"
        "    except OSError:\n"
        "        return\n"
        "    self.close()\n"
        "def parse(reader):\n"
        "    try:\n"
        "        header = reader.header()\n"
        "    except ValueError:\n"
        "        header = None\n"
        "    reader.close()\n"
    )
    assert lines(m, code) == [7]


def test_unshielded_await_in_handler_reads_verbs_of_async_handlers():
    m = matcher("unshielded-await-in-handler")
    code = (
        "import asyncio\n"
        "async def gen(self, rid):\n"
        "    try:\n"
        "        await self.engine.run(rid)\n"
        "    except asyncio.CancelledError:\n"
        "        await self.engine.abort(rid)\n"                  # 6
        "        await asyncio.shield(self.engine.abort(rid))\n"
        "        await self._rollback_cancelled_acquire(rid)\n"
        "        raise\n"
        "    except Exception:\n"
        "        await self.producer.stop()\n"                   # 11
        "        async def later():\n"
        "            await self.engine.abort(rid)\n"
        "        raise\n"
        "def sync(self, rid):\n"
        "    try:\n"
        "        self.engine.run(rid)\n"
        "    except Exception:\n"
        "        self.engine.abort(rid)\n"
    )
    assert lines(m, code) == [6, 11]


def test_del_reports_attributes_a_failed_init_may_lack():
    m = matcher("del-assumes-full-construction")
    code = (
        "class Pool:\n"
        "    size = 0\n"
        "    def __init__(self, cfg):\n"
        "        self.handle = None\n"
        "        self.cfg = cfg\n"
        "        self.shm = allocate(cfg)\n"
        "        self.procs = spawn(cfg)\n"
        "    def __del__(self):\n"
        "        self.handle.close()\n"                 # assigned before any call
        "        self.cfg.size\n"
        "        if self.shm is not None:\n"
        "            self.shm.unlink()\n"
        "        try:\n"
        "            self.procs.kill()\n"
        "        except Exception:\n"
        "            pass\n"
        "        self.procs.clear()\n"                 # 17
        "        self.shm.close()\n"                    # only the first is reported
        "class NoInit(Pool):\n"
        "    def __del__(self):\n"
        "        self.other.close()\n"
    )
    assert lines(m, code) == [17]


def test_resource_prefilter_follows_import_aliases():
    from rltrefactor.config import Config
    from rltrefactor.matching.engine import Engine, select_rules
    from rltrefactor.library.loader import load_library

    library = load_library()
    engine = Engine(select_rules(library, Config()), Config(), frozenset(r.id for r in library.rules))
    code = (
        "from concurrent.futures import ThreadPoolExecutor as Workers\n"
        "def digest_all(items, digest):\n"
        "    pool = Workers(4)\n"
        "    return list(pool.map(digest, items))\n"
    )
    found = [(f.rule_id, f.span.line) for f in engine.review_file("engine/hashing.py", code).findings]
    assert ("resource-without-close", 3) in found


def test_registration_undone_only_on_success_for_registries_on_self():
    m = matcher("registration-not-undone-on-failure")
    code = (
        "class T:\n"
        "    async def run(self, rid, req):\n"
        "        self.inflight[rid] = req\n"
        "        out = await self.engine.run(req)\n"
        "        del self.inflight[rid]\n"              # 5
        "        self.waiting[req.id] = req\n"
        "        self.waiting.pop(req.id)\n"            # nothing in between can fail
        "        kwargs = {}\n"
        "        kwargs[rid] = req\n"
        "        self.engine.call(**kwargs)\n"
        "        kwargs.pop(rid)\n"                     # a local dict
        "        self.seen[rid] = 1\n"
        "        try:\n"
        "            self.engine.step()\n"
        "        finally:\n"
        "            self.seen.pop(rid)\n"
    )
    assert lines(m, code) == [5]


LIFECYCLE_QUIET = """
import asyncio
from concurrent.futures import ThreadPoolExecutor


class OutputProcessor:
    def abort_requests(self, request_ids):
        for request_id in request_ids:
            state = self.request_states.pop(request_id, None)
            if state is not None:
                self.parent_requests.pop(state.parent_id, None)

    def update_from_output(self, outputs):
        for out in outputs:
            queue = self.queues.get(out.request_id)
            if queue is not None:
                queue.put_nowait(out)


class AsyncFrontend:
    def __init__(self, engine):
        self.engine = engine
        self.executor = ThreadPoolExecutor(1)

    async def generate(self, request_id, prompt):
        queue = asyncio.Queue()
        self.queues[request_id] = queue
        try:
            await self.engine.add_request(request_id, prompt)
            while True:
                out = await queue.get()
                yield out
                if out.finished:
                    break
        except asyncio.CancelledError:
            await asyncio.shield(self.abort(request_id))
            raise
        finally:
            self.queues.pop(request_id, None)

    async def abort(self, request_id):
        self.aborted = True
        if request_id not in self.queues:
            return
        del self.queues[request_id]
        await self.engine.abort_requests([request_id])

    def shutdown(self):
        self.executor.shutdown(wait=False)


class Runner:
    def _update_states(self, scheduler_output):
        for req_id in scheduler_output.finished_req_ids:
            self.requests.pop(req_id, None)
            index = self.input_batch.remove_request(req_id)
            if index is not None:
                self.free_slots.append(index)

    def load_config(self, path):
        with open(path) as f:
            return f.read()
"""


def test_engine_shaped_look_alikes_stay_quiet_under_the_lifecycle_rules():
    from rltrefactor.config import Config
    from rltrefactor.matching.engine import Engine, select_rules
    from rltrefactor.library.loader import load_library

    library = load_library()
    lifecycle = [r for r in library.rules if r.area == "lifecycle"]
    engine = Engine(select_rules(library, Config()), Config(), frozenset(r.id for r in lifecycle))
    outcome = engine.review_file("engine/async_llm.py", LIFECYCLE_QUIET)
    assert [(f.rule_id, f.span.line) for f in outcome.findings if f.rule_id in {r.id for r in lifecycle}] == []


def test_resource_without_close_covers_shared_memory_and_zmq_contexts():
    m = matcher("resource-without-close")
    code = (
        "import zmq\n"
        "from multiprocessing import shared_memory\n"
        "def attach(name):\n"
        "    shm = shared_memory.SharedMemory(name=name)\n"   # 4
        "    return bytes(shm.buf[:8])\n"
        "def ping(addr):\n"
        "    ctx = zmq.Context()\n"                         # 7
        "    sock = ctx.socket(zmq.REQ)\n"
        "    sock.send(b'x')\n"
        "def attach_ok(name):\n"
        "    shm = shared_memory.SharedMemory(name=name)\n"
        "    try:\n"
        "        return bytes(shm.buf[:8])\n"
        "    finally:\n"
        "        shm.close()\n"
        "def bind(self, addr):\n"
        "    context = zmq.Context()\n"
        "    self.socket = context.socket(zmq.REP)\n"
        "def ping_ok(addr):\n"
        "    ctx = zmq.Context()\n"
        "    try:\n"
        "        ctx.socket(zmq.REQ).send(b'x')\n"
        "    finally:\n"
        "        ctx.destroy(linger=0)\n"
    )
    assert lines(m, code) == [4, 7]


def test_resource_prefilter_skips_only_with_open_lines():
    m = matcher("resource-without-close")
    code = (
        "def a(p):\n"
        "    with open(p) as f:\n"
        "        return f.read()\n"
        "def b(p):\n"
        "    with lock:\n"
        "        f = open(p)\n"                                # 6
        "    return f\n"
        "def c(p):\n"
        "    data = json.load(\n"
        "        open(p))\n"                                   # 10
        "    return data\n"
    )
    assert lines(m, code) == [10]
