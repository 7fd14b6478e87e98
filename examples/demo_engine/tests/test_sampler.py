"""The sampler on the CPU: greedy rows take the argmax, sampled rows a valid token."""

from __future__ import annotations

import torch

from loopy.sample.sampler import Sampler


def test_greedy_rows_take_the_argmax_and_sampled_rows_stay_in_the_vocabulary():
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn((4, 64), generator=generator)
    temperatures = torch.tensor([0.0, 0.7, 0.0, 1.0])
    tokens = Sampler()(logits, temperatures, generator=generator)
    assert tokens[0] == logits[0].argmax() and tokens[2] == logits[2].argmax()
    assert ((tokens >= 0) & (tokens < 64)).all()
