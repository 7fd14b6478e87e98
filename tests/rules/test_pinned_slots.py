"""pinned-slot-rewritten-while-in-flight: which rings, slots, hand-offs and waits count."""

from __future__ import annotations

from rltrefactor.matching.matchers.residency.pinned_slots import PinnedSlotRewrittenWhileInFlight, slot_writes

from .helpers import hits

MATCHER = PinnedSlotRewrittenWhileInFlight("pinned-slot-rewritten-while-in-flight", {})

GETTER = """
import torch

class Pool:
    @classmethod
    def get(cls, n):
        ids = torch.zeros(n, dtype=torch.long)
        lens = [torch.zeros(1, dtype=torch.int32, pin_memory=True) for _ in range(2)]
        out = [torch.zeros(n, pin_memory=True) for _ in range(2)]
        return ids, lens, out

class Runner:
    def submit(self, x, stream):
        ids, lens, out = Pool.get(x.shape[0])
        slot = self.layer % 2
        ids.fill_(0)
        {write}
        self.queue.push(stream, lens[slot].data_ptr(), out[slot].data_ptr())
"""


def test_only_the_ring_positions_of_a_returned_tuple_are_rings():
    assert [line for line, _ in hits(MATCHER, GETTER.format(write="lens[slot].fill_(x.shape[0])"))] == [17]
    assert hits(MATCHER, GETTER.format(write="ids[slot].fill_(x.shape[0])")) == []


def test_a_slot_not_handed_off_in_the_function_is_left_alone():
    code = GETTER.format(write="out[slot].zero_()").replace("out[slot].data_ptr()", "x.data_ptr()")
    assert hits(MATCHER, code) == []


def test_the_finding_names_the_ring_and_the_hand_off():
    [(line, bindings)] = hits(MATCHER, GETTER.format(write="lens[slot].fill_(x.shape[0])"))
    assert bindings["RING"] == "lens" and bindings["ALLOCATED"] == "8"
    assert bindings["HANDOFF"].startswith("`lens[slot].data_ptr()`") and bindings["HANDOFF_LINE"] == "18"


def test_a_wait_between_the_hand_off_and_the_next_write_clears_it():
    before = GETTER.format(write="self.done[slot].synchronize(); lens[slot].fill_(1)")
    after = GETTER.format(write="lens[slot].fill_(1)") + "        self.done[slot].synchronize()\n"
    between = GETTER.format(write="lens[slot].fill_(1)").replace(
        "        self.queue.push", "        self.done[slot].synchronize()\n        self.queue.push")
    native = GETTER.format(write="self.queue.sync_with_cuda_stream(stream); lens[slot].fill_(1)")
    imported = GETTER.format(write="synchronize(); lens[slot].fill_(1)")
    assert hits(MATCHER, before) == [] and hits(MATCHER, after) == []
    assert hits(MATCHER, native) == [] and hits(MATCHER, imported) == []
    assert [line for line, _ in hits(MATCHER, between)] == [17]  # the wait comes after the write


def test_columns_count_characters_on_lines_with_non_ascii_text():
    code = GETTER.format(write='note = "é"; lens[slot].fill_(1)')
    [(line, _)] = hits(MATCHER, code)
    written = code.splitlines()[16]
    assert line == 17 and slot_writes(code)[0].column == written.index("lens[slot]")


def test_a_stream_ordered_copy_into_the_slot_is_a_hand_off_not_a_host_write():
    code = GETTER.format(write="out[slot].copy_(x, non_blocking=True)")
    assert hits(MATCHER, code) == []
    host = GETTER.format(write="out[slot].copy_(x.cpu())")
    assert [line for line, _ in hits(MATCHER, host)] == [17]


def test_unparsable_files_and_files_without_pinned_memory_give_nothing():
    assert slot_writes("def f(:\n  pin_memory=True\n") == ()
    assert slot_writes(GETTER.format(write="lens[slot].fill_(1)").replace("pin_memory=True", "device='cpu'")) == ()


LOOP = """
import torch

def upload(chunks, out, width, done):
    staging = [torch.empty(width, pin_memory=True) for _ in range(2)]
    {before}
    for step, chunk in enumerate(chunks):
        slot = step % 2
        {inside}
        staging[slot][: len(chunk)] = torch.from_numpy(chunk)
        out[step].copy_(staging[slot], non_blocking=True)
"""


def test_a_ring_built_before_a_loop_is_reused_by_its_iterations_and_only_waits_inside_count():
    assert [line for line, _ in hits(MATCHER, LOOP.format(before="done.synchronize()", inside="pass"))] == [10]
    assert hits(MATCHER, LOOP.format(before="pass", inside="done[slot].synchronize()")) == []


def test_a_ring_built_in_the_loop_or_written_outside_one_is_fresh():
    inside = LOOP.replace("    staging = [", "    unused = [").replace(
        "        slot = step % 2", "        staging = [torch.empty(width, pin_memory=True) for _ in range(2)]\n        slot = step % 2")
    assert hits(MATCHER, inside.format(before="pass", inside="pass")) == []
    once = LOOP.replace("    for step, chunk in enumerate(chunks):\n", "    if chunks:\n        step, chunk = 0, chunks[0]\n")
    assert hits(MATCHER, once.format(before="pass", inside="pass")) == []


ONCE = """
import torch

class Stager:
    def __init__(self, n):
        self.ring = [torch.zeros(n, pin_memory=True) for _ in range(2)]
        self.step = 0

    def {name}(self):
        slot = self.step % 2
        self.ring[slot].fill_(1)
        self.dev.copy_(self.ring[slot], non_blocking=True)

    def load_weights(self, chunks, n):
        staging = [torch.empty(n, pin_memory=True) for _ in range(2)]
        for step, chunk in enumerate(chunks):
            staging[step % 2].copy_(torch.from_numpy(chunk))
            self.weights[step].copy_(staging[step % 2], non_blocking=True)
"""


def test_a_kept_ring_needs_code_that_runs_again_but_a_loop_reuses_its_ring_anywhere():
    assert [line for line, _ in hits(MATCHER, ONCE.format(name="stage"), hot=False)] == [11, 17]
    assert [line for line, _ in hits(MATCHER, ONCE.format(name="warm_up"), hot=False)] == [17]


APPENDED = """
import torch

class Uploader:
    def __init__(self, n, depth):
        {build}
        self.turn = 0

    def upload(self, values, out):
        self.turn = (self.turn + 1) % len(self.staging)
        self.staging[self.turn][: len(values)] = torch.tensor(values)
        out.copy_(self.staging[self.turn], non_blocking=True)
"""


def test_a_ring_built_by_appending_pinned_tensors_is_a_ring():
    on_self = "self.staging = []\n        for _ in range(depth):\n            self.staging.append(torch.empty(n).pin_memory())"
    local = "staging = []\n        for _ in range(depth):\n            staging.append(torch.empty(n, pin_memory=True))\n        self.staging = staging"
    pageable = "self.staging = []\n        for _ in range(depth):\n            self.staging.append(torch.empty(n))"
    assert [line for line, _ in hits(MATCHER, APPENDED.format(build=on_self))] == [13]
    assert [line for line, _ in hits(MATCHER, APPENDED.format(build=local))] == [14]
    assert hits(MATCHER, APPENDED.format(build=pageable)) == []
