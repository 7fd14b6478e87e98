"""The engine end to end on the CPU: decode steps of the looped model, then sampling."""

from __future__ import annotations

from loopy.config import EngineConfig
from loopy.core.request import SamplingParams
from loopy.engine import LLMEngine


def _engine() -> LLMEngine:
    engine = LLMEngine(EngineConfig(device="cpu", seed=7))
    engine.add_request("greedy", (1, 2, 3), SamplingParams(max_tokens=3))
    engine.add_request("sampled", (4, 5), SamplingParams(max_tokens=2, temperature=0.8))
    return engine


def test_every_request_finishes_with_its_token_budget():
    engine = _engine()
    finished = {}
    for _ in range(10):
        for output in engine.step():
            if output.finished:
                finished[output.request_id] = output.output_token_ids
        if not engine.has_unfinished_requests():
            break
    assert {name: len(tokens) for name, tokens in finished.items()} == {"greedy": 3, "sampled": 2}
    assert all(0 <= token < 64 for tokens in finished.values() for token in tokens)


def test_a_decode_step_loops_each_row_between_one_and_max_depth():
    engine = _engine()
    batch = engine.scheduler.schedule()
    output = engine.model_runner.execute_model(batch)
    assert output.request_ids == ("greedy", "sampled")
    depths = output.exit_depths.tolist()
    assert all(1 <= depth <= engine.config.max_loop_depth for depth in depths)
