"""Decides which requests run in each step and feeds them one token at a time."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from loopy.config import EngineConfig
from loopy.core.kv_manager import KVCacheManager
from loopy.core.request import Request, RequestStatus


@dataclass(frozen=True)
class SchedulerOutput:
    """One step's batch: row ``i`` of every field belongs to ``request_ids[i]``."""

    request_ids: tuple[str, ...]
    input_token_ids: tuple[int, ...]
    positions: tuple[int, ...]
    slots: tuple[int, ...]
    temperatures: tuple[float, ...]

    @property
    def num_requests(self) -> int:
        return len(self.request_ids)


class Scheduler:
    """Owns the waiting and running queues; other components go through its methods."""

    def __init__(self, config: EngineConfig, kv_manager: KVCacheManager) -> None:
        self.max_num_sequences = config.max_num_sequences
        self.max_model_len = config.max_model_len
        self.kv_manager = kv_manager
        self._requests: dict[str, Request] = {}
        self._waiting: deque[Request] = deque()
        self._running: list[Request] = []

    @property
    def num_waiting(self) -> int:
        return len(self._waiting)

    @property
    def num_running(self) -> int:
        return len(self._running)

    def has_unfinished_requests(self) -> bool:
        return bool(self._requests)

    def add_request(self, request: Request) -> None:
        if request.request_id in self._requests:
            raise ValueError(f"duplicate request id {request.request_id!r}")
        if request.max_num_tokens > self.max_model_len:
            raise ValueError(
                f"request {request.request_id!r} may reach {request.max_num_tokens} tokens, "
                f"more than max_model_len={self.max_model_len}"
            )
        self._requests[request.request_id] = request
        self._waiting.append(request)

    def schedule(self) -> SchedulerOutput:
        """Admit what fits, then feed every running request its next token."""
        self._admit_waiting()
        running = self._running
        return SchedulerOutput(
            request_ids=tuple(request.request_id for request in running),
            input_token_ids=tuple(request.token_at(request.num_computed_tokens) for request in running),
            positions=tuple(request.num_computed_tokens for request in running),
            slots=tuple(self.kv_manager.slot_of(request.request_id) for request in running),
            temperatures=tuple(request.sampling_params.temperature for request in running),
        )

    def update_from_output(
        self, scheduler_output: SchedulerOutput, sampled_token_ids: Sequence[int]
    ) -> list[Request]:
        """Advance every scheduled request by one token; returns them, finished ones included."""
        advanced = []
        for request_id, token_id in zip(scheduler_output.request_ids, sampled_token_ids):
            request = self._requests[request_id]
            request.num_computed_tokens += 1
            # Until the prompt is consumed the sampled token is discarded: the next input is known.
            if request.num_computed_tokens >= len(request.prompt_token_ids):
                request.output_token_ids.append(token_id)
            if len(request.output_token_ids) >= request.sampling_params.max_tokens:
                self.finish(request_id, RequestStatus.FINISHED_LENGTH)
            advanced.append(request)
        return advanced

    def finish(self, request_id: str, status: RequestStatus) -> Request:
        """Take a request out of the queues for good and release its KV blocks."""
        if not status.is_finished:
            raise ValueError(f"finish() needs a finished status (got {status.name})")
        request = self._requests.pop(request_id)
        if request.status is RequestStatus.RUNNING:
            self._running.remove(request)
            self.kv_manager.free(request_id)
        else:
            self._waiting.remove(request)
        request.status = status
        return request

    def _admit_waiting(self) -> None:
        while self._waiting and len(self._running) < self.max_num_sequences:
            request = self._waiting[0]
            # KV for the whole request is reserved up front, so a running request never stalls.
            if not self.kv_manager.can_allocate(request.max_num_tokens):
                break
            self._waiting.popleft()
            self.kv_manager.allocate(request.request_id, request.max_num_tokens)
            request.status = RequestStatus.RUNNING
            self._running.append(request)
