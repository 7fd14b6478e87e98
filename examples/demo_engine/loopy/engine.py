"""The engine: requests in, one decode step per call to ``step()``, outputs out."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from loopy.config import EngineConfig
from loopy.core.kv_manager import KVCacheManager
from loopy.core.request import Request, SamplingParams
from loopy.core.scheduler import Scheduler
from loopy.worker.model_runner import ModelRunner


@dataclass(frozen=True)
class RequestOutput:
    request_id: str
    output_token_ids: tuple[int, ...]
    finished: bool


class LLMEngine:
    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        torch.manual_seed(config.seed)
        self.kv_manager = KVCacheManager(config)
        self.scheduler = Scheduler(config, self.kv_manager)
        self.model_runner = ModelRunner(config, self.kv_manager)

    def add_request(
        self,
        request_id: str,
        prompt_token_ids: tuple[int, ...],
        sampling_params: SamplingParams | None = None,
    ) -> None:
        if not prompt_token_ids:
            raise ValueError(f"request {request_id!r} has an empty prompt")
        self.scheduler.add_request(
            Request(
                request_id=request_id,
                prompt_token_ids=tuple(prompt_token_ids),
                sampling_params=sampling_params or SamplingParams(),
            )
        )

    def has_unfinished_requests(self) -> bool:
        return self.scheduler.has_unfinished_requests()

    def step(self) -> list[RequestOutput]:
        """Run one decode step; returns an output for every request that made progress."""
        scheduler_output = self.scheduler.schedule()
        if scheduler_output.num_requests == 0:
            return []
        runner_output = self.model_runner.execute_model(scheduler_output)
        # The one device-to-host transfer of a step: the scheduler needs the tokens.
        sampled_token_ids = runner_output.sampled_token_ids.tolist()  # rltrefactor: ignore[host-sync-in-hot-path] the step's one read: the scheduler needs the tokens
        advanced = self.scheduler.update_from_output(scheduler_output, sampled_token_ids)
        return [
            RequestOutput(
                request_id=request.request_id,
                output_token_ids=tuple(request.output_token_ids),
                finished=request.status.is_finished,
            )
            for request in advanced
        ]
