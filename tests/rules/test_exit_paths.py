"""release-skipped-on-exit-path: which pairs the file shows, and which ways out skip the release."""

from __future__ import annotations

from rltrefactor.config import Config
from rltrefactor.matching.engine import Engine

from .helpers import bundled_library
from .helpers import engine_lines as lines

RULE = "release-skipped-on-exit-path"

# The pair as the file uses it correctly: mined from this method.
CORRECT_USE = """
    def _evict(self, req):
        slots = self.slot_pool.take(req.num_slots)
        try:
            self._swap_out(req, slots)
        finally:
            self.slot_pool.give_back(slots)
"""


def scheduler(body: str, *, correct_use: bool = True) -> str:
    return "class Scheduler:\n" + (CORRECT_USE if correct_use else "") + body


def marked(code: str) -> list[int]:
    """The lines a finding belongs on: those ending in ``# here``."""
    return [number for number, line in enumerate(code.splitlines(), 1) if line.endswith("# here")]


def test_an_exception_an_early_return_and_a_raise_each_skip_the_release():
    code = scheduler("""
    def _admit(self, req):
        slots = self.slot_pool.take(req.num_slots)
        self._prefill(req, slots)
        self.slot_pool.give_back(slots)  # here

    def _admit_checked(self, req):
        slots = self.slot_pool.take(req.num_slots)
        if req.cancelled:
            return None  # here
        self.slot_pool.give_back(slots)

    def _admit_strict(self, req):
        slots = self.slot_pool.take(req.num_slots)
        for tok in req.tokens:
            if tok < 0:
                raise ValueError(tok)  # here
        self.slot_pool.give_back(slots)
""")
    assert lines(RULE, code) == marked(code) and len(marked(code)) == 3


def test_cancellation_at_an_await_and_closing_at_a_yield_skip_the_release():
    code = scheduler("""
    async def _admit(self, req):
        slots = self.slot_pool.take(req.num_slots)
        await self.transfer.wait_ready(req)
        self.slot_pool.give_back(slots)  # here

    def _stream(self, req):
        slots = self.slot_pool.take(req.num_slots)
        for out in req.outputs:
            yield out
        self.slot_pool.give_back(slots)  # here
""")
    assert lines(RULE, code) == marked(code) and len(marked(code)) == 2


def test_a_release_in_a_try_body_needs_a_handler_that_releases():
    code = scheduler("""
    def _admit(self, req):
        slots = self.slot_pool.take(req.num_slots)
        try:
            self._prefill(req, slots)
            self.slot_pool.give_back(slots)  # here
        except RuntimeError:
            self.logger.warning("prefill failed")

    def _admit_rolled_back(self, req):
        slots = self.slot_pool.take(req.num_slots)
        try:
            self._prefill(req, slots)
            self.slot_pool.give_back(slots)
        except RuntimeError:
            self.slot_pool.give_back(slots)
            raise
""")
    assert lines(RULE, code) == marked(code) and len(marked(code)) == 1


def test_look_alikes_are_left_alone():
    code = scheduler("""
    def _failed_take(self, req):
        slots = self.slot_pool.take(req.num_slots)
        if slots is None:
            return None
        self.slot_pool.give_back(slots)

    def _absorbed(self, req):
        slots = self.slot_pool.take(req.num_slots)
        try:
            self._prefill(req, slots)
        except RuntimeError:
            self.logger.warning("prefill failed")
        self.slot_pool.give_back(slots)

    def _conditional(self, req):
        slots = self.slot_pool.take(req.num_slots)
        self._prefill(req, slots)
        if req.done:
            self.slot_pool.give_back(slots)

    def _local(self, req):
        pool = SlotPool(8)
        slots = pool.take(2)
        self._prefill(req, slots)
        pool.give_back(slots)

    def _loop_exit_inside(self, req):
        slots = self.slot_pool.take(req.num_slots)
        for tok in req.tokens:
            if tok < 0:
                break
        self.slot_pool.give_back(slots)

    def _other_owner(self, req):
        slots = self.slot_pool.take(req.num_slots)
        self._prefill(req, slots)
        self.other_pool.give_back(slots)
""")
    assert lines(RULE, code) == []


def test_without_a_correct_use_in_the_file_the_names_pair_nothing():
    code = scheduler("""
    def _admit(self, req):
        slots = self.slot_pool.take(req.num_slots)
        self._prefill(req, slots)
        self.slot_pool.give_back(slots)
""", correct_use=False)
    assert lines(RULE, code) == []


def test_the_object_itself_is_no_owner_but_a_module_holding_global_state_is():
    code = '''
import gc

class Runner:
    def _own_methods(self, req):
        state = self._begin(req)
        try:
            self._run(req)
        finally:
            self._end(state)

    def _own_methods_again(self, req):
        state = self._begin(req)
        self._run(req)
        self._end(state)

    def _capture(self, graph):
        gc.disable()
        try:
            self._record(graph)
        finally:
            gc.enable()

    def _capture_again(self, graph):
        gc.disable()
        self._record(graph)
        gc.enable()  # here
'''
    assert lines(RULE, code) == marked(code) and len(marked(code)) == 1


def test_free_lists_and_locks_pair_without_a_correct_use():
    code = '''
import threading

class SlotTable:
    def __init__(self):
        self.mutex = threading.Lock()
        self.free_rows = list(range(16))

    def assign(self, req):
        row = self.free_rows.pop()
        self._write(req, row)
        self.free_rows.append(row)  # here

    def update(self, req):
        self.mutex.acquire()
        self._write(req, 0)
        self.mutex.release()  # here

    def quick(self, req):
        row = self.free_rows.pop()
        req.row = row
        self.free_rows.append(row)
'''
    assert lines(RULE, code) == marked(code) and len(marked(code)) == 2


def test_a_finally_that_releases_makes_a_plain_release_a_second_one():
    code = scheduler("""
    def _swap(self, req):
        slots = self.slot_pool.take(req.num_slots)
        self._prepare(req)
        try:
            self.slot_pool.give_back(slots)
            yield
        finally:
            self.slot_pool.give_back(slots)
""")
    assert lines(RULE, code) == []


def test_in_a_diff_the_pair_is_mined_from_functions_the_change_does_not_touch():
    rule = next(r for r in bundled_library().rules if r.id == RULE)
    code = scheduler("""
    def _admit(self, req):
        slots = self.slot_pool.take(req.num_slots)
        self._prefill(req, slots)
        self.slot_pool.give_back(slots)  # here
""")
    touched = frozenset(range(marked(code)[0] - 2, marked(code)[0] + 1))
    outcome = Engine((rule,), Config(), frozenset({rule.id})).review_file("engine/sched.py", code, lines=touched)
    assert [f.span.line for f in outcome.findings] == marked(code)


def test_one_finding_per_problem_with_the_name_list_rule_beside_it():
    rules = tuple(r for r in bundled_library().rules if r.id in (RULE, "release-not-on-failure-path"))
    code = """
import asyncio

class Scheduler:
    def __init__(self):
        self.gate = asyncio.Lock()

    async def send(self, req):
        await self.gate.acquire()
        await self.channel.send(req)
        self.gate.release()  # here

    def stage(self, req):
        blocks = self.pool.allocate(req.n)
        self.copy(req, blocks)
        self.pool.free(blocks)  # here

    def evict(self, req):
        blocks = self.pool.allocate(req.n)
        try:
            self.copy(req, blocks)
        finally:
            self.pool.free(blocks)

    def unrelated(self, req):
        self.other.lock()
        self.copy(req, None)
        self.other.unlock()
"""
    outcome = Engine(rules, Config(), frozenset(r.id for r in rules)).review_file("engine/sched.py", code)
    found = sorted((f.span.line, f.rule_id) for f in outcome.findings)
    assert found == [(11, RULE), (16, RULE), (26, "release-not-on-failure-path")]
    assert [line for line, _ in found[:2]] == marked(code)
