"""A host read after the host has already waited for the device, earlier in the same
function (``copy_done.synchronize()``, ``torch.cuda.synchronize()``), of a value that
existed before the wait, adds no wait of its own: it is not reported. The same read is
reported when the wait sits under a flag that says nothing of what is waited on, when the
read's value is made by a call after the wait or computed by the read itself
(``x.sum().item()``), and when a loop around the read makes it again. End to end through
``review --diff``, no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

# SGLang's result processing: the step's copies are waited on, then read.
SGLANG_RESULTS = ("sglang/srt/managers/result_reader.py", '''import torch
from torch import nn


class ResultReader(nn.Module):
    def forward(self, batch, result):
        WAIT
        next_token_ids, logits = result.next_token_ids, result.logits
        ids = next_token_ids.tolist()
        return ids, logits
''', ".tolist()")

# vLLM's asynchronous output: the copy stream's event is waited on, then the host buffer read.
VLLM_OUTPUT = ("vllm/v1/worker/async_output.py", '''import torch
from torch import nn


class AsyncOutput(nn.Module):
    def forward(self, scheduler_output):
        WAIT
        valid = self.sampled_token_ids.tolist()
        return valid
''', ".tolist()")

WAITS = {
    "sglang": "if result.copy_done is not None:\n            result.copy_done.synchronize()",
    "vllm": "self.copy_event.synchronize()",
}
# A wait under a flag that does not test what is waited on: a debug trace.
DEBUG_WAITS = {
    "sglang": "if self.trace_sync:\n            torch.cuda.synchronize()",
    "vllm": "if self.trace_sync:\n            self.copy_event.synchronize()",
}
CASES = {"sglang": SGLANG_RESULTS, "vllm": VLLM_OUTPUT}


def _line_of(text: str, read: str) -> int:
    return next(number for number, line in enumerate(text.split("\n"), 1) if read in line)


def _sync_lines(findings: list[dict]) -> set[int]:
    return {line for f in findings if f["rule"] == "host-sync-in-hot-path" for line in (f["line"], *f.get("also_at", []))}


@pytest.mark.parametrize(("waits", "reported"), [(WAITS, False), (DEBUG_WAITS, True), ({}, True)],
                         ids=["waited", "debug-flag", "no-wait"])
@pytest.mark.parametrize("style", sorted(CASES))
def test_a_read_after_the_host_waited_is_not_reported(review_added, style, waits, reported):
    path, text, read = CASES[style]
    written = text.replace("WAIT", waits.get(style, "pass"))
    assert (_line_of(written, read) in _sync_lines(review_added({path: written}))) is reported


# What the read reads, made by a call after the wait: the device may still be making it.
# (text replaced, its replacement, the read reported).
REMADE = {
    "sglang": ("next_token_ids, logits = result.next_token_ids, result.logits",
               "next_token_ids, logits = self.sample(result.logits), result.logits", ".tolist()"),
    "vllm": ("valid = self.sampled_token_ids.tolist()",
             "sampled = self.sampler(scheduler_output)\n        valid = sampled.tolist()", ".tolist()"),
}
# The read computes first: the reduction runs after the wait, and the read waits for it.
COMPUTED = {
    "sglang": ("ids = next_token_ids.tolist()", "ids = next_token_ids.max().item()", ".item()"),
    "vllm": ("valid = self.sampled_token_ids.tolist()", "valid = self.sampled_token_ids.sum().item()", ".item()"),
}


@pytest.mark.parametrize("style", sorted(CASES))
@pytest.mark.parametrize("changes", [REMADE, COMPUTED], ids=["made-after", "computed-by-the-read"])
def test_a_value_made_after_the_wait_is_still_waited_for(review_added, style, changes):
    path, text, _ = CASES[style]
    old, new, read = changes[style]
    remade = text.replace("WAIT", WAITS[style]).replace(old, new)
    assert _line_of(remade, read) in _sync_lines(review_added({path: remade}))


LOOP = ("sglang/srt/layers/loop_reader.py", '''import torch
from torch import nn


class LoopReader(nn.Module):
    def forward(self, x, steps):
        torch.cuda.synchronize()
        for _ in range(steps):
            total = x.tolist()
            BODY
        return total
''')


@pytest.mark.parametrize(("body", "reported"), [("x = self.model(x)", True), ("self.count += 1", False)],
                         ids=["remade-in-loop", "kept-in-loop"])
def test_a_loop_that_remakes_the_value_waits_again(review_added, body, reported):
    path, text = LOOP
    findings = review_added({path: text.replace("BODY", body)})
    assert (9 in _sync_lines(findings)) is reported, findings
