"""Rules about how code is written (``reports-on: new-code``: a state compared with strings,
a collaborator's container mutated from outside) report on the code a change adds. A full
scan of existing code holds their findings back, counts them on its summary line, and
shows them with ``--show-held-back`` or when the rule is selected by id; a baseline records
them either way. Defect rules (a host sync in per-step code) are reported by both. End to
end, no configuration, in two engines' styles."""

from __future__ import annotations

import json

import pytest

VLLM_STYLE = '''import torch


class Scheduler:
    def __init__(self):
        self.phase = "prefill"

    def schedule(self, request):
        if self.phase == "decode":
            return self.decode(request)
        return self.prefill(request)


class Sampler(torch.nn.Module):
    def forward(self, logits):
        count = logits.sum().item()
        return logits / count
'''

SGLANG_STYLE = '''from torch import nn


class DetokenizerWorker:
    def __init__(self):
        self._state = "starting"

    def start(self):
        self._state = "running"

    def poll(self):
        if self._state == "running":
            return self.step()
        return None


class LogitsProcessor(nn.Module):
    def forward(self, hidden):
        return hidden.max().item()
'''

# path, text, the design finding's line, the defect finding's line
CASES = {
    "vllm": ("vllm/v1/core/sched/scheduler.py", VLLM_STYLE, 9, 16),
    "sglang": ("sglang/srt/managers/detokenizer.py", SGLANG_STYLE, 12, 19),
}
DESIGN_RULE = "string-state-comparison"


def _rules_at(run, path: str) -> set[tuple[int, str]]:
    return {(f["line"], f["rule"]) for f in run.json()["findings"] if f["path"] == path}


@pytest.mark.parametrize("style", sorted(CASES))
def test_a_full_scan_holds_back_rules_about_new_code(repo, cli, style):
    path, text, design, defect = CASES[style]
    repo.write(path, text)
    repo.commit("engine")
    held = cli("review", path, "--format", "json", "--no-cache", cwd=repo.path)
    assert _rules_at(held, path) == {(defect, "host-sync-in-hot-path")}, held.json()["findings"]
    assert held.json()["summary"]["new_code_rules"] == 1
    shown = cli("review", path, "--format", "json", "--no-cache", "--show-held-back", cwd=repo.path)
    assert _rules_at(shown, path) == {(defect, "host-sync-in-hot-path"), (design, DESIGN_RULE)}
    assert shown.json()["summary"]["new_code_rules"] == 0
    text_run = cli("review", path, "--no-cache", "-q", cwd=repo.path)
    assert "1 held back: rules reported on new code only (--show-held-back)" in text_run.out


@pytest.mark.parametrize("style", sorted(CASES))
def test_selecting_the_rule_by_id_reports_it_in_a_full_scan(repo, cli, style):
    path, text, design, _ = CASES[style]
    repo.write(path, text)
    repo.commit("engine")
    named = cli("review", path, "--format", "json", "--no-cache", "--select", DESIGN_RULE, cwd=repo.path)
    assert _rules_at(named, path) == {(design, DESIGN_RULE)}
    by_area = cli("review", path, "--format", "json", "--no-cache", "--select", "interfaces", cwd=repo.path)
    assert _rules_at(by_area, path) == set() and by_area.json()["summary"]["new_code_rules"] == 1


@pytest.mark.parametrize("style", sorted(CASES))
def test_a_diff_review_reports_them_on_the_code_it_adds(repo, cli, style):
    path, text, design, defect = CASES[style]
    repo.write("README.md", "engine\n")
    repo.commit("base")
    repo.write(path, text)
    run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    assert _rules_at(run, path) == {(defect, "host-sync-in-hot-path"), (design, DESIGN_RULE)}
    assert run.json()["summary"]["new_code_rules"] == 0


def test_a_baseline_records_them_for_either_view(repo, cli):
    path, text, _, _ = CASES["vllm"]
    repo.write(path, text)
    repo.commit("engine")
    cli("baseline", "--no-cache", cwd=repo.path)
    with open(repo.path / ".rltrefactor-baseline.json", encoding="utf-8") as handle:
        recorded = {entry["rule"] for entry in json.load(handle)["entries"]}
    assert recorded == {"host-sync-in-hot-path", DESIGN_RULE}
    run = cli("review", path, "--format", "json", "--no-cache", "--show-held-back",
              "--baseline", ".rltrefactor-baseline.json", cwd=repo.path)
    assert run.json()["findings"] == [] and run.json()["baseline"]["stale"] == []


def test_the_markdown_summary_counts_them(repo, cli):
    path, text, _, _ = CASES["sglang"]
    repo.write(path, text)
    repo.commit("engine")
    run = cli("review", path, "--format", "markdown", "--no-cache", cwd=repo.path)
    assert "1 finding held back: rules reported on new code only (`--show-held-back`)" in run.out


# Per-step allocations, uploads and scalar reads on existing code were, judged on
# whole-engine scans, mostly the engine's own choices: a full scan holds them back, and
# a change that adds one is told. The host read beside them is reported by both.
ALLOCATING = {
    "vllm": ("vllm/v1/worker/gpu_input_batch.py", '''import torch


class InputBatch(torch.nn.Module):
    def forward(self, token_ids, positions):
        ids = torch.tensor(token_ids, device="cuda")
        for layer in self.layers:
            scratch = torch.zeros(len(token_ids), device=positions.device)
            ids = layer(ids, scratch)
        total = int(positions.sum())
        count = positions.max().item()
        return ids[:total] / count
'''),
    "sglang": ("sglang/srt/layers/sampler.py", '''from torch import nn
import torch


class Sampler(nn.Module):
    def forward(self, logits, seq_lens):
        lens = torch.tensor(seq_lens, device=logits.device)
        for depth in range(self.num_loops):
            workspace = torch.empty(logits.shape, device=logits.device)
            logits = self.step(logits, workspace, depth)
        width = float(lens.max())
        return logits / width, logits.argmax(-1).tolist()
'''),
}
HELD_DEFECT_RULES = {"host-to-device-copy-per-call", "device-allocation-per-step", "device-scalar-read-in-hot-path"}


@pytest.mark.parametrize("style", sorted(ALLOCATING))
def test_per_step_allocations_uploads_and_scalar_reads_are_raised_on_new_code(repo, cli, style):
    path, text = ALLOCATING[style]
    repo.write("README.md", "engine\n")
    repo.commit("base")
    repo.write(path, text)
    added = {rule for _, rule in _rules_at(cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path), path)}
    assert HELD_DEFECT_RULES <= added and "host-sync-in-hot-path" in added
    repo.commit("engine")
    scan = cli("review", path, "--format", "json", "--no-cache", cwd=repo.path)
    assert {rule for _, rule in _rules_at(scan, path)} == {"host-sync-in-hot-path"}
    assert scan.json()["summary"]["new_code_rules"] == len(added) - 1
