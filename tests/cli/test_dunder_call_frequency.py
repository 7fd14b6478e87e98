"""A ``__call__`` no protocol model holds runs as often as its instances are called: per
step where every instance is kept in a ``self`` attribute and a per-step function calls
one, unknown anywhere else (a name is no evidence: processors, samplers and losses all
define it). Full scans, end to end with no configuration, in two engines' styles."""

from __future__ import annotations

import pytest


# vLLM style: a sampler helper kept by the model (and read elsewhere too), beside a
# multimodal processor that the serving layer calls once per request (from outside this
# repository).
VLLM_STYLE = '''import torch


class TopKTopPSampler:
    def __call__(self, logits):
        return self._threshold(logits)

    def _threshold(self, logits):
        return logits.max().item()


class AudioProcessor:
    def __call__(self, audio):
        return audio.sum().item()


class Sampler(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.topk_topp_sampler = TopKTopPSampler()

    def forward(self, logits):
        return self.topk_topp_sampler(logits)


def warm_up(runner):
    # The instance is also read through another object: it is not the only use, and the
    # call in ``forward`` still runs it per step.
    return runner.topk_topp_sampler
'''

# SGLang style: the helper kept in a list of the model, the processor built in a function.
SGLANG_STYLE = '''from torch import nn


class Penalizer:
    def __call__(self, logits):
        return logits.min().item()


class ImageProcessor:
    def __call__(self, pixels):
        return pixels.mean().item()


def process_request(pixels):
    return ImageProcessor()(pixels)


class LogitsProcessor(nn.Module):
    def __init__(self):
        super().__init__()
        self.penalizers = [Penalizer()]

    def forward(self, logits):
        for penalizer in self.penalizers:
            logits = penalizer(logits)
        return logits
'''

CASES = {
    "vllm": ("vllm/v1/sample/sampler.py", VLLM_STYLE, 9, 14),  # per step through the method it calls
    "sglang": ("sglang/srt/sampling/penalizers.py", SGLANG_STYLE, 6, 11),
}


@pytest.mark.parametrize("style", sorted(CASES))
def test_a_dunder_call_runs_as_often_as_its_instances_are_called(repo, cli, style):
    path, text, per_step, unseen = CASES[style]
    repo.write(path, text)
    repo.commit("engine")
    run = cli("review", path, "--format", "json", "--no-cache", "--show-unknown-frequency", cwd=repo.path)
    contexts = {f["line"]: f["execution"]["context"] for f in run.json()["findings"]}
    assert contexts == {per_step: "per-step", unseen: "unknown"}, run.json()["findings"]
    held = cli("review", path, "--format", "json", "--no-cache", cwd=repo.path)
    assert [f["line"] for f in held.json()["findings"]] == [per_step]


def test_a_project_that_names_dunder_call_per_step_gets_it_back(repo, cli):
    path, text, per_step, unseen = CASES["sglang"]
    repo.write(path, text)
    repo.write("pyproject.toml", '[tool.rltrefactor.names]\nextend-per-step-functions = ["__call__"]\n')
    repo.commit("engine")
    run = cli("review", path, "--format", "json", "--no-cache", cwd=repo.path)
    contexts = {f["line"]: f["execution"]["context"] for f in run.json()["findings"]}
    assert contexts == {per_step: "per-step", unseen: "per-step"}, run.json()["findings"]
