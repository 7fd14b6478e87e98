"""Greedy and temperature sampling, decided per row on the device."""

from __future__ import annotations

import torch
from torch import nn


class Sampler(nn.Module):
    """Rows with temperature 0 take the argmax; the others sample from softmax(logits / t).

    Sampling uses the exponential race (argmax of p / E with E ~ Exp(1)), which draws
    from the categorical distribution without ``torch.multinomial``'s host round trip.
    """

    def forward(
        self,
        logits: torch.Tensor,
        temperatures: torch.Tensor,
        *,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        greedy = logits.argmax(dim=-1)
        is_random = temperatures > 0
        # Greedy rows divide by 1 instead of 0; their sample is discarded below.
        scale = torch.where(is_random, temperatures, torch.ones_like(temperatures))
        probabilities = torch.softmax(logits / scale.unsqueeze(-1), dim=-1)
        noise = torch.empty_like(probabilities).exponential_(generator=generator)
        sampled = (probabilities / noise).argmax(dim=-1)
        return torch.where(is_random, sampled, greedy)
