"""Engine configuration: every tunable lives here, and only here reads the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import torch

DEVICE_ENV_VAR = "LOOPY_DEVICE"


@dataclass(frozen=True)
class EngineConfig:
    """Sizes and policies of one engine instance.

    The KV pool holds ``num_blocks`` blocks of ``block_size`` tokens; a request keeps
    one set of blocks per loop depth, so it needs ``max_loop_depth`` times as many
    blocks as a plain Transformer would.
    """

    vocab_size: int = 64
    hidden_size: int = 32
    num_heads: int = 4
    max_loop_depth: int = 4
    exit_threshold: float = 0.5
    block_size: int = 4
    num_blocks: int = 256
    max_num_sequences: int = 8
    max_model_len: int = 32
    device: str = "cpu"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"hidden_size must be a multiple of num_heads "
                f"(got {self.hidden_size} and {self.num_heads})"
            )
        if self.max_loop_depth < 1:
            raise ValueError(f"max_loop_depth must be at least 1 (got {self.max_loop_depth})")
        if not 0.0 < self.exit_threshold <= 1.0:
            raise ValueError(f"exit_threshold must lie in (0, 1] (got {self.exit_threshold})")

    @classmethod
    def from_env(cls, **overrides: object) -> EngineConfig:
        """Build a config whose device may be chosen by ``LOOPY_DEVICE``."""
        config = cls(**overrides)  # type: ignore[arg-type]
        device = os.environ.get(DEVICE_ENV_VAR)
        return replace(config, device=device) if device else config

    @property
    def torch_device(self) -> torch.device:
        """The device all engine tensors live on; ``auto`` prefers CUDA."""
        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return torch.device(self.device)

    @property
    def max_blocks_per_sequence(self) -> int:
        return -(-self.max_model_len // self.block_size)

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_heads
