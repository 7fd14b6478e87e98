"""A tiny looped Transformer: one shared block applied once per loop depth.

Decode only: every call processes one token per request. Attention reads the paged KV
cache of the depth it runs at; each depth has its own cache, written here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from loopy.config import EngineConfig


@dataclass(frozen=True)
class AttentionMetadata:
    """Where each row of the batch reads and writes the cache of one depth.

    ``slot_mapping[i]`` is the flat cache index of row ``i``'s new token;
    ``block_table[i]`` lists row ``i``'s blocks; keys past ``positions[i]`` are masked.
    """

    positions: torch.Tensor  # [batch] int64
    slot_mapping: torch.Tensor  # [batch] int64
    block_table: torch.Tensor  # [batch, max_blocks_per_sequence] int64


class PagedSelfAttention(nn.Module):
    def __init__(self, config: EngineConfig) -> None:
        super().__init__()
        self.num_heads = config.num_heads
        self.head_size = config.head_size
        self.qkv_proj = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=False)
        self.out_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)

    def forward(
        self,
        hidden: torch.Tensor,
        *,
        key_cache: torch.Tensor,
        value_cache: torch.Tensor,
        metadata: AttentionMetadata,
    ) -> torch.Tensor:
        batch_size, hidden_size = hidden.shape
        query, key, value = self.qkv_proj(hidden).chunk(3, dim=-1)
        key_cache.view(-1, hidden_size).index_copy_(0, metadata.slot_mapping, key)
        value_cache.view(-1, hidden_size).index_copy_(0, metadata.slot_mapping, value)

        keys = self._gather(key_cache, metadata.block_table)
        values = self._gather(value_cache, metadata.block_table)
        query = query.view(batch_size, self.num_heads, 1, self.head_size)
        scores = query @ keys.transpose(-1, -2) / math.sqrt(self.head_size)
        context_length = keys.shape[-2]
        visible = torch.arange(context_length, device=hidden.device) <= metadata.positions.unsqueeze(-1)
        scores = scores.masked_fill(~visible[:, None, None, :], float("-inf"))
        context = torch.softmax(scores, dim=-1) @ values
        return self.out_proj(context.reshape(batch_size, hidden_size))

    def _gather(self, cache: torch.Tensor, block_table: torch.Tensor) -> torch.Tensor:
        """[num_blocks, block_size, hidden] -> [batch, heads, context, head_size]."""
        batch_size = block_table.shape[0]
        rows = cache[block_table].reshape(batch_size, -1, self.num_heads, self.head_size)
        return rows.transpose(1, 2)


class LoopedBlock(nn.Module):
    """Pre-norm attention + MLP; the same weights serve every depth."""

    def __init__(self, config: EngineConfig) -> None:
        super().__init__()
        hidden_size = config.hidden_size
        self.depth_embedding = nn.Embedding(config.max_loop_depth, hidden_size)
        self.attention_norm = nn.LayerNorm(hidden_size)
        self.attention = PagedSelfAttention(config)
        self.mlp_norm = nn.LayerNorm(hidden_size)
        self.mlp = nn.Sequential(
            nn.Linear(hidden_size, 4 * hidden_size),
            nn.GELU(),
            nn.Linear(4 * hidden_size, hidden_size),
        )

    def forward(
        self,
        hidden: torch.Tensor,
        *,
        depth: int,
        key_cache: torch.Tensor,
        value_cache: torch.Tensor,
        metadata: AttentionMetadata,
    ) -> torch.Tensor:
        hidden = hidden + self.depth_embedding.weight[depth]
        hidden = hidden + self.attention(
            self.attention_norm(hidden),
            key_cache=key_cache,
            value_cache=value_cache,
            metadata=metadata,
        )
        return hidden + self.mlp(self.mlp_norm(hidden))


class LoopedTransformer(nn.Module):
    def __init__(self, config: EngineConfig) -> None:
        super().__init__()
        self.embedding = nn.Embedding(config.vocab_size, config.hidden_size)
        self.block = LoopedBlock(config)
        self.exit_head = nn.Linear(config.hidden_size, 1)
        self.final_norm = nn.LayerNorm(config.hidden_size)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.embedding(input_ids)

    def run_depth(
        self,
        hidden: torch.Tensor,
        *,
        depth: int,
        key_cache: torch.Tensor,
        value_cache: torch.Tensor,
        metadata: AttentionMetadata,
    ) -> torch.Tensor:
        return self.block(
            hidden, depth=depth, key_cache=key_cache, value_cache=value_cache, metadata=metadata
        )

    def exit_probability(self, hidden: torch.Tensor) -> torch.Tensor:
        """[batch] probability that each row may stop looping after this depth."""
        return torch.sigmoid(self.exit_head(hidden)).squeeze(-1)

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.final_norm(hidden))
