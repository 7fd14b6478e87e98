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


# vLLM's data-parallel sync style: the reads sit in private helpers that the caller runs
# inside the allowing block, chosen by a conditional expression where the tensor may be on
# the host (Gloo) instead.
VLLM_DP_SYNC = '''import torch
from contextlib import nullcontext
from torch import nn

from vllm.utils.gpu_sync_debug import gpu_sync_allowed


def HELPER(tensor):
    return int(tensor[3, :].min().item())
INTERMEDIATE

class DPSyncNAME(nn.Module):
    def forward(self, tensor, gloo):
        with CONTEXT:
            mode = CALLED(tensor)
        OUTSIDE
        return tensor, mode
'''


def _dp_sync(name: str, context: str, *, helper: str = "", called: str = "", outside: str = "") -> str:
    helper = helper or f"_min_mode_{name}"
    intermediate = f"\n\ndef {called}(tensor):\n    return HELPER(tensor)\n" if called else ""
    text = VLLM_DP_SYNC.replace("INTERMEDIATE", intermediate)
    text = text.replace("HELPER", helper).replace("CALLED", called or helper).replace("CONTEXT", context)
    return text.replace("OUTSIDE", outside.replace("HELPER", helper)).replace("NAME", name)


def test_a_helper_run_only_inside_an_allowing_block_is_acknowledged(review_added):
    variants = {
        "allowed": (_dp_sync("a", "gpu_sync_allowed()"), False),
        "chosen-by-a-conditional": (_dp_sync("b", "(nullcontext() if gloo else gpu_sync_allowed())"), False),
        "through-a-private-caller": (_dp_sync("c", "gpu_sync_allowed()", called="_post_process_c"), False),
        "look-alike-block": (_dp_sync("d", "torch.no_grad()"), True),
        "also-called-outside": (_dp_sync("e", "gpu_sync_allowed()", outside="mode += HELPER(tensor)"), True),
        "public-helper": (_dp_sync("f", "gpu_sync_allowed()", helper="min_mode_f"), True),  # callers elsewhere may not allow it
    }
    paths = {name: f"vllm/v1/worker/dp_utils_{i}.py" for i, name in enumerate(variants)}
    found = review_added({paths[name]: text for name, (text, _) in variants.items()})
    reported = {f["path"] for f in found if f["rule"] == "host-sync-in-hot-path" and f["line"] == 9}
    assert {name: paths[name] in reported for name in variants} == {name: r for name, (_, r) in variants.items()}, found


SGLANG_SCHEDULER = '''import torch
from torch import nn

from sglang.srt.utils import allow_host_sync


def _longest(lengths):
    return lengths.max().item()


class LogitsProcessor(nn.Module):
    def forward(self, hidden, lengths):
        with allow_host_sync("sampling needs the lengths"):
            longest = _longest(lengths)
        return hidden[:, :longest]
'''


@pytest.mark.parametrize(("configured", "reported"), [
    ('[tool.rltrefactor.names]\nextend-sync-allowing-contexts = ["allow_host_sync"]\n', False),
    ("", True),
], ids=["named-by-the-project", "unnamed"])
def test_a_helper_of_a_project_named_block_is_acknowledged(review_added, configured, reported):
    base = {"README.md": "engine\n", **({"pyproject.toml": configured} if configured else {})}
    found = review_added({"sglang/srt/layers/logits_processor.py": SGLANG_SCHEDULER}, base)
    assert any(f["line"] == 8 and f["rule"] == "host-sync-in-hot-path" for f in found) is reported, found
