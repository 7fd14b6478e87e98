"""Implicit syncs: truth tests, numbers and output sizes read from device tensors, and the
tensor evidence behind them (what must be reported, and the look-alikes left alone)."""

from __future__ import annotations

import libcst as cst
import pytest

from rltrefactor.config import Config
from rltrefactor.matching.engine import Engine
from rltrefactor.matching.matchers.residency.tensor_values import is_device_tensor
from rltrefactor.matching.rule_index import load_rules

from .helpers import context


def lines(matcher_id: str, code: str) -> list[int]:
    """Lines the bundled rule of ``matcher_id`` reports, through the engine (which leaves
    out one-time, offline and message code for per-step rules)."""
    library, _ = load_rules()
    rule = next(r for r in library.rules if r.matcher is not None and r.matcher.python == matcher_id)
    outcome = Engine((rule,), Config(), frozenset({rule.id})).review_file("model_executor/m.py", code)
    assert not outcome.errors
    return sorted(finding.span.line for finding in outcome.findings)


EVIDENCE = """
import torch
import numpy as np
import torch.nn.functional as F

def step(self, ids: torch.LongTensor, mask: "Optional[torch.Tensor]", n: int, pos, cache, lens_cpu):
    offsets = torch.cumsum(ids, dim=0)
    probs = F.softmax(self.model(ids), dim=-1)
    values, order = torch.topk(probs, 4)
    first, second = self.pair()
    host = torch.tensor(self.lengths)
    on_dev = torch.tensor(self.lengths, device=self.device)
    moved = offsets.cpu()
    arr = np.asarray(self.lengths)
    total = 0
    total += offsets[0]
    for row in ids:
        pass
    cache.index_copy_(0, pos, probs)
    probe(offsets[-1], probs.argmax(-1), values, order, ids[0] == 2, mask, self.model(ids).isfinite(),
          on_dev, ~ids.bool(), total, pos,
          first, host[0], moved[0], arr[0], ids.shape[0], ids.numel(), len(ids), n, row, ids is None,
          ids.dtype == torch.long, offsets[-1].item(), int(offsets[-1]), torch.is_grad_enabled(), lens_cpu[0],
          self.buf, torch.numel(ids))
"""
DEVICE_TENSORS = 11  # the first eleven arguments of ``probe``


def _probe_args(code: str):
    ctx = context(code)
    call = next(c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "probe")
    return ctx, [arg.value for arg in call.args]


def test_tensor_evidence_comes_from_torch_calls_tensor_methods_annotations_and_index_use():
    ctx, args = _probe_args(EVIDENCE)
    found = [is_device_tensor(arg, ctx) for arg in args]
    assert found == [True] * DEVICE_TENSORS + [False] * (len(args) - DEVICE_TENSORS), [
        ctx.code(arg) for arg, hit in zip(args, found) if hit != (args.index(arg) < DEVICE_TENSORS)
    ]


def test_a_later_binding_and_a_binding_holding_the_use_do_not_count():
    code = (
        "import torch\n"
        "def f(x, n: int):\n"
        "    probe(n)\n"
        "    n = torch.cumsum(x, 0)\n"
        "    x = x[0]\n"
        "    probe(x)\n"
    )
    ctx = context(code)
    probes = [c.args[0].value for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "probe"]
    assert [is_device_tensor(p, ctx) for p in probes] == [False, False]


TRUTH = """
import torch

def train_step(self, batch, ids: torch.Tensor, n: int):
    loss = self.loss(batch)
    if not loss.isfinite():
        return None
    if ids[0] == self.eos and n > 0:
        n -= 1
    while torch.isin(ids, self.stops) or n:
        n -= 1
    flag = bool(ids[-1])
    nonzero = torch.is_nonzero(ids[0])
    kept = [t for t in batch.items if ids[t] > 0]
    return loss if loss.gt(0) else None
"""


def test_truth_tests_of_device_tensors_are_reported_once_per_branch():
    assert lines("device-tensor-truth-test", TRUTH) == [6, 8, 10, 12, 13, 14, 15]


LOOK_ALIKES = """
import torch

def train_step(self, batch, ids: torch.Tensor, mask, lens_cpu, n: int):
    if ids.shape[0] == 1 or ids.dim() > 2 or ids.numel() == 0 or len(ids) > 3:
        return None
    if mask is None or ids.dtype == torch.long or ids.device.type == "cuda" or ids.is_cuda:
        return None
    if ids.any() or ids.sum() > 0 or torch.equal(ids, ids):
        return None
    if lens_cpu[0] == 0 or self.buf[0] == 0 or mask:
        return None
    host = torch.tensor(batch.lengths)
    if host[0] > 3 or bool(host.eq(2)) or n:
        return None
    if ids.cpu()[0] == 1 or int(ids[0].item()) == 1:
        return None
    if logger.isEnabledFor(logging.DEBUG) and ids.isnan():
        return None
    if torch.is_grad_enabled():
        raise ValueError(f"{bool(ids[0])}")

def copy_blocks(src_caches: dict[str, torch.Tensor], dst: "list[torch.Tensor]", ids: list[int]):
    if not src_caches or not dst or not ids:
        return None
"""


def test_shapes_types_none_tests_reductions_host_values_and_cold_code_stay_quiet():
    assert lines("device-tensor-truth-test", LOOK_ALIKES) == []


NUMBERS = """
import torch

def forward(x, counts: torch.Tensor, n: int, lens_cpu):
    offsets = torch.cumsum(counts, dim=0)
    tail = x.shape[0] - int(offsets[-1])
    share = float(counts[0] / 2)
    head = x[: offsets[-1]]
    step = x[::counts[0]]
    for i in range(offsets[0], n):
        pass
    return tail, share, head, step

def update(prev, cur, dim, idx):
    prev[:, :, :idx].copy_(cur)
    return prev.index_copy_(dim, idx - 1, cur)
"""


def test_numbers_read_from_device_tensors_are_reported():
    assert lines("device-tensor-as-number", NUMBERS) == [6, 7, 8, 9, 10, 15]


NUMBER_LOOK_ALIKES = """
import torch

def forward(x, counts: torch.Tensor, n: int, lens_cpu, idx):
    offsets = torch.cumsum(counts, dim=0)
    total = int(offsets.sum()) + float(counts.max() > 1)
    kept = x[: x.shape[0] - 1] + x[: len(counts)] + x[: int(n)] + x[: lens_cpu[0]]
    host = torch.tensor(lens_cpu)
    for i in range(host[0]):
        pass
    k = int(offsets[-1].item())
    return x[:idx], total, kept, k

def update(prev, cur, dim, idx):
    prev[:, :idx].copy_(cur)
    idx = idx + 1
    return prev.index_select(dim, idx)

def _init_buffers(self, counts: torch.Tensor):
    self.width = int(torch.cumsum(counts, 0)[-1])
"""


def test_sizes_host_values_reductions_and_reassigned_indices_stay_quiet():
    assert lines("device-tensor-as-number", NUMBER_LOOK_ALIKES) == []


REPEATS = """
import torch

def expand(x, counts: torch.Tensor, n_rep: int, lens_cpu, num_tokens: int):
    a = x.repeat_interleave(counts.long(), dim=0)
    b = torch.repeat_interleave(x, torch.diff(counts))
    c = torch.repeat_interleave(counts)
    d = x.repeat_interleave(repeats=counts, dim=0)
    e = x.repeat_interleave(counts, dim=0, output_size=num_tokens)
    f = x.repeat_interleave(n_rep, dim=1)
    g = torch.repeat_interleave(x, lens_cpu)
    h = x.repeat_interleave(self.repeats, dim=0)
    return a, b, c, d, e, f, g, h
"""


@pytest.mark.parametrize("code, expected", [(REPEATS, [5, 6, 7, 8])])
def test_repeat_interleave_needs_tensor_repeats_and_no_output_size(code, expected):
    assert lines("repeat-interleave-without-output-size", code) == expected
