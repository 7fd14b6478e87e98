"""``global-rng-reseed-in-engine`` leaves a reseed whose global state comes back: inside
``with torch.random.fork_rng():`` or in a ``try`` whose ``finally`` restores the saved
state. The same reseed restored outside a ``finally`` (an exception skips it) or seeded
outside the fork is reported. End to end through ``review --diff``, in two engines' styles."""

from __future__ import annotations

import pytest

RULE = "global-rng-reseed-in-engine"

# vLLM's FlashInfer all-reduce style: a workspace name drawn from a seeded `random`.
VLLM_WORKSPACE = ("vllm/distributed/device_communicators/flashinfer_all_reduce.py", '''import random

import torch


class FlashInferAllReduce(torch.nn.Module):
    def forward(self, hidden_states):
        return self._create_workspace(hidden_states.shape[0])

    def _create_workspace(self, rank):
        state = random.getstate()
        BODY
''')

VLLM_RESTORED = '''try:
            random.seed(rank)
            return random.randint(0, 1 << 16)
        finally:
            random.setstate(state)'''
VLLM_UNGUARDED = '''random.seed(rank)
        name = random.randint(0, 1 << 16)
        random.setstate(state)
        return name'''

# SGLang's sampler style: a seeded draw inside a forked generator state.
SGLANG_SAMPLER = ("sglang/srt/layers/sampler.py", '''import torch


class Sampler(torch.nn.Module):
    def forward(self, probs, seed):
        BODY
''')

SGLANG_FORKED = '''with torch.random.fork_rng():
            torch.manual_seed(seed)
            return torch.multinomial(probs, 1)'''
SGLANG_UNFORKED = '''torch.manual_seed(seed)
        with torch.random.fork_rng():
            return torch.multinomial(probs, 1)'''


def _reported_at(review_new_file, case: tuple[str, str], body: str) -> set[int]:
    path, text = case
    found = review_new_file(path, text.replace("BODY", body))
    return {line for line, rule in found.items() if rule == RULE}


@pytest.mark.parametrize(("case", "body"), [(VLLM_WORKSPACE, VLLM_RESTORED), (SGLANG_SAMPLER, SGLANG_FORKED)],
                         ids=["vllm-finally", "sglang-fork-rng"])
def test_a_reseed_whose_state_comes_back_is_not_reported(review_new_file, case, body):
    assert not _reported_at(review_new_file, case, body)


@pytest.mark.parametrize(("case", "body", "line"), [
    (VLLM_WORKSPACE, VLLM_UNGUARDED, 12),
    (SGLANG_SAMPLER, SGLANG_UNFORKED, 6),
], ids=["vllm-restored-outside-finally", "sglang-seeded-before-the-fork"])
def test_a_reseed_left_unscoped_is_reported(review_new_file, case, body, line):
    assert _reported_at(review_new_file, case, body) == {line}
