"""The scheduler: admission within the sequence limit, one token per running request per step."""

from __future__ import annotations

from loopy.config import EngineConfig
from loopy.core.kv_manager import KVCacheManager
from loopy.core.request import Request, SamplingParams
from loopy.core.scheduler import Scheduler


def _scheduler(max_num_sequences: int = 2) -> Scheduler:
    config = EngineConfig(max_num_sequences=max_num_sequences)
    return Scheduler(config, KVCacheManager(config))


def _request(request_id: str, prompt: tuple[int, ...]) -> Request:
    return Request(request_id=request_id, prompt_token_ids=prompt, sampling_params=SamplingParams(max_tokens=2))


def test_admits_no_more_than_the_sequence_limit():
    scheduler = _scheduler(max_num_sequences=2)
    for index in range(3):
        scheduler.add_request(_request(f"r{index}", (1, 2)))
    batch = scheduler.schedule()
    assert batch.request_ids == ("r0", "r1")
    assert scheduler.num_waiting == 1


def test_feeds_the_prompt_one_token_per_step_then_the_sampled_tokens():
    scheduler = _scheduler()
    scheduler.add_request(_request("r0", (5, 6)))
    fed = []
    while scheduler.has_unfinished_requests():
        batch = scheduler.schedule()
        fed.append((batch.input_token_ids, batch.positions))
        scheduler.update_from_output(batch, [9] * batch.num_requests)
    assert fed == [((5,), (0,)), ((6,), (1,)), ((9,), (2,))]
