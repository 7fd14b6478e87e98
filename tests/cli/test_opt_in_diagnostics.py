"""A wait for the device under an opt-in diagnostic (timing, profiling, a sanity check) is
what that diagnostic measures: per-step rules leave it. The same wait where the diagnostic
is off (``not``, ``is None``) runs in every ordinary step and stays reported. Reviewed end
to end with no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

ENCODER_RUNNER = '''import time

import torch


class EncoderRunner:
    def __init__(self, enable_timing: bool):
        self.enable_timing = enable_timing

    def execute_model(self, batch):
        start = time.perf_counter()
        out = batch * 2
        if {test}:
            torch.cuda.synchronize()
        return out, start
'''

TRAINING_ENGINE = '''import torch


class DeepSpeedEngine:
    def __init__(self, model_profile_enabled, profiler):
        self.model_profile_enabled = model_profile_enabled
        self.profiler = profiler

    def step(self, loss):
        loss.backward()
        if {test}:
            torch.cuda.synchronize()
        return loss
'''


@pytest.mark.parametrize(("path", "template", "test", "line"), [
    ("worker/encoder_runner.py", ENCODER_RUNNER, "self.enable_timing", 14),
    ("runtime/engine.py", TRAINING_ENGINE, "self.model_profile_enabled", 12),
    ("runtime/engine.py", TRAINING_ENGINE, "self.profiler is not None", 12),
], ids=["timing", "profile-flag", "profiler-attached"])
def test_a_sync_under_an_opt_in_diagnostic_is_left_alone(review_new_file, path, template, test, line):
    assert line not in review_new_file(path, template.replace("{test}", test))


@pytest.mark.parametrize(("path", "template", "test", "line"), [
    ("worker/encoder_runner.py", ENCODER_RUNNER, "not self.enable_timing", 14),
    ("runtime/engine.py", TRAINING_ENGINE, "self.profiler is None", 12),
    ("runtime/engine.py", TRAINING_ENGINE, "loss.numel() > 1", 12),
], ids=["timing-off", "no-profiler", "ordinary-test"])
def test_the_same_sync_where_the_diagnostic_is_off_is_reported(review_new_file, path, template, test, line):
    assert review_new_file(path, template.replace("{test}", test)).get(line) == "device-synchronize-in-hot-path"


# SGLang's speculative metrics probe: leaves at once unless a debug flag is set, then
# reads the device; a helper it calls reads too.
SPEC_PROBE = '''import torch
from torch import nn


def acceptance_table(accepted):
    return accepted.float().mean().item()


class ConfidenceProbe(nn.Module):
    def forward(self, accepted, envs):
        if {exit}:
            return accepted
        rate = accepted.sum().item()
        print(rate, acceptance_table(accepted))
        return accepted
'''

# vLLM's KV-cache metrics: the same shape with a stats flag on the instance.
KV_METRICS = '''import torch
from torch import nn


def usage_of(blocks):
    return int(blocks.count_nonzero().item())


class KVCacheMetrics(nn.Module):
    def __init__(self, debug_kv_stats):
        super().__init__()
        self.debug_kv_stats = debug_kv_stats

    def forward(self, blocks):
        if {exit}:
            return blocks
        free = blocks.numel() - int(blocks.sum().item())
        print(free, usage_of(blocks))
        return blocks
'''


@pytest.mark.parametrize(("path", "template", "exit", "lines", "reported"), [
    ("sglang/srt/speculative/confidence_probe.py", SPEC_PROBE, "not envs.SGLANG_DEBUG_CONFIDENCE_METRICS", (6, 13), False),
    ("sglang/srt/speculative/confidence_probe.py", SPEC_PROBE, "not envs.SGLANG_ENABLE_CONFIDENCE", (6, 13), True),
    ("vllm/v1/core/kv_metrics.py", KV_METRICS, "not self.debug_kv_stats", (6, 17), False),
    ("vllm/v1/core/kv_metrics.py", KV_METRICS, "blocks.numel() == 0", (6, 17), True),
], ids=["sglang-debug-off-returns", "sglang-feature-off-returns", "vllm-debug-off-returns", "vllm-empty-returns"])
def test_code_after_a_return_while_a_diagnostic_is_off_runs_only_with_it_on(
        repo, cli, path, template, exit, lines, reported):
    # A full scan: the helper's frequency comes from its one call, after the return.
    repo.write(path, template.replace("{exit}", exit))
    repo.commit("engine")
    run = cli("review", path, "--format", "json", "--no-cache", cwd=repo.path)
    assert run.code in (0, 1), run.err
    shown = {f["line"] for f in run.json()["findings"]}
    assert all((line in shown) is reported for line in lines), run.json()["findings"]
