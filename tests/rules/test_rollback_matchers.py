"""Matchers for work that registers something and has no way back when it fails."""

from __future__ import annotations

from .test_teardown_matchers import lines, matcher

# Another method removes entries of each container the snippets register into.
_REMOVER = (
    "    def drop(self, uid):\n"
    "        self.models.pop(uid, None)\n"
)


def test_refused_key_reported_at_first_await_that_can_leave_it_registered():
    m = matcher("refused-key-left-registered-on-failure")
    code = (
        "class Worker:\n"
        "    async def launch(self, uid, ref):\n"
        "        assert uid not in self.models\n"
        "        try:\n"
        "            self.models[uid] = ref\n"           # 5: registered inside a try whose finally keeps it
        "            try:\n"
        "                await ref.get_pid()\n"          # 7: a failure here is swallowed
        "            except Exception:\n"
        "                pass\n"
        "        finally:\n"
        "            self.launching -= 1\n"
        "        try:\n"
        "            await self.report(uid)\n"           # 13: only logged, the entry stays
        "        except KeyError:\n"
        "            logger.warning('report failed: %s', uid)\n"
        "            raise\n"
        "        await ref.wait_for_load()\n"
        + _REMOVER
    )
    assert lines(m, code) == [13]


def test_refused_key_quiet_when_a_handler_tears_the_entry_down_or_it_is_removed_first():
    m = matcher("refused-key-left-registered-on-failure")
    code = (
        "class Worker:\n"
        "    async def launch(self, uid, ref):\n"
        "        if uid in self.models:\n"
        "            raise ValueError(uid)\n"
        "        self.models[uid] = ref\n"
        "        try:\n"
        "            await ref.wait_for_load()\n"
        "        except BaseException:\n"
        "            await self._clean_up_failed_launch(uid)\n"   # hands the key to a teardown
        "            raise\n"
        "    async def swap(self, uid, ref):\n"
        "        assert uid not in self.models\n"
        "        self.models[uid] = ref\n"
        "        self.models.pop(uid)\n"
        "        await ref.close()\n"
        "    async def step(self, uid, ref):\n"
        "        assert uid not in self.models\n"
        "        self.models[uid] = ref\n"
        "        await ref.step()\n"                      # the removal below is reported by another rule
        "        del self.models[uid]\n"
        "    async def later(self, uid, ref):\n"
        "        self.models[uid] = ref\n"                # registered before the refusing test
        "        assert uid not in self.models\n"
        "        await ref.close()\n"
        "    async def deferred(self, uid, ref):\n"
        "        assert uid not in self.models\n"
        "        self.models[uid] = ref\n"
        "        async def wait():\n"                     # defined, not awaited here
        "            await ref.wait_for_load()\n"
        "        return wait\n"
        + _REMOVER
    )
    assert lines(m, code) == []


def test_refused_key_needs_another_method_that_removes_entries():
    m = matcher("refused-key-left-registered-on-failure")
    code = (
        "class Worker:\n"
        "    async def launch(self, uid, ref):\n"
        "        assert uid not in self.models\n"
        "        self.models[uid] = ref\n"
        "        await ref.wait_for_load()\n"              # 5
    )
    assert lines(m, code) == []
    assert lines(m, code + _REMOVER) == [5]


def test_undo_discarded_reports_the_operation_not_its_inverse():
    m = matcher("undo-discarded-from-paired-record")
    code = (
        "class Supervisor:\n"
        "    async def register_model(self, kind, model):\n"
        "        (\n"
        "            spec_cls,\n"
        "            register_fn,\n"
        "            _,\n"
        "        ) = self._types[kind]\n"
        "        for worker in self.workers:\n"
        "            await worker.register_model(kind, model)\n"
        "        register_fn(spec_cls.parse(model))\n"     # 10
        "    async def unregister_model(self, kind, name):\n"
        "        _, _, unregister_fn = self._types[kind]\n"
        "        unregister_fn(name)\n"                    # the inverse itself: quiet
    )
    assert lines(m, code) == [10]


def test_undo_discarded_quiet_without_an_inverse_pair_or_inside_a_try():
    m = matcher("undo-discarded-from-paired-record")
    code = (
        "class Supervisor:\n"
        "    def register_model(self, kind, model):\n"
        "        spec_cls, register_fn, _ = self._types[kind]\n"
        "        try:\n"
        "            register_fn(spec_cls.parse(model))\n"   # a try decides what a failure undoes
        "        finally:\n"
        "            self.pending -= 1\n"
        "    def unregister_model(self, kind, name):\n"
        "        _, _, unregister_fn = self._types[kind]\n"
        "        unregister_fn(name)\n"
        "    def encode(self, kind, value):\n"
        "        encode_fn, _ = self._codecs[kind]\n"      # decode is no inverse of encode here
        "        return encode_fn(value)\n"
        "    def decode(self, kind, blob):\n"
        "        _, decode_fn = self._codecs[kind]\n"
        "        return decode_fn(blob)\n"
        "    def start(self, kind):\n"
        "        start_fn, _ = self._workers[kind]\n"
        "        start_fn()\n"
        "    def restart(self, kind):\n"
        "        start_fn, stop_fn = self._workers[kind]\n"   # calls both: not the inverse's owner
        "        stop_fn()\n"
        "        start_fn()\n"
    )
    assert lines(m, code) == []
