"""A Python number written into a device tensor: which writes copy it from the host (one
element, an integer index tensor, a list, two index tensors) and which run a kernel with
it as an argument (slices, rows, one boolean mask), and the evidence behind each."""

from __future__ import annotations

import libcst as cst

from rltrefactor.matching.matchers.residency.scalar_writes import (
    PythonNumberIndexWrite, blocking_write, dimensions, integer_index, python_number,
)

from .helpers import context, lines

WRITES = """
import math
import torch

def step(probs: torch.Tensor, slots: torch.LongTensor, flags: torch.Tensor, eos: int, n: int, table, x_cpu):
    counts = torch.zeros(n, dtype=torch.int32, device=probs.device)
    grid = torch.empty((n, 4), device=probs.device)
    order = torch.arange(n, device=probs.device)
    neg = -math.inf
    counts[0] = 1
    counts[n - 1] = eos
    grid[1, 2] = neg
    counts[order] = 0
    counts[slots + 1] = 0
    probs[slots, flags] = 1.0
    counts[[0, 2]] = 3
    grid[0] = 0
    grid[:, 1] = 0.5
    counts[2:] = -1
    counts[flags] = 0
    counts[probs > 0] = 0
    probs[0] = 1.0
    table[0] = 1
    x_cpu[0] = 1
    counts[order] = probs[0]
    counts[1] += 1
    counts[1] = float(n)
"""


def test_one_element_index_tensors_and_lists_are_reported_slices_rows_masks_and_unknowns_are_not():
    assert lines(PythonNumberIndexWrite("r", {}), WRITES) == [10, 11, 12, 13, 14, 15, 16, 27]


def _targets(code: str):
    ctx = context(code)
    return ctx, [a.targets[0].target for a in ctx.nodes(cst.Assign) if isinstance(a.targets[0].target, cst.Subscript)]


def test_the_reason_names_the_copy_path():
    ctx, targets = _targets(WRITES)
    reasons = {ctx.code(t): blocking_write(t, ctx) for t in targets}
    assert "`copy_`" in (reasons["counts[0]"] or "")
    assert "integer index tensor" in (reasons["counts[order]"] or "")
    assert "two tensors" in (reasons["probs[slots, flags]"] or "")
    assert "list index" in (reasons["counts[[0, 2]]"] or "")
    assert reasons["grid[0]"] is None and reasons["counts[flags]"] is None


def test_dimensions_come_from_factories_views_and_same_shape_ops():
    code = (
        "import torch\n"
        "def f(x, shape, n: int):\n"
        "    a = torch.zeros(n, device=x.device)\n"
        "    b = torch.full((n, 2), 0.0, device=x.device)\n"
        "    c = x.flatten().cumsum(0).roll(1)\n"
        "    d = x.view(n, -1) * 2\n"
        "    e = torch.zeros(shape, device=x.device)\n"
        "    g = x.view(torch.int32)\n"
        "    h = torch.zeros(n, 3, device=x.device)[:2]\n"
        "    probe(a, b, c, d, e, g, h, x)\n"
    )
    ctx = context(code)
    call = next(c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "probe")
    assert [dimensions(a.value, ctx) for a in call.args] == [1, 2, 1, 2, None, None, 2, None]


def test_integer_indices_need_integer_evidence():
    code = (
        "import torch\n"
        "def f(x, ids: torch.LongTensor, used, mask: torch.Tensor):\n"
        "    a = torch.arange(4, device=x.device)\n"
        "    b = x.argmax(-1)\n"
        "    c = torch.zeros(4, dtype=torch.int64, device=x.device)\n"
        "    d = torch.zeros(4, dtype=torch.bool, device=x.device)\n"
        "    u = torch.zeros(4, dtype=torch.uint8, device=x.device)\n"
        "    e = torch.where(mask)\n"
        "    g = x > 0\n"
        "    y = x.index_select(0, used)\n"
        "    probe(a, b, c, d, u, e, g, ids, used, mask, ids[:2] + 1, x.float())\n"
    )
    ctx = context(code)
    call = next(c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "probe")
    assert [integer_index(a.value, ctx) for a in call.args] == [
        True, True, True, False, False, True, False, True, True, False, True, False,
    ]


def test_python_numbers_are_literals_infinities_lengths_and_names_bound_to_them():
    code = (
        "import math\n"
        "import torch\n"
        "def f(x, k: int, scale: float, v):\n"
        "    big = -1e9\n"
        "    t = torch.ones(())\n"
        "    probe(0, -1.5, True, float('-inf'), math.inf, len(x), big, k, scale, v, t, x[0], float(v))\n"
    )
    ctx = context(code)
    call = next(c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "probe")
    assert [python_number(a.value, ctx) for a in call.args] == [True] * 9 + [False] * 4
