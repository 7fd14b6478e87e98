"""Residency inference: which values a function shows to live in host memory."""

from __future__ import annotations

import libcst as cst
import pytest

from rltrefactor.matching.matchers.companions import residency_companions
from rltrefactor.matching.matchers.residency.locations import on_host
from rltrefactor.matching.matchers.residency.pinned import is_pinned

from .helpers import context

BODY = """
import numpy as np
import torch

def step(self, batch, q, dev):
    lengths = torch.tensor(batch.lengths)
    pinned = torch.zeros(8, pin_memory=True)
    on_gpu = torch.zeros(8, device=dev)
    cpu_named = torch.zeros(8, device="cpu")
    moved = on_gpu.cpu()
    joined = torch.cat([t.cpu() for t in batch.outputs])
    arr = np.asarray(batch.ids)
    logits = self.model(q)
    logits = logits.cpu()
    ids = logits.argmax(-1)
    back = lengths.to(dev)
    if q.is_cpu:
        guarded = q
    unguarded = q
    probe(lengths.max(), pinned, on_gpu, cpu_named, moved.view(-1), joined, arr, ids, back, guarded, unguarded,
          self.slots_cpu_tensor[0], batch.host_ids, torch.zeros_like(on_gpu), torch.zeros_like(lengths),
          torch.randperm(8), torch.eye(8, device=dev), torch.randn_like(on_gpu), torch.randn_like(lengths))
"""


def _probe_args(code: str):
    ctx = context(code)
    call = next(c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "probe")
    return ctx, [arg.value for arg in call.args]


@pytest.mark.parametrize(
    "index, host",
    [
        (0, True),   # a reduction of a tensor built without a device
        (1, True),   # pinned host memory
        (2, False),  # built on a device
        (3, True),   # device="cpu"
        (4, True),   # a view of .cpu()
        (5, True),   # a join of host values
        (6, True),   # numpy
        (7, True),   # the last assignment before the use was .cpu()
        (8, False),  # moved to a device
        (9, True),   # inside `if q.is_cpu:`
        (10, False),  # the same name outside that branch
        (11, True),  # named as host data
        (12, True),
        (13, False),  # like a device tensor
        (14, True),  # like a host tensor
        (15, True),  # every torch factory allocates on the host without a device
        (16, False),
        (17, False),  # random values like a device tensor
        (18, True),
    ],
)
def test_values_known_on_the_host(index, host):
    ctx, args = _probe_args(BODY)
    assert on_host(args[index], ctx) is host


@pytest.mark.parametrize(("guard", "host"), [
    ("q.is_cpu", True),
    ("q.dim() == 2 and q.device.type == 'cpu'", True),
    ("not q.is_cpu", False),  # the opposite: a device tensor here
    ("q.is_cpu or k.is_cpu", False),  # either may hold
])
def test_a_branch_holds_a_value_on_the_host_only_by_an_affirmative_test(guard, host):
    code = f"import torch\n\ndef f(q, k):\n    if {guard}:\n        probe(q)\n"
    ctx, (value,) = _probe_args(code)
    assert on_host(value, ctx) is host


def test_an_earlier_host_assignment_does_not_hide_a_later_device_one():
    code = "import torch\n\ndef f(dev, n):\n    x = torch.zeros(n)\n    x = x.to(dev)\n    probe(x)\n"
    ctx, (value,) = _probe_args(code)
    assert on_host(value, ctx) is False


def test_planning_keeps_the_lines_that_assign_a_receiver():
    names = residency_companions("total = lengths.max().item() + self.count(batch_ids)\n    next line")
    assert {"lengths", "total", "batch_ids"} <= names and not names & {"self", "count", "max", "item"}


FACTS = """
import torch

def step(self, batch, dev, idx):
    place = torch.device("cpu")
    ids = torch.tensor(batch.ids, device=place)
    raw = torch.frombuffer(batch.payload, dtype=torch.uint8)
    on_gpu = torch.zeros(8, device=dev)
    pinned = torch.empty(8, pin_memory=True)
    staged = torch.zeros(8).pin_memory()
    pageable = torch.zeros(8)
    probe(ids, raw, ids > 0, ~ids, ids.device, on_gpu > 0, on_gpu.to(ids.device), on_gpu.to(place), place,
          pinned[:4], pinned[idx], staged.view(2, 4), self.tokens_cpu[:4], pageable, on_gpu)
"""


@pytest.mark.parametrize(
    "index, host, pinned",
    [
        (0, True, False),  # device= a name last assigned torch.device("cpu")
        (1, True, False),  # torch.frombuffer
        (2, True, False),  # a comparison of a host value
        (3, True, False),  # a negation of a host value
        (4, True, False),  # the device of a host value
        (5, False, False),
        (6, True, False),  # moved to the device of a host value
        (7, True, False),  # moved to a host device held in a name
        (8, True, False),  # a host device
        (9, True, True),  # a slice of a pin_memory=True allocation
        (10, True, False),  # advanced indexing copies into pageable memory
        (11, True, True),  # a view of .pin_memory()
        (12, True, True),  # a slice of a persistent buffer
        (13, True, False),
        (14, False, False),
    ],
)
def test_host_and_pinned_facts(index, host, pinned):
    ctx, args = _probe_args(FACTS)
    assert on_host(args[index], ctx) is host
    assert is_pinned(args[index], ctx) is pinned


@pytest.mark.parametrize(("argument", "pinned"), [
    ("True", True), ("PIN_MEMORY", True), ("is_pin_memory_available()", True), ("pin_memory", True),
    ("False", False), ("None", False),
])
def test_pin_memory_asked_by_a_flag_is_pinned_where_the_platform_pins(argument, pinned):
    code = f"import torch\n\ndef f(n, pin_memory):\n    buf = torch.empty(n, pin_memory={argument})\n    probe(buf)\n"
    ctx, (value,) = _probe_args(code)
    assert is_pinned(value, ctx) is pinned


def test_planning_keeps_the_names_of_a_wrapped_assignment():
    names = residency_companions("budget = torch.zeros(\n    n,\n    device=place)\nother = 1\n")
    assert {"budget", "n", "place"} <= names and "other" not in names



def test_a_torch_function_of_a_device_value_is_on_the_device_and_torch_is_no_receiver():
    from rltrefactor.matching.matchers.residency.locations import on_device

    ctx = context("""
import torch

def step(logits, scores):
    on_gpu = logits.cuda()
    top = torch.argmax(on_gpu, dim=-1)
    summed = torch.sum(scores)
    own = on_gpu.argmax(-1)
""")
    values = {ctx.code(a.targets[0].target): on_device(a.value, ctx) for a in ctx.nodes(cst.Assign)}
    assert values == {"on_gpu": True, "top": True, "summed": False, "own": True}
