"""Persistent device inputs, filled through pinned host staging buffers."""

from __future__ import annotations

import torch

from loopy.core.scheduler import SchedulerOutput

# Rows of the integer staging buffer; one copy moves all three to the device.
INPUT_IDS_ROW = 0
POSITIONS_ROW = 1
SLOTS_ROW = 2


class InputBuffers:
    """Device tensors sized for the largest batch; each step uses their first rows.

    The host buffers are pinned on CUDA so the copies run asynchronously. They are
    rewritten only after the engine has read back the previous step's outputs, which
    orders the rewrite after the copy that read them.
    """

    def __init__(self, *, max_num_sequences: int, device: torch.device) -> None:
        pin_memory = device.type == "cuda"
        self._integers_host = torch.zeros((3, max_num_sequences), dtype=torch.int64, pin_memory=pin_memory)
        self._temperatures_host = torch.zeros(max_num_sequences, dtype=torch.float32, pin_memory=pin_memory)
        self._integers = torch.zeros((3, max_num_sequences), dtype=torch.int64, device=device)
        self._temperatures = torch.zeros(max_num_sequences, dtype=torch.float32, device=device)

    def stage(self, batch: SchedulerOutput) -> None:
        """Copy ``batch`` to the device without waiting for the copy to finish."""
        rows = zip(batch.input_token_ids, batch.positions, batch.slots, batch.temperatures)
        for index, (token_id, position, slot, temperature) in enumerate(rows):
            self._integers_host[INPUT_IDS_ROW, index] = token_id
            self._integers_host[POSITIONS_ROW, index] = position
            self._integers_host[SLOTS_ROW, index] = slot
            self._temperatures_host[index] = temperature
        count = batch.num_requests
        self._integers[:, :count].copy_(self._integers_host[:, :count], non_blocking=True)
        self._temperatures[:count].copy_(self._temperatures_host[:count], non_blocking=True)

    def input_ids(self, count: int) -> torch.Tensor:
        return self._integers[INPUT_IDS_ROW, :count]

    def positions(self, count: int) -> torch.Tensor:
        return self._integers[POSITIONS_ROW, :count]

    def slots(self, count: int) -> torch.Tensor:
        return self._integers[SLOTS_ROW, :count]

    def temperatures(self, count: int) -> torch.Tensor:
        return self._temperatures[:count]
