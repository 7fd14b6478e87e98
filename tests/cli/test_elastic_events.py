"""SGLang's model runner asks on every step whether an elastic expert-parallel scale-up or
a rank recovery is pending (``maybe_join_ep_ranks``, ``_maybe_rebalance_after_rank_fault``)
and returns at once when none is: what those run, recovery and rebalancing, runs once per
such event (``rules/protocols.yaml``), never as a step. Another method the same forward
calls stays per step. End to end through ``review --diff``, no configuration."""

from __future__ import annotations

import pytest

RUNNER = ("sglang/srt/model_executor/model_runner.py", '''import torch

from sglang.srt.elastic_ep.recovery import recover_ranks


class ModelRunner:
    def forward(self, forward_batch):
        self.METHOD()
        return self.model(forward_batch)

    def maybe_join_ep_ranks(self):
        recover_ranks(self.active_ranks)

    def _maybe_rebalance_after_rank_fault(self):
        recover_ranks(self.active_ranks)

    def maybe_log_ranks(self):
        recover_ranks(self.active_ranks)
''')
RECOVERY = ("sglang/srt/elastic_ep/recovery.py", '''import torch


def recover_ranks(active_ranks):
    active = active_ranks.to(torch.int32)
    return int(active.sum().item())
''')


def _context(findings: list[dict]) -> str:
    found = [f for f in findings if f["path"] == RECOVERY[0]]
    assert found, findings
    return found[0]["execution"]["context"]


@pytest.mark.parametrize(("method", "per_step"), [("maybe_join_ep_ranks", False),
                                                  ("_maybe_rebalance_after_rank_fault", False),
                                                  ("maybe_log_ranks", True)])
def test_what_an_elastic_event_runs_is_no_step(review_added, method, per_step):
    runner = RUNNER[1].replace("METHOD", method)
    findings = review_added({RUNNER[0]: runner, RECOVERY[0]: RECOVERY[1]})
    assert (_context(findings) == "per-step") is per_step
