"""A dataclass field every construction fills with a host tensor (``torch.from_numpy``,
``.cpu()``), and no write anywhere gives a device value, is a host value where a model
reads it through an instance of that class: its ``.tolist()`` is not reported. The same
read is reported when one construction passes a device tensor, when a write elsewhere
gives the field a device value, and when a subclass may be what the model holds. End to
end through ``review --diff``, no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

# vLLM's pooling: the runner builds the metadata from the numpy request state.
VLLM_METADATA = ("vllm/v1/pool/metadata.py", '''from dataclasses import dataclass

import torch


@dataclass
class PoolingMetadata:
    prompt_lens: torch.Tensor
    prompt_token_ids: torch.Tensor | None
    pooling_params: list
    cursor: object | None = None

    def __getitem__(self, indices):
        return PoolingMetadata(
            prompt_lens=self.prompt_lens[indices],
            prompt_token_ids=None if self.prompt_token_ids is None else self.prompt_token_ids[indices],
            pooling_params=self.pooling_params[indices],
        )
''')
VLLM_RUNNER = ("vllm/v1/worker/gpu/pool/pooling_runner.py", '''import torch

from vllm.v1.pool.metadata import PoolingMetadata


class PoolingRunner:
    def __init__(self, device):
        self.device = device

    def get_pooling_metadata(self, num_scheduled_tokens, params):
        prompt_lens = torch.from_numpy(num_scheduled_tokens)
        return PoolingMetadata(prompt_lens=PASSED, prompt_token_ids=None, pooling_params=params)
''')
VLLM_MODEL = ("vllm/model_executor/models/bert_pooler.py", '''import torch
from torch import nn

from vllm.v1.pool.metadata import PoolingMetadata


class BertPooler(nn.Module):
    def forward(self, hidden_states: torch.Tensor, pooling_metadata: PoolingMetadata) -> list:
        lens = pooling_metadata.prompt_lens.tolist()
        return list(hidden_states.split(lens))
''')

# SGLang's forward batch: a field filled after construction, from the host request lists.
SGLANG_BATCH = ("sglang/srt/model_executor/mm_batch.py", '''from dataclasses import dataclass, field
from typing import List, Optional

import torch


@dataclass
class MultiItemBatch:
    input_ids: torch.Tensor
    delimiter_indices: Optional[List[torch.Tensor]] = None
    extras: list = field(default_factory=list)

    @classmethod
    def init_new(cls, batch, input_ids):
        ret = cls(input_ids=input_ids)
        ret.delimiter_indices = [torch.tensor(r.delimiters, dtype=torch.int64).cpu() for r in batch.reqs]
        return ret
''')
SGLANG_BACKEND = ("sglang/srt/layers/attention/mis_backend.py", '''import torch
from torch import nn

from sglang.srt.model_executor.mm_batch import MultiItemBatch


class MultiItemBackend(nn.Module):
    def forward(self, q, batch: MultiItemBatch):
        spans = []
        for i in range(len(batch.delimiter_indices)):
            spans.append(batch.delimiter_indices[i].tolist())
        return q, spans
''')
SGLANG_WRITER = ("sglang/srt/managers/mm_prefill.py", '''import torch

from sglang.srt.model_executor.mm_batch import MultiItemBatch


def prepare(batch: MultiItemBatch, device):
    batch.delimiter_indices = [torch.arange(4, device=device)]
''')


def _read_lines(findings: list[dict], path: str) -> set[int]:
    return {f["line"] for f in findings if f["path"] == path and f["rule"] == "host-sync-in-hot-path"}


@pytest.mark.parametrize(("passed", "reported"), [("prompt_lens", False), ("prompt_lens.to(self.device)", True)],
                         ids=["host-constructions", "a-device-construction"])
def test_vllm_a_field_every_construction_fills_on_the_host(review_added, passed, reported):
    runner = VLLM_RUNNER[1].replace("PASSED", passed)
    findings = review_added({VLLM_METADATA[0]: VLLM_METADATA[1], VLLM_RUNNER[0]: runner, VLLM_MODEL[0]: VLLM_MODEL[1]})
    assert (9 in _read_lines(findings, VLLM_MODEL[0])) is reported


def test_vllm_a_subclass_may_be_what_the_model_holds(review_added):
    metadata = VLLM_METADATA[1] + '''

@dataclass
class ShardedPoolingMetadata(PoolingMetadata):
    shard: int = 0
'''
    runner = VLLM_RUNNER[1].replace("PASSED", "prompt_lens")
    findings = review_added({VLLM_METADATA[0]: metadata, VLLM_RUNNER[0]: runner, VLLM_MODEL[0]: VLLM_MODEL[1]})
    assert 9 in _read_lines(findings, VLLM_MODEL[0])


@pytest.mark.parametrize("with_device_writer", [False, True], ids=["host-writes", "a-device-write"])
def test_sglang_a_field_every_write_fills_on_the_host(review_added, with_device_writer):
    added = {SGLANG_BATCH[0]: SGLANG_BATCH[1], SGLANG_BACKEND[0]: SGLANG_BACKEND[1]}
    if with_device_writer:
        added[SGLANG_WRITER[0]] = SGLANG_WRITER[1]
    findings = review_added(added)
    assert (11 in _read_lines(findings, SGLANG_BACKEND[0])) is with_device_writer


@pytest.mark.parametrize(("written", "reported"), [
    ("torch.tensor(r.delimiters, dtype=torch.int64)", False),  # no device: the CPU
    ("torch.tensor(r.delimiters, dtype=torch.int64, device=input_ids.device)", True),
    ("torch.as_tensor(r.delimiters)", True),  # ``as_tensor`` keeps the device of a tensor it is given
], ids=["no-device", "a-device", "as-tensor-of-unknown"])
def test_sglang_a_field_filled_by_a_factory_with_no_device_is_on_the_host(review_added, written, reported):
    batch = SGLANG_BATCH[1].replace("torch.tensor(r.delimiters, dtype=torch.int64).cpu()", written)
    findings = review_added({SGLANG_BATCH[0]: batch, SGLANG_BACKEND[0]: SGLANG_BACKEND[1]})
    assert (11 in _read_lines(findings, SGLANG_BACKEND[0])) is reported


VLLM_RUNNER_DEFAULT_DEVICE = '''import torch

from vllm.v1.pool.metadata import PoolingMetadata


class PoolingRunner:
    def __init__(self, device):
        self.device = device

    def get_pooling_metadata(self, num_scheduled_tokens, params):
        with WITH:
            prompt_lens = torch.zeros(len(params), dtype=torch.int64)
        return PoolingMetadata(prompt_lens=prompt_lens, prompt_token_ids=None, pooling_params=params)
'''


@pytest.mark.parametrize(("manager", "reported"), [("torch.no_grad()", False), ("torch.device(self.device)", True)],
                         ids=["no-default-device", "under-a-default-device"])
def test_vllm_a_field_built_by_a_factory_with_no_device_follows_the_default_device(review_added, manager, reported):
    runner = VLLM_RUNNER_DEFAULT_DEVICE.replace("WITH", manager)
    findings = review_added({VLLM_METADATA[0]: VLLM_METADATA[1], VLLM_RUNNER[0]: runner, VLLM_MODEL[0]: VLLM_MODEL[1]})
    assert (9 in _read_lines(findings, VLLM_MODEL[0])) is reported
