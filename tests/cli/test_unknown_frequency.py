"""A full scan holds back findings about per-step code in functions nothing is seen running
(``execution == "unknown"``), says how many on its summary line, and shows them with
``--show-unknown-frequency``; a diff review, whose reader wrote the code, always shows
them. A baseline records them either way. End to end, no configuration, in two engines'
styles."""

from __future__ import annotations

import json

import pytest


# A model's forward runs per step (protocol model); the helper beside it is called by nothing.
VLLM_STYLE = '''import torch


class Sampler(torch.nn.Module):
    def forward(self, logits):
        count = logits.sum().item()
        return logits / count


def summarize_run(stats):
    return stats.mean().item()
'''

SGLANG_STYLE = '''import torch
from torch import nn


class LogitsProcessor(nn.Module):
    def forward(self, hidden):
        return hidden.max().item()


def scaled_peak(logits):
    return logits.abs().max().item()
'''

CASES = {
    "vllm": ("vllm/v1/sample/sampler.py", VLLM_STYLE, 6, 11),
    "sglang": ("sglang/srt/layers/logits.py", SGLANG_STYLE, 7, 11),
}


def _lines(run, path: str) -> set[int]:
    return {f["line"] for f in run.json()["findings"] if f["path"] == path}


@pytest.mark.parametrize("style", sorted(CASES))
def test_a_full_scan_holds_back_what_it_cannot_see_run(repo, cli, style):
    path, text, per_step, unseen = CASES[style]
    repo.write(path, text)
    repo.commit("engine")
    held = cli("review", path, "--format", "json", "--no-cache", cwd=repo.path)
    assert _lines(held, path) == {per_step}, held.json()["findings"]
    assert held.json()["summary"]["unknown_frequency"] == 1
    shown = cli("review", path, "--format", "json", "--no-cache", "--show-unknown-frequency", cwd=repo.path)
    assert _lines(shown, path) == {per_step, unseen}
    assert shown.json()["summary"]["unknown_frequency"] == 0
    text_run = cli("review", path, "--no-cache", "-q", cwd=repo.path)
    assert "1 held back: per-step claims in code nothing is seen running (--show-unknown-frequency)" in text_run.out


@pytest.mark.parametrize("style", sorted(CASES))
def test_a_diff_review_shows_them(repo, cli, style):
    path, text, per_step, unseen = CASES[style]
    repo.write("README.md", "engine\n")
    repo.commit("base")
    repo.write(path, text)
    run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    assert _lines(run, path) == {per_step, unseen}
    assert run.json()["summary"]["unknown_frequency"] == 0


def test_a_baseline_records_them_for_either_view(repo, cli):
    path, text, per_step, unseen = CASES["vllm"]
    repo.write(path, text)
    repo.commit("engine")
    cli("baseline", "--no-cache", cwd=repo.path)
    with open(repo.path / ".rltrefactor-baseline.json", encoding="utf-8") as handle:
        recorded = json.load(handle)["entries"]
    assert len(recorded) == 2
    run = cli("review", path, "--format", "json", "--no-cache", "--show-unknown-frequency",
              "--baseline", ".rltrefactor-baseline.json", cwd=repo.path)
    assert run.json()["findings"] == [] and run.json()["baseline"]["stale"] == []
