"""A call of a logger's method (``logger.debug(...)``, ``logger.info(...)``) runs the
logging library, not a method of the same name a class of the repository happens to
define: a kernel's ``debug`` or ``info`` accessor that reads device state back stays off
the per-step path a model's ``forward`` logging a line would otherwise give it. A call of
the accessor through a typed receiver still runs it. End to end, a full scan with no
configuration, in two engines' styles."""

from __future__ import annotations

import pytest

KERNEL = '''import torch
from torch import nn


class MonoKernel(nn.Module):
    def __init__(self, slots):
        super().__init__()
        self.epochs = torch.zeros(slots, dtype=torch.int64, device="cuda")

    def debug(self):
        return {"epochs": self.epochs.tolist()}
'''

VLLM_FILES = {
    "vllm/models/mono/kernel.py": KERNEL,
    "vllm/v1/attention/backends/flash_attn.py": '''from vllm.logger import init_logger

logger = init_logger(__name__)


class FlashAttentionImpl:
    def forward(self, layer, query, key, value, kv_cache, attn_metadata):
        logger.debug("flash attention over %d tokens", query.shape[0])
        return query
''',
}

SGLANG_FILES = {
    "sglang/srt/layers/mono/kernel.py": KERNEL.replace("def debug(self)", "def info(self)"),
    "sglang/srt/layers/attention/base_attn_backend.py": '''class AttentionBackend:
    def forward_decode(self, q, k, v, layer, forward_batch, save_kv_cache=True):
        raise NotImplementedError
''',
    "sglang/srt/layers/attention/triton_backend.py": '''import logging

from sglang.srt.layers.attention.base_attn_backend import AttentionBackend

logger = logging.getLogger(__name__)


class TritonAttnBackend(AttentionBackend):
    def forward_decode(self, q, k, v, layer, forward_batch, save_kv_cache=True):
        logger.info("triton decode of %d tokens", q.shape[0])
        return q
''',
}

CASES = {"vllm": (VLLM_FILES, "vllm/models/mono/kernel.py"), "sglang": (SGLANG_FILES, "sglang/srt/layers/mono/kernel.py")}
TYPED_CALL = {  # the accessor called from the per-step function through a receiver of its class
    "vllm": ('''        logger.debug("flash attention over %d tokens", query.shape[0])''',
             '''        logger.debug("epochs %s", layer.kernel.debug())'''),
    "sglang": ('''        logger.info("triton decode of %d tokens", q.shape[0])''',
               '''        logger.info("epochs %s", layer.kernel.info())'''),
}


def _shown(repo, cli, files: dict[str, str], path: str) -> dict[int, dict]:
    for name, text in files.items():
        repo.write(name, text)
    repo.commit("engine")
    scan = cli("review", path, "--format", "json", "--no-cache", "--show-unknown-frequency", cwd=repo.path)
    assert scan.code in (0, 1), scan.err
    return {f["line"]: f for f in scan.json()["findings"] if f["path"] == path}


@pytest.mark.parametrize("style", sorted(CASES))
def test_a_loggers_call_gives_no_step_to_a_method_of_the_same_name(repo, cli, style):
    files, path = CASES[style]
    found = _shown(repo, cli, files, path)
    assert 11 not in found or not found[11]["evidence"].startswith("Per-step code:"), found


@pytest.mark.parametrize("style", sorted(CASES))
def test_the_accessor_called_through_a_receiver_of_its_class_runs_per_step(repo, cli, style):
    files, path = CASES[style]
    caller = next(name for name in files if name.endswith(("flash_attn.py", "triton_backend.py")))
    old, new = TYPED_CALL[style]
    layer_class = f'''

class KernelLayer:
    def __init__(self, slots):
        self.kernel = MonoKernel(slots)
'''
    files = dict(files, **{caller: files[caller].replace(old, new).replace("\n\nlogger =", f"\nfrom {path[:-3].replace('/', '.')} import MonoKernel\n\nlogger =") + layer_class})
    files[caller] = files[caller].replace("def forward(self, layer,", "def forward(self, layer: KernelLayer,").replace(
        "def forward_decode(self, q, k, v, layer,", "def forward_decode(self, q, k, v, layer: KernelLayer,")
    found = _shown(repo, cli, files, path)
    assert found[11]["evidence"].startswith("Per-step code:"), found
