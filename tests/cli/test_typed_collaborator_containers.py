"""``collaborator-container-mutation`` is about Python containers another component owns:
where the type engine says the written value is a tensor, or a component whose own method
is called, nothing is reported; a ``dict`` or ``list`` it types, and a value it cannot type,
still are. End to end, no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

# SGLang style: a pool's tensor written by index from the memory pool that uses it.
SGLANG_STYLE = '''import torch


class MambaPool:
    def __init__(self, size: int):
        self.write_pos: FIELD = INIT


class HybridMemoryPool:
    def __init__(self, mamba_pool: MambaPool):
        self.mamba_pool = mamba_pool

    def free(self, index: int):
        self.mamba_pool.write_pos[index] = 0
'''

# vLLM style: a connector drops a request from what its scheduler keeps.
VLLM_STYLE = '''class LookupClient:
    def discard(self, request_id: str) -> None:
        pass


class ConnectorScheduler:
    def __init__(self):
        self.client: FIELD = INIT


class Connector:
    def __init__(self):
        self.connector_scheduler = ConnectorScheduler()

    def request_finished(self, request_id: str):
        self.connector_scheduler.client.discard(request_id)
'''

CASES = {
    "sglang": ("sglang/srt/mem_cache/memory_pool.py", SGLANG_STYLE, 14,
               ("torch.Tensor", "torch.zeros(size, dtype=torch.int64)"), ("dict[int, int]", "{}")),
    "vllm": ("vllm/distributed/kv_transfer/connector.py", VLLM_STYLE, 16,
             ("LookupClient", "LookupClient()"), ("set[str]", "set()")),
}


def _reported(review_new_file, style: str, field: tuple[str, str]) -> bool:
    path, text, line, _, _ = CASES[style]
    found = review_new_file(path, text.replace("FIELD", field[0]).replace("INIT", field[1]))
    return found.get(line) == "collaborator-container-mutation"


@pytest.mark.parametrize("style", sorted(CASES))
def test_a_value_typed_as_no_container_is_left_alone(review_new_file, style):
    assert not _reported(review_new_file, style, CASES[style][3])


@pytest.mark.parametrize("style", sorted(CASES))
def test_a_python_container_of_a_collaborator_is_reported(review_new_file, style):
    assert _reported(review_new_file, style, CASES[style][4])
