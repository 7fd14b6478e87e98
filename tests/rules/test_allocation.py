"""Allocation matchers on the shapes their rule examples do not spell out."""

from __future__ import annotations

from rltrefactor.matching.matchers.residency.allocation import UnreadDeviceAllocation
from rltrefactor.matching.matchers.residency.indexing import ArangeIndexForSlice
from rltrefactor.matching.matchers.residency.implicit_sync import BooleanMaskWrite

from .helpers import lines


def test_unread_allocation_rebound_in_the_same_block_only() -> None:
    code = """
    import torch

    def step(x, flag):
        a = torch.empty_like(x)
        a = x * 2
        b = torch.zeros(4, device=x.device)
        if flag:
            b = x[:4]
        c = torch.empty(4, device=x.device)
        c, d = c.chunk(2)
        e = torch.ones(4, device=x.device)
        e, f = x.chunk(2)
        return a, b, c, d, e, f
    """
    # ``b`` may survive the branch; ``c`` is read by its own rebinding; ``e`` is rebound by unpacking.
    assert lines(UnreadDeviceAllocation("r", {}), code) == [5, 12]


def test_unread_allocation_left_alone_in_loops_and_on_the_host() -> None:
    code = """
    import torch

    def step(xs):
        for x in xs:
            tmp = torch.empty_like(x)
            tmp = x + 1
        host = torch.empty(4)
        host = torch.ones(4)
        return tmp, host
    """
    assert lines(UnreadDeviceAllocation("r", {}), code) == []


def test_arange_index_only_when_it_is_the_one_tensor_index() -> None:
    code = """
    import torch

    def update(cache, k, start, n, rows, lens: torch.Tensor):
        cache[:, torch.arange(start, start + n)] = k
        picked = cache[torch.arange(n), rows]
        stepped = cache[torch.arange(0, n, 2)]
        pos = torch.arange(n, device=k.device)
        shifted = pos + start
        device_bound = cache[torch.arange(lens.sum())]
        return picked, stepped, shifted, device_bound
    """
    assert lines(ArangeIndexForSlice("r", {}), code) == [5]


def test_mask_writes_of_tensors_and_updates_but_not_of_numbers() -> None:
    code = """
    import torch

    def penalize(logits: torch.Tensor, ids: torch.Tensor, values: torch.Tensor, idx: torch.Tensor):
        logits[ids == 0] = float("-inf")
        logits[ids == 1] = values
        logits[ids > 2] *= 0.5
        logits[idx] = values
        hit = torch.isnan(logits)
        logits[hit] = torch.zeros_like(logits)[hit]
        return logits
    """
    assert lines(BooleanMaskWrite("r", {}), code) == [6, 7, 10]
