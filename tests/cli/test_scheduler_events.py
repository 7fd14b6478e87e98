"""SGLang's scheduler runs some of its work once per request, however often its loop asks
(``rules/protocols.yaml``): what ``Scheduler.ingest_requests`` runs (the inputs that
arrived), ``ScheduleBatch.retract_decode`` (a batch out of KV memory),
``HiSparseCoordinator.request_finished`` (a finished request), a request's input-token
logprobs and a beam group's final commit. A helper they call is not
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


def _two_methods(path: str, cls: str, per_request: str, per_step: str) -> tuple[str, str]:
    """A scheduler component whose two methods call the helper: the first runs per request
    by the protocols, the second is its look-alike."""
    return path, f'''from sglang.srt.managers.mm_hash import hash_feature


class {cls}:
    def {per_request}(self, req):
        hash_feature(req.feature)

    def {per_step}(self, req):
        hash_feature(req.feature)
'''


HISPARSE = _two_methods("sglang/srt/managers/hisparse_coordinator.py", "HiSparseCoordinator", "request_finished",
                        "map_last_loc_to_buffer")
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


LOGPROBS = (*_two_methods("sglang/srt/managers/scheduler_components/logprob_result_processor.py",
                         "SchedulerLogprobResultProcessor", "_process_input_token_ids_logprobs",
                         "add_logprob_return_values"), "SchedulerLogprobResultProcessor")
BEAMS = (*_two_methods("sglang/srt/beam_search/beam_group.py", "BeamGroup", "_commit_final", "_commit_step"), "BeamGroup")
OWNER = ("sglang/srt/managers/scheduler.py", '''from MODULE import CLASS


class Scheduler:
    def __init__(self):
        self.part = CLASS()

    def event_loop_normal(self):
        while True:
            self.process_input_requests(self.receiver.recv_pyobj())
            batch = self.get_next_batch_to_run()
            self.run_batch(batch)

    def run_batch(self, batch):
        self.part.METHOD(batch)
        return self.worker.forward_batch_generation(batch)
''')


@pytest.mark.parametrize(("case", "method", "per_step"), [
    (LOGPROBS, "_process_input_token_ids_logprobs", False),
    (LOGPROBS, "add_logprob_return_values", True),
    (BEAMS, "_commit_final", False),
    (BEAMS, "_commit_step", True),
], ids=["input-logprobs", "logprob-return-values", "beam-final-commit", "beam-step-commit"])
def test_a_requests_input_logprobs_and_a_beam_groups_final_commit_are_no_step(review_added, case, method, per_step):
    path, text, name = case
    module = path.removesuffix(".py").replace("/", ".")
    scheduler = OWNER[1].replace("MODULE", module).replace("CLASS", name).replace("METHOD", method)
    findings = review_added({OWNER[0]: scheduler, path: text, HELPER[0]: HELPER[1]})
    assert (_helper_context(findings) == "per-step") is per_step
