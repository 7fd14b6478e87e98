"""A synchronization inside a block that allows it on purpose (vLLM's ``with
gpu_sync_allowed():``) is acknowledged, as with a suppression comment: the sync rules
leave it alone. The same read outside the block, in a nested function, or under a
look-alike context manager stays reported; a project names its own such blocks in the
configuration. End to end, in two engines' styles."""

from __future__ import annotations

import pytest

VLLM_BUILDER = '''import torch
from torch import nn

from vllm.utils.gpu_sync_debug import gpu_sync_allowed


class FlashAttentionImpl(nn.Module):
    def forward(self, query, seq_lens):
        with CONTEXT:
            max_seq_len = int(seq_lens.max().item())
        return query[:max_seq_len]
'''

VLLM_NESTED = '''import torch
from torch import nn

from vllm.utils.gpu_sync_debug import gpu_sync_allowed


class FlashAttentionImpl(nn.Module):
    def forward(self, query, seq_lens):
        with gpu_sync_allowed():
            def longest():
                return int(seq_lens.max().item())
        return query[:longest()]
'''

PATH = "vllm/v1/attention/backends/flash_attn.py"


@pytest.mark.parametrize(("context", "reported"), [
    ("gpu_sync_allowed()", False),
    ("gpu_sync_allowed(first_only=True)", False),
    ("torch.no_grad()", True),  # a block that allows nothing
], ids=["allowed", "allowed-first-only", "look-alike"])
def test_a_sync_in_a_block_that_allows_it_is_acknowledged(review_new_file, context, reported):
    found = review_new_file(PATH, VLLM_BUILDER.replace("CONTEXT", context))
    assert (10 in found) is reported, found


def test_a_function_defined_in_the_block_runs_outside_it(review_new_file):
    found = review_new_file(PATH, VLLM_NESTED)
    assert found.get(11) == "host-sync-in-hot-path", found


SGLANG_RUNNER = '''import torch
from torch import nn

from sglang.srt.utils import allow_host_sync


class LogitsProcessor(nn.Module):
    def forward(self, hidden, lengths):
        with allow_host_sync("sampling needs the lengths"):
            longest = lengths.max().item()
        return hidden[:, :longest]
'''


@pytest.mark.parametrize(("configured", "reported"), [
    ('[tool.rltrefactor.names]\nextend-sync-allowing-contexts = ["allow_host_sync"]\n', False),
    ("", True),
], ids=["named-by-the-project", "unnamed"])
def test_a_project_names_its_own_sync_allowing_blocks(repo, cli, configured, reported):
    path = "sglang/srt/layers/logits_processor.py"
    if configured:
        repo.write("pyproject.toml", configured)
    repo.write(path, "")
    repo.commit("base")
    repo.write(path, SGLANG_RUNNER)
    run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    assert run.code in (0, 1), run.err
    lines = {f["line"] for f in run.json()["findings"]}
    assert (10 in lines) is reported, run.json()["findings"]
