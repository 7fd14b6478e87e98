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
