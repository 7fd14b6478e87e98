"""Warm-up code behind a flag runs once per instance: after ``if self._warmed_up: return``
where the function itself then sets ``self._warmed_up = True``, and in a callee that is
called only inside a guard its own body closes (``if not self._warmed and ...:
self._warmed = True; warm(...)``). Its syncs and copies are not per step. A flag set only
in a branch, a guard whose body leaves the flag alone, and a flag set back to False keep
the code per step. End to end through ``review --diff``, no configuration, in two
engines' styles."""

from __future__ import annotations

import pytest

# vLLM's ROCm attention backends: a Triton warm-up on the first decode call.
VLLM_STYLE = '''import torch


def warmup_decode_attention(q, kv):
    scale = torch.tensor(1.0, device=q.device)
    return scale


def decode_attention(q, kv):
    scale = torch.tensor(1.0, device=q.device)
    return q * scale


class AiterMLAImpl(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self._warmed_up = False
        self._prefill_warmed_up = False
        self._use_triton = True

    def forward(self, q, kv):
        if not self._warmed_up and not torch.cuda.is_current_stream_capturing():
            self._warmed_up = True
            warmup_decode_attention(q, kv)
        if self._use_triton:
            decode_attention(q, kv)
        self._warm_prefill(q)
        return q

    def _warm_prefill(self, q):
        if self._prefill_warmed_up:
            return
        self._prefill_warmed_up = True
        lens = torch.tensor([64, 128]).to(q.device)
        return lens
'''

# SGLang's speculative workers: a one-time graph warm-up, and a stop flag set when done.
SGLANG_STYLE = '''import torch
from torch import nn


def capture_once(hidden):
    return torch.tensor([0, 1], device=hidden.device)


def verify_tokens(hidden):
    return torch.tensor([0, 1], device=hidden.device)


class EagleDraftWorker(nn.Module):
    def __init__(self):
        super().__init__()
        self._graph_ready = False
        self._finished = False
        self._primed = False

    def forward(self, hidden):
        if self._graph_ready is None or not self._graph_ready:
            verify_tokens(hidden)
        if not self._primed:
            self._primed = True
            capture_once(hidden)
        self.drain(hidden)
        self.reset(hidden)
        return hidden

    def drain(self, hidden):
        if self._finished:
            return
        pending = hidden.nonzero().cpu()
        if pending.numel() == 0:
            self._finished = True
        return pending

    def reset(self, hidden):
        if getattr(self, "_reset_done", False):
            return
        self._reset_done = False
        return hidden.sum().item()
'''

CASES = {
    # path, text, lines that must be reported, lines that must not
    "vllm": ("vllm/v1/attention/backends/mla/rocm_aiter_mla.py", VLLM_STYLE, {10}, {5, 34}),
    "sglang": ("sglang/srt/speculative/eagle_worker.py", SGLANG_STYLE, {10, 33, 42}, {6}),
}


@pytest.mark.parametrize("style", sorted(CASES))
def test_warm_up_behind_a_flag_is_not_per_step_and_look_alikes_are(repo, cli, style):
    path, text, reported, left_alone = CASES[style]
    repo.write("README.md", "engine\n")
    repo.commit("base")
    repo.write(path, text)
    run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    assert run.code in (0, 1), run.err
    lines = {line for f in run.json()["findings"] if f["path"] == path for line in (f["line"], *f.get("also_at", []))}
    assert reported <= lines, run.json()["findings"]
    assert not (left_alone & lines), run.json()["findings"]


# A first step's set-up: ``if not self.x:`` however nested, with the function's own body
# setting ``self.x = True`` after the statement that holds it (DeepSpeed's fused
# optimizer), against the same flag set only on one branch (a vLLM-style runner).
DEEPSPEED_FIRST_STEP = ("deepspeed/runtime/fp16/fused_optimizer.py", '''import torch


class FP16_Optimizer:
    def step(self, closure=None):
        for group in self.groups:
            if not self.has_executed_step:
                mask = torch.tensor(group.indices, device=self.device)
                self.masks.append(mask)
        self.has_executed_step = True
''', 8)
VLLM_BRANCH_SET = ("vllm/v1/worker/gpu/runner.py", '''import torch


class Runner:
    def execute_model(self, batch):
        for group in batch.groups:
            if not self.initialized_metadata:
                ids = torch.tensor(group.indices, device=self.device)
                self.ids.append(ids)
        if batch.is_complete:
            self.initialized_metadata = True
''', 8)


@pytest.mark.parametrize(("case", "reported"), [(DEEPSPEED_FIRST_STEP, False), (VLLM_BRANCH_SET, True)],
                         ids=["deepspeed-set-after", "vllm-set-in-a-branch"])
def test_a_first_calls_set_up_runs_once_where_the_function_then_sets_its_flag(review_added, case, reported):
    path, text, line = case
    findings = review_added({path: text}, {"pyproject.toml": '[tool.rltrefactor]\nhot-functions = ["step", "execute_model"]\n'})
    lines = {f["line"] for f in findings if f["path"] == path}
    assert (line in lines) is reported, findings


# A return on a cache hit before the call that fills the cache: what the call reaches runs
# once per instance, in another file too (the call index reads it), against the same
# shape storing the result somewhere the test never reads.
VLLM_CACHED_CONTEXT = ("vllm/models/kimi/kda_metadata.py", '''import torch

from vllm.models.kimi.recoverssm import CommitContext


class KDAMetadataBuilder(torch.nn.Module):
    def _get_context(self):
        context = self.commit_context
        if context is not None:
            return context
        context = CommitContext.create(self.layers, self.device)
        self.STORE = context
        return context

    def forward(self, batch):
        return self._get_context().apply(batch)
''')
SGLANG_CACHED_META = ("sglang/srt/layers/attention/dsv4_backend.py", '''import torch

from sglang.srt.layers.attention.recoverssm import CommitContext


class DSV4Backend(torch.nn.Module):
    def _graph_meta(self):
        if self.graph_meta is not None:
            return self.graph_meta
        meta = CommitContext.create(self.layers, self.device)
        self.STORE = meta
        return meta

    def forward(self, batch):
        return self._graph_meta().apply(batch)
''')
CREATOR = '''import torch


class CommitContext:
    @classmethod
    def create(cls, layers, device):
        strides = torch.tensor([layer.stride for layer in layers], device=device)
        return cls(strides)
'''


@pytest.mark.parametrize("case", [VLLM_CACHED_CONTEXT, SGLANG_CACHED_META], ids=["vllm-local-hit", "sglang-attribute-hit"])
@pytest.mark.parametrize(("store", "per_step"), [("STORE", False), ("last_built", True)], ids=["fills-the-cache", "stores-elsewhere"])
def test_what_a_cache_miss_calls_runs_once(review_added, case, store, per_step):
    path, text = case
    cache = "commit_context" if "commit_context" in text else "graph_meta"
    creator = path.rpartition("/")[0] + "/recoverssm.py"
    findings = review_added({path: text.replace("STORE", cache if store == "STORE" else store), creator: CREATOR})
    uploads = [f for f in findings if f["path"] == creator and f["line"] == 7
               and (f.get("execution") or {}).get("context") == "per-step"]
    assert bool(uploads) is per_step, findings
