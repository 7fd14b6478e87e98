"""A device read taken only where a host copy is missing (``if seq_lens_cpu is None:``, the
``else`` of ``if metadata.max_prefill_seq_len >= 0:``, ``int(m) if m else x.max().item()``)
runs as often as that copy is missing, which the function does not show: its frequency is
unknown, never per step. The same read under a configuration flag, or where a device field
is missing, stays per step. End to end through ``review --diff``, no configuration, in two
engines' styles."""

from __future__ import annotations

import pytest

SYNC_RULES = ("host-sync-in-hot-path", "device-scalar-read-in-hot-path")

# SGLang's model style: the host lengths of the batch, read back from the device when unset.
SGLANG_LENGTHS = ("sglang/srt/models/short_conv.py", '''import torch


class ShortConv(torch.nn.Module):
    def forward(self, hidden_states, forward_batch):
        seq_lens = forward_batch.FIELD
        if seq_lens is None:
            seq_lens = forward_batch.extend_seq_lens.detach().cpu().tolist()
        return hidden_states.new_zeros((len(seq_lens), max(seq_lens)))
''', 8)

# vLLM's indexer style: a length the metadata builder computed, -1 when it could not.
VLLM_SENTINEL = ("vllm/models/demo/sparse_indexer.py", '''import torch


class SparseIndexer(torch.nn.Module):
    def forward(self, positions, prefill_metadata, topk_tokens):
        if TEST:
            short = prefill_metadata.max_prefill_seq_len <= topk_tokens
        else:
            short = int(positions.max().item()) + 1 <= topk_tokens
        return short
''', 9)

# SGLang's attention-backend style: a conditional expression on a host length the backend keeps.
SGLANG_CHOICE = ("sglang/srt/layers/attention/demo_backend.py", '''import torch


class DemoBackend(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self._max_seqlen_k = 1
        self.use_triton = True

    def forward(self, forward_batch):
        seq_lens = forward_batch.seq_lens
        return CHOSEN if FIELD else int(seq_lens.max().item())
''', 12)


def _execution(review_added, case: tuple[str, str, int], placeholder: str, written: str) -> str:
    """How often the review says the read of ``case`` runs, ``placeholder`` written as given."""
    path, text, line = case
    findings = review_added({path: text.replace(placeholder, written)})
    found = [f for f in findings if f["rule"] in SYNC_RULES and f["line"] == line]
    assert found, [(f["rule"], f["line"]) for f in findings]
    return found[0]["execution"]["context"]


@pytest.mark.parametrize(("field", "execution"), [("extend_seq_lens_cpu", "unknown"), ("extend_seq_lens", "per-step")],
                         ids=["host-copy", "device-field"])
def test_a_read_for_missing_host_lengths_is_of_unknown_frequency(review_added, field, execution):
    assert _execution(review_added, SGLANG_LENGTHS, "FIELD", field) == execution


@pytest.mark.parametrize(("test", "execution"), [("prefill_metadata.max_prefill_seq_len >= 0", "unknown"),
                                                 ("prefill_metadata.use_host_predicate", "per-step")],
                         ids=["sentinel", "flag"])
def test_the_else_of_a_sentinel_test_is_of_unknown_frequency(review_added, test, execution):
    assert _execution(review_added, VLLM_SENTINEL, "TEST", test) == execution


@pytest.mark.parametrize(("chosen", "field", "execution"), [("int(self._max_seqlen_k)", "self._max_seqlen_k", "unknown"),
                                                            ("0", "self.use_triton", "per-step")],
                         ids=["kept-length", "flag"])
def test_a_conditional_expression_on_a_kept_length(review_added, chosen, field, execution):
    case = (SGLANG_CHOICE[0], SGLANG_CHOICE[1].replace("CHOSEN", chosen), SGLANG_CHOICE[2])
    assert _execution(review_added, case, "FIELD", field) == execution


# DeepSpeed's expert-parallel style: a token count the dispatcher fills, 0 until it is known.
DEEPSPEED_COUNT = ("deepspeed/moe/ep_combine.py", '''import torch


class Combine(torch.nn.Module):
    def forward(self, ctx, payload, combined):
        if TEST:
            ctx.num_tokens = int(payload.token_indices.max().item()) + 1
        return combined.new_zeros((ctx.num_tokens, combined.shape[-1]))
''', 7)


@pytest.mark.parametrize(("test", "execution"), [("ctx.num_tokens <= 0", "unknown"), ("ctx.recount", "per-step")],
                         ids=["count-unknown", "flag"])
def test_a_read_for_an_unknown_count_is_of_unknown_frequency(review_added, test, execution):
    assert _execution(review_added, DEEPSPEED_COUNT, "TEST", test) == execution


# SGLang's NPU backend style: ``not`` of a configuration flag picks a path, and ``not`` of a
# tensor's ``is_cpu`` picks the device path; neither is a missing copy. ``not`` of a host
# list the branch fills is one.
SGLANG_NOT = ("sglang/srt/hardware_backend/npu/attention/demo_backend.py", '''import torch


class DemoNpuBackend(torch.nn.Module):
    def __init__(self, arch):
        super().__init__()
        self.use_mla = False

    def forward(self, forward_batch, tokens):
        lens = forward_batch.seq_lens_cpu_list
        if TEST:
            lens = forward_batch.seq_lens.cpu().tolist()
        return tokens[: sum(lens)]
''', 12)


@pytest.mark.parametrize(("test", "execution"), [("not lens", "unknown"), ("not self.use_mla", "per-step"),
                                                 ("not tokens.is_cpu", "per-step")],
                         ids=["copy-filled", "configuration-flag", "device-path"])
def test_not_of_a_flag_is_no_missing_copy(review_added, test, execution):
    assert _execution(review_added, SGLANG_NOT, "TEST", test) == execution
