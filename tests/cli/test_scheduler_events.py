"""SGLang's scheduler runs some of its work once per request, however often its loop asks
(``rules/protocols.yaml``): what ``Scheduler.ingest_requests`` runs (the inputs that
arrived), ``ScheduleBatch.retract_decode`` (a batch out of KV memory),
``HiSparseCoordinator.request_finished`` (a finished request). A helper they call is not
per step; the same helper called from the loop's batch step is. End to end through
``review --diff``, no configuration."""

from __future__ import annotations

import pytest

SCHEDULER = ("sglang/srt/managers/scheduler.py", '''from sglang.srt.managers.hisparse_coordinator import HiSparseCoordinator
from sglang.srt.managers.mm_hash import hash_feature
from sglang.srt.managers.schedule_batch import ScheduleBatch


class Scheduler:
    def __init__(self):
        self.running_batch = ScheduleBatch()
        self.hisparse = HiSparseCoordinator()

    def event_loop_normal(self):
        while True:
            self.ingest_requests(self.receiver.recv_pyobj())
            batch = self.get_next_batch_to_run()
            self.run_batch(batch)

    def ingest_requests(self, received):
        for req in received:
            CALL_IN_INGEST

    def run_batch(self, batch):
        CALL_IN_STEP
        return self.worker.forward_batch_generation(batch)
''')
SCHEDULE_BATCH = ("sglang/srt/managers/schedule_batch.py", '''from sglang.srt.managers.mm_hash import hash_feature


class ScheduleBatch:
    def retract_decode(self):
        for req in self.reqs:
            hash_feature(req.feature)

    def prepare_for_decode(self):
        for req in self.reqs:
            hash_feature(req.feature)
''')
HISPARSE = ("sglang/srt/managers/hisparse_coordinator.py", '''from sglang.srt.managers.mm_hash import hash_feature


class HiSparseCoordinator:
    def request_finished(self, req):
        hash_feature(req.feature)

    def map_last_loc_to_buffer(self, req):
        hash_feature(req.feature)
''')
HELPER = ("sglang/srt/managers/mm_hash.py", '''import torch


def hash_feature(feature):
    digest = feature.to(torch.int64).sum()
    return int(digest.item())
''')


def _helper_context(findings: list[dict]) -> str:
    found = [f for f in findings if f["path"] == HELPER[0]]
    assert found, findings
    return found[0]["execution"]["context"]


@pytest.mark.parametrize(("ingest", "step", "per_step"), [
    ("hash_feature(req.feature)", "pass", False),
    ("pass", "hash_feature(batch.feature)", True),
], ids=["ingest-requests", "run-batch"])
def test_what_the_scheduler_runs_for_arriving_requests_is_no_step(review_added, ingest, step, per_step):
    scheduler = SCHEDULER[1].replace("CALL_IN_INGEST", ingest).replace("CALL_IN_STEP", step)
    findings = review_added({SCHEDULER[0]: scheduler, HELPER[0]: HELPER[1]})
    assert (_helper_context(findings) == "per-step") is per_step


@pytest.mark.parametrize(("case", "call", "per_step"), [
    (SCHEDULE_BATCH, "self.running_batch.retract_decode()", False),
    (SCHEDULE_BATCH, "self.running_batch.prepare_for_decode()", True),
    (HISPARSE, "self.hisparse.request_finished(batch)", False),
    (HISPARSE, "self.hisparse.map_last_loc_to_buffer(batch)", True),
], ids=["retract-decode", "prepare-for-decode", "request-finished", "map-last-loc"])
def test_retractions_and_finished_requests_are_no_step(review_added, case, call, per_step):
    scheduler = SCHEDULER[1].replace("CALL_IN_INGEST", "pass").replace("CALL_IN_STEP", call)
    findings = review_added({SCHEDULER[0]: scheduler, case[0]: case[1], HELPER[0]: HELPER[1]})
    assert (_helper_context(findings) == "per-step") is per_step
