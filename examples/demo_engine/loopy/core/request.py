"""A request and its lifecycle states."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class RequestStatus(enum.Enum):
    WAITING = enum.auto()
    RUNNING = enum.auto()
    FINISHED_LENGTH = enum.auto()
    FINISHED_ABORTED = enum.auto()

    @property
    def is_finished(self) -> bool:
        return self in (RequestStatus.FINISHED_LENGTH, RequestStatus.FINISHED_ABORTED)


@dataclass(frozen=True)
class SamplingParams:
    """How to pick tokens: ``temperature == 0`` means greedy."""

    max_tokens: int = 8
    temperature: float = 0.0

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1 (got {self.max_tokens})")
        if self.temperature < 0.0:
            raise ValueError(f"temperature must not be negative (got {self.temperature})")


@dataclass
class Request:
    """One generation request; only the scheduler changes its state."""

    request_id: str
    prompt_token_ids: tuple[int, ...]
    sampling_params: SamplingParams
    status: RequestStatus = RequestStatus.WAITING
    output_token_ids: list[int] = field(default_factory=list)
    num_computed_tokens: int = 0

    @property
    def num_tokens(self) -> int:
        return len(self.prompt_token_ids) + len(self.output_token_ids)

    @property
    def max_num_tokens(self) -> int:
        """Tokens the request may hold at most: its prompt plus everything it may generate."""
        return len(self.prompt_token_ids) + self.sampling_params.max_tokens

    def token_at(self, position: int) -> int:
        prompt_length = len(self.prompt_token_ids)
        if position < prompt_length:
            return self.prompt_token_ids[position]
        return self.output_token_ids[position - prompt_length]
