"""Micro-checks for the perf hook: one scheduler step, one decode step, one sampling call.

Each check builds small inputs on the device the hook picks (not measured) and returns
the zero-argument callable whose run is measured at the base and at the head revision.
The hook traces that run to learn which engine functions each check covers.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from rltrefactor.perf import micro_check

NUM_REQUESTS = 4
PROMPT_LENGTH = 3


def _engine(device: torch.device):
    from loopy.config import EngineConfig
    from loopy.core.request import SamplingParams
    from loopy.engine import LLMEngine

    engine = LLMEngine(EngineConfig(device=str(device)))
    for index in range(NUM_REQUESTS):
        prompt = tuple(range(index + 1, index + 1 + PROMPT_LENGTH))
        temperature = 0.0 if index % 2 == 0 else 0.7
        engine.add_request(f"request-{index}", prompt, SamplingParams(max_tokens=8, temperature=temperature))
    # Consume the prompts so the measured call is a decode step at a nonzero position.
    for _ in range(PROMPT_LENGTH):
        engine.step()
    return engine


@micro_check(device="cpu")
def scheduler_step(device: torch.device) -> Callable[[], object]:
    engine = _engine(device)
    return engine.scheduler.schedule


@micro_check
def decode_step(device: torch.device) -> Callable[[], object]:
    """All ``max_loop_depth`` depths with a mix of early and late exits."""
    engine = _engine(device)
    batch = engine.scheduler.schedule()
    # Rerunning the same batch rewrites the same KV entries, so every run does equal work.
    return lambda: engine.model_runner.execute_model(batch)


@micro_check
def sampler(device: torch.device) -> Callable[[], object]:
    from loopy.sample.sampler import Sampler

    generator = torch.Generator(device=device).manual_seed(0)
    logits = torch.randn((8, 64), generator=generator, device=device)
    temperatures = torch.tensor([0.0, 0.7] * 4, device=device)
    sample = Sampler()
    return lambda: sample(logits, temperatures, generator=generator)
