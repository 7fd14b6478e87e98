"""Runs one decode step of the looped model for a scheduled batch."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from loopy.config import EngineConfig
from loopy.core.kv_manager import KVCacheManager
from loopy.core.scheduler import SchedulerOutput
from loopy.model_executor.looped_block import AttentionMetadata, LoopedTransformer
from loopy.sample.sampler import Sampler
from loopy.worker.input_buffers import InputBuffers


@dataclass(frozen=True)
class ModelRunnerOutput:
    """Device tensors of one step; row ``i`` belongs to ``request_ids[i]``."""

    request_ids: tuple[str, ...]
    sampled_token_ids: torch.Tensor  # [batch] int64
    exit_depths: torch.Tensor  # [batch] int64, loop depths each row ran (1..max_loop_depth)


class ModelRunner:
    """Owns the model, the per-depth KV cache tensors and the persistent input buffers."""

    def __init__(self, config: EngineConfig, kv_manager: KVCacheManager) -> None:
        self.device = config.torch_device
        self.max_loop_depth = config.max_loop_depth
        self.exit_threshold = config.exit_threshold
        self.block_size = config.block_size
        self.kv_manager = kv_manager
        self.model = LoopedTransformer(config).to(self.device).eval()
        self.sampler = Sampler()
        self.generator = torch.Generator(device=self.device).manual_seed(config.seed)
        cache_shape = (config.max_loop_depth, config.num_blocks, config.block_size, config.hidden_size)
        self.key_cache = torch.zeros(cache_shape, device=self.device)
        self.value_cache = torch.zeros(cache_shape, device=self.device)
        self.inputs = InputBuffers(max_num_sequences=config.max_num_sequences, device=self.device)
        # Per-row exit state, reset in place each step: stable addresses, no per-step allocation.
        self.exited_rows = torch.zeros(config.max_num_sequences, dtype=torch.bool, device=self.device)
        self.exit_depth_rows = torch.zeros(config.max_num_sequences, dtype=torch.int64, device=self.device)

    @torch.inference_mode()
    def execute_model(self, batch: SchedulerOutput) -> ModelRunnerOutput:
        """Embed, loop the shared block up to ``max_loop_depth`` times, sample.

        Exit decisions stay on the device: a row that exited keeps its hidden state
        (``torch.where``) but still writes KV at every later depth, so the caches of all
        depths cover every position.
        """
        count = batch.num_requests
        self.inputs.stage(batch)
        self.kv_manager.publish_block_tables()
        positions = self.inputs.positions(count)
        metadata = self._attention_metadata(positions, self.inputs.slots(count))

        hidden = self.model.embed(self.inputs.input_ids(count))
        exited = self.exited_rows[:count].zero_()
        exit_depths = self.exit_depth_rows[:count].fill_(self.max_loop_depth)
        for depth in range(self.max_loop_depth):
            updated = self.model.run_depth(
                hidden,
                depth=depth,
                key_cache=self.key_cache[depth],
                value_cache=self.value_cache[depth],
                metadata=metadata[depth],
            )
            hidden = torch.where(exited.unsqueeze(-1), hidden, updated)
            newly_exited = ~exited & (self.model.exit_probability(hidden) >= self.exit_threshold)
            exit_depths = torch.where(newly_exited, depth + 1, exit_depths)
            exited = exited | newly_exited

        logits = self.model.compute_logits(hidden)
        sampled = self.sampler(logits, self.inputs.temperatures(count), generator=self.generator)
        return ModelRunnerOutput(
            request_ids=batch.request_ids, sampled_token_ids=sampled, exit_depths=exit_depths
        )

    def _attention_metadata(
        self, positions: torch.Tensor, slots: torch.Tensor
    ) -> list[AttentionMetadata]:
        """Per-depth block tables and write slots for this batch, computed on the device."""
        block_tables = self.kv_manager.block_tables.index_select(1, slots)
        block_index = (positions // self.block_size).expand(self.max_loop_depth, -1)
        block_ids = block_tables.gather(2, block_index.unsqueeze(-1)).squeeze(-1)
        slot_mappings = block_ids * self.block_size + positions % self.block_size
        return [
            AttentionMetadata(
                positions=positions,
                slot_mapping=slot_mappings[depth],
                block_table=block_tables[depth],
            )
            for depth in range(self.max_loop_depth)
        ]
