"""A branch taken only when the function's tensors are in host memory (``if
tokens.is_cpu:``, or through a flag, ``use_cpu = tokens.device.type == "cpu"``) is the
function's host path: a read there, of the tested tensor or of another, waits for no device
and is not reported. The same read under a flag that says nothing of where the tensors
are stays reported. End to end through ``review --diff``, no configuration, in two
engines' styles."""

from __future__ import annotations

import pytest

# DeepSpeed's expert-parallel style: the pure-PyTorch permutation for host tokens.
DEEPSPEED_PERMUTE = ("deepspeed/module_inject/ep_permute.py", '''import torch


class ExpertPermute(torch.nn.Module):
    def forward(self, tokens, local_counts, use_fused):
        use_cpu = TEST
        counts = local_counts.cpu() if use_cpu else local_counts
        if use_cpu:
            longest = int(local_counts.max().item())
            return tokens[:longest], counts
        return tokens, counts
''', (7, 9))

# SGLang's multimodal hashing style: the incremental host hash for CPU tensors, the flag
# an operand of ``and``.
SGLANG_HASH = ("sglang/srt/managers/media_hash.py", '''import hashlib

import torch


class MediaHasher(torch.nn.Module):
    def forward(self, tensor, lengths, use_fused):
        cpu_path = TEST
        if cpu_path and lengths is not None:
            total = int(lengths.sum().item())
            data = tensor[:total].contiguous()
            return hashlib.sha256(data.numpy().tobytes()).digest()
        return tensor.sum()
''', (10,))


@pytest.mark.parametrize("case", [DEEPSPEED_PERMUTE, SGLANG_HASH], ids=["deepspeed-flag", "sglang-test"])
@pytest.mark.parametrize(("test", "reported"), [("HOST", False), ("OTHER", True)], ids=["host-test", "other-flag"])
def test_a_read_on_the_host_path_waits_for_no_device(review_added, case, test, reported):
    path, text, lines = case
    host = 'tokens.device.type == "cpu"' if "tokens" in text else 'tensor.device.type == "cpu"'
    findings = review_added({path: text.replace("TEST", host if test == "HOST" else "use_fused")})
    found = {line for f in findings if f["rule"] in ("host-sync-in-hot-path", "device-scalar-read-in-hot-path")
             for line in (f["line"], *f.get("also_at", []))}
    assert all((line in found) is reported for line in lines), findings
