"""Per-depth KV block manager.

Every running request owns one row ("slot") of the block tables and, for each loop
depth, its own list of cache blocks. The device block tables are preallocated once;
the manager edits a host mirror and publishes it with one non-blocking copy.
"""

from __future__ import annotations

from collections import deque

import torch

from loopy.config import EngineConfig


class KVCacheManager:
    """Owns the block pool, the slot pool and the block tables of every depth."""

    def __init__(self, config: EngineConfig) -> None:
        self.block_size = config.block_size
        self.max_loop_depth = config.max_loop_depth
        self.max_blocks_per_sequence = config.max_blocks_per_sequence
        device = config.torch_device
        table_shape = (config.max_loop_depth, config.max_num_sequences, self.max_blocks_per_sequence)
        # Entries past a request's allocation stay 0: attention masks them by position.
        self.block_tables = torch.zeros(table_shape, dtype=torch.int64, device=device)
        self._block_tables_host = torch.zeros(
            table_shape, dtype=torch.int64, pin_memory=device.type == "cuda"
        )
        self._free_blocks: deque[int] = deque(range(config.num_blocks))
        self._free_slots: deque[int] = deque(range(config.max_num_sequences))
        self._slots: dict[str, int] = {}
        self._block_ids: dict[str, list[list[int]]] = {}
        self._tables_dirty = False

    @property
    def num_free_blocks(self) -> int:
        return len(self._free_blocks)

    def blocks_needed(self, num_tokens: int) -> int:
        """Blocks a request of ``num_tokens`` tokens takes over all depths."""
        return -(-num_tokens // self.block_size) * self.max_loop_depth

    def can_allocate(self, num_tokens: int) -> bool:
        return bool(self._free_slots) and self.blocks_needed(num_tokens) <= self.num_free_blocks

    def allocate(self, request_id: str, num_tokens: int) -> int:
        """Reserve a slot and blocks for ``num_tokens`` tokens at every depth; returns the slot."""
        if request_id in self._slots:
            raise ValueError(f"request {request_id!r} already holds KV blocks")
        if not self.can_allocate(num_tokens):
            raise RuntimeError(f"not enough KV blocks for {num_tokens} tokens of {request_id!r}")
        slot = self._free_slots.popleft()
        blocks_per_depth = -(-num_tokens // self.block_size)
        per_depth = [
            [self._free_blocks.popleft() for _ in range(blocks_per_depth)]
            for _ in range(self.max_loop_depth)
        ]
        for depth, block_ids in enumerate(per_depth):
            for index, block_id in enumerate(block_ids):
                self._block_tables_host[depth, slot, index] = block_id
        self._slots[request_id] = slot
        self._block_ids[request_id] = per_depth
        self._tables_dirty = True
        return slot

    def free(self, request_id: str) -> None:
        """Return the request's slot and blocks to the pools; its table row goes stale but unread."""
        slot = self._slots.pop(request_id)
        for block_ids in self._block_ids.pop(request_id):
            self._free_blocks.extend(block_ids)
        self._free_slots.append(slot)

    def slot_of(self, request_id: str) -> int:
        return self._slots[request_id]

    def blocks(self, request_id: str, depth: int) -> tuple[int, ...]:
        return tuple(self._block_ids[request_id][depth])

    def publish_block_tables(self) -> None:
        """Copy the host mirror to the device tables if an allocation changed it.

        The host mirror is only edited between steps, after the engine has read the
        previous step's outputs, so a pending non-blocking copy never sees a torn table.
        """
        if self._tables_dirty:
            self.block_tables.copy_(self._block_tables_host, non_blocking=True)
            self._tables_dirty = False
