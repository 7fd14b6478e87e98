"""A write into a device tensor through a boolean mask the host holds waits for the
device, a number too (measured on an H100: ``bench/probes/host_mask_reads.py``), where a
number written through a device mask becomes ``masked_fill_`` and does not. Reported where
the function places the receiver on the device; left alone for a host receiver, a device
mask, and a receiver the function does not place. End to end with no configuration, in two
engines' styles."""

from __future__ import annotations

import pytest

VLLM_BAD_WORDS = ("vllm/v1/sample/logits_processor/bad_words.py", '''import torch


class BadWordsProcessor(torch.nn.Module):
    def forward(self, hidden_states, token_ids_cpu, banned_id):
        logits = self.lm_head(hidden_states.to("cuda"))
        logits[MASK] = float("-inf")
        return logits
''', 7)
SGLANG_PENALTY = ("sglang/srt/sampling/penaltylib/frequency_penalty.py", '''import numpy as np
import torch


class FrequencyPenalizer:
    def apply(self, logits, output_ids, vocab_size):
        logits = logits.cuda()
        seen = np.bincount(output_ids, minlength=vocab_size)
        logits[MASK] -= 1.0
        return logits
''', 9)

CASES = {  # a mask the host holds, and look-alikes: the same mask on the device, a host receiver
    "vllm": (VLLM_BAD_WORDS, "token_ids_cpu == banned_id", "token_ids_cpu.cuda() == banned_id",
             ('''        logits = self.lm_head(hidden_states.to("cuda"))''', '''        logits = self.lm_head(hidden_states.to("cuda")).cpu()''')),
    "sglang": (SGLANG_PENALTY, "seen > 0", "torch.from_numpy(seen).cuda() > 0",
               ('''        logits = logits.cuda()''', '''        logits = logits.cpu()''')),
}


def _reported(review_added, style: str, mask: str, receiver: tuple[str, str] | None = None) -> bool:
    (path, text, line), *_ = CASES[style]
    text = text.replace("MASK", mask)
    if receiver is not None:
        text = text.replace(*receiver)
    findings = review_added({path: text})
    return any(f["rule"] == "boolean-mask-write-in-hot-path" and f["line"] == line for f in findings)


@pytest.mark.parametrize("style", sorted(CASES))
def test_a_write_through_a_host_mask_into_a_device_tensor_is_reported(review_added, style):
    assert _reported(review_added, style, CASES[style][1])


@pytest.mark.parametrize("style", sorted(CASES))
def test_a_number_written_through_a_device_mask_is_not(review_added, style):
    assert not _reported(review_added, style, CASES[style][2])


@pytest.mark.parametrize("style", sorted(CASES))
def test_a_write_through_a_host_mask_into_a_host_tensor_is_not(review_added, style):
    assert not _reported(review_added, style, CASES[style][1], CASES[style][3])


def test_a_receiver_the_function_does_not_place_is_not(review_added):
    (path, text, line), mask, *_ = CASES["sglang"]
    text = text.replace("        logits = logits.cuda()\n", "").replace("MASK", mask)
    assert not any(f["rule"] == "boolean-mask-write-in-hot-path" for f in review_added({path: text}))
