"""Code that runs once (or once per key) behind a guard its own body closes, and host
tensors kept in a tuple, are left alone by per-step rules; the same shapes whose guard
never closes, or whose tensors are on the device, stay reported. Reviewed end to end with
no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

MOE_LAYER = '''import torch


class AutoEPMoELayer(torch.nn.Module):
    def __init__(self, impl):
        super().__init__()
        self.row_weighting_impl = impl
        self._row_weighting_checked = False

    def forward(self, x):
        if self.row_weighting_impl == "fused" and not self._row_weighting_checked:
            weights = torch.empty((x.shape[0], 1), dtype=torch.float32, device=x.device)
            check_supported(x, weights)
            {close}
        return x
'''

GUMBEL = '''import torch

gumbel_map = {}


def gumbel_rsample(shape, device):
    gumbel = gumbel_map.get(device)
    if gumbel is None:
        one = torch.tensor(1.0, device=device)
        zero = torch.tensor(0.0, device=device)
        gumbel = torch.distributions.gumbel.Gumbel(zero, one).rsample
        {store}
    return gumbel(shape)


class TopKGate(torch.nn.Module):
    def forward(self, logits):
        return logits + gumbel_rsample(logits.shape, logits.device)
'''

SEQUENCE = '''import torch


class SequenceDescriptor:
    def __init__(self, sizes, device):
        self._blocks_per_group = tuple(torch.zeros(n, dtype=torch.int32, device={device}) for n in sizes)

    def step(self):
        return self._blocks_per_group[0].item()
'''


@pytest.mark.parametrize(("path", "text", "line"), [
    ("moe/auto_ep_layer.py", MOE_LAYER.replace("{close}", "self._row_weighting_checked = True"), 12),
    ("moe/sharded_moe.py", GUMBEL.replace("{store}", "gumbel_map[device] = gumbel"), 9),
    ("inference/ragged/sequence_descriptor.py", SEQUENCE.replace("{device}", '"cpu"'), 9),
], ids=["flag-closed-by-the-body", "memo-per-key", "tuple-of-host-tensors"])
def test_once_guards_and_host_tuples_are_left_alone(review_new_file, path, text, line):
    assert line not in review_new_file(path, text)


@pytest.mark.parametrize(("path", "text", "line", "rule"), [
    ("moe/auto_ep_layer.py", MOE_LAYER.replace("{close}", "pass"), 12, "device-workspace-allocated-per-call"),
    ("moe/sharded_moe.py", GUMBEL.replace("{store}", "pass"), 9, "host-to-device-copy-per-call"),
    ("inference/ragged/sequence_descriptor.py", SEQUENCE.replace("{device}", "device"), 9, "host-sync-in-hot-path"),
], ids=["flag-never-set", "memo-never-stored", "tuple-of-device-tensors"])
def test_the_same_shapes_that_run_every_time_are_reported(review_new_file, path, text, line, rule):
    assert review_new_file(path, text).get(line) == rule


LORA_PTRS = '''import torch

_LORA_PTR_DICT: dict[tuple[int, ...], torch.Tensor] = {}


def _get_ptr(lora_weights, device):
    key = tuple(w.data_ptr() for w in lora_weights)
    if (ptr_tensor := _LORA_PTR_DICT.get(key)) is not None:
        return ptr_tensor
    ptr_tensor = torch.tensor([w.data_ptr() for w in lora_weights], device=device, dtype=torch.uint64)
    {store}
    return ptr_tensor


class FusedMoELoRA(torch.nn.Module):
    def forward(self, x, lora_weights):
        return x, _get_ptr(lora_weights, x.device)
'''

POSITIONS = '''import torch


class RotaryCache(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self._positions = {}

    def forward(self, x):
        key = x.shape[0]
        if key in self._positions:
            return x + self._positions[key]
        positions = torch.tensor([key], device=x.device)
        {store}
        return x + positions
'''


@pytest.mark.parametrize(("path", "text", "store", "line"), [
    ("lora/ops/fused_moe_lora_op.py", LORA_PTRS, "_LORA_PTR_DICT[key] = ptr_tensor", 10),
    ("layers/rotary_cache.py", POSITIONS, "self._positions[key] = positions", 13),
], ids=["walrus-get", "key-in-cache"])
def test_code_after_a_return_on_a_cache_hit_runs_once_per_key(review_new_file, path, text, store, line):
    assert line not in review_new_file(path, text.replace("{store}", store))


@pytest.mark.parametrize(("path", "text", "line", "rule"), [
    ("lora/ops/fused_moe_lora_op.py", LORA_PTRS, 10, "host-to-device-copy-per-call"),
    ("layers/rotary_cache.py", POSITIONS, 13, "host-to-device-copy-per-call"),
], ids=["walrus-get-never-filled", "key-in-cache-never-filled"])
def test_the_same_code_when_nothing_fills_the_cache_is_reported(review_new_file, path, text, line, rule):
    assert review_new_file(path, text.replace("{store}", "pass")).get(line) == rule


MAMBA_METADATA = '''import torch


class MambaMetadataBuilder:
    def build(self, common_attn_metadata):
        query_lens_cpu = torch.diff(common_attn_metadata.query_start_loc_cpu)
        prefill_to_decode = common_attn_metadata.is_prefilling & (query_lens_cpu == 1)
        if torch.any({mask}).item():
            return True
        return False
'''


@pytest.mark.parametrize(("mask", "reported"), [
    ("prefill_to_decode", False),  # built from host lengths: torch.any of it stays on the host
    ("common_attn_metadata.is_prefilling", True),  # where this lives is not shown
], ids=["host-mask", "unknown-mask"])
def test_a_torch_reduction_of_a_host_value_is_a_host_value(review_new_file, mask, reported):
    found = review_new_file("attention/backends/mamba_attn.py", MAMBA_METADATA.replace("{mask}", mask))
    assert (found.get(8) == "host-sync-in-hot-path") is reported, found


# An optimizer's per-parameter state, filled on its first step: DeepSpeed's style
# (``setdefault``) and torch.optim's (``self.state[p]``, a defaultdict).
ADAM_STATE = '''import torch


class ZenFlowAdam(torch.optim.Optimizer):
    def step(self):
        for group in self.param_groups:
            for param in group["params"]:
                state = {state}
                if {test}:
                    state["step"] = torch.zeros((), dtype=torch.float32, device=param.device)
                param.add_(state["step"])
'''


@pytest.mark.parametrize(("state", "test", "once"), [
    ("self.state.setdefault(param, {})", "len(state) == 0", True),
    ("self.state[param]", "not state", True),
    ("{}", "len(state) == 0", False),  # a fresh dict each time: filled every step
    ("self.state[param]", "len(state) == 1", False),  # not a test of emptiness
], ids=["setdefault-len", "subscript-not", "fresh-local", "other-length"])
def test_optimizer_state_filled_on_the_first_step_runs_once_per_parameter(review_new_file, state, test, once):
    text = ADAM_STATE.replace("{state}", state).replace("{test}", test)
    assert (review_new_file("runtime/zenflow/zenflow_adam.py", text).get(10) is None) is once


# SGLang style: the cached value is read into a local, tested, then stored back.
IDENTITY_SCALE = '''import torch


class DSABackend:
    def __init__(self):
        self._identity_scale = None

    def forward_extend(self, q, dev):
        identity_scale = self._identity_scale
        if identity_scale is None:
            identity_scale = torch.tensor([1.0], dtype=torch.float32, device=dev)
            {store}
        return q * identity_scale
'''

# vLLM style: a hit returns the cached map while it still fits; a miss rebuilds and stores it.
AXIS_MAP = '''import torch


class Indexer(torch.nn.Module):
    def __init__(self, half):
        super().__init__()
        self.half = half
        self._axis_map_cache = None

    def _axis_map(self, device):
        cache = {read}
        if cache is not None and cache.device == device:
            return {returned}
        axis_map = torch.zeros(self.half, dtype=torch.int32)
        {store}
        return axis_map.to(device)

    def forward(self, x):
        return x[:, self._axis_map(x.device)]
'''


@pytest.mark.parametrize(("path", "text", "line"), [
    ("layers/attention/dsa_backend.py", IDENTITY_SCALE.replace("{store}", "self._identity_scale = identity_scale"), 11),
    ("layers/attention/indexer.py", AXIS_MAP.replace("{read}", "self._axis_map_cache").replace("{returned}", "cache")
     .replace("{store}", "self._axis_map_cache = axis_map.to(device)"), 16),
    ("layers/attention/indexer.py", AXIS_MAP.replace("{read}", 'getattr(self, "_axis_map_cache", None)')
     .replace("{returned}", "self._axis_map_cache").replace("{store}", "self._axis_map_cache = axis_map.to(device)"), 16),
], ids=["local-of-the-attribute", "hit-while-it-fits", "getattr-hit"])
def test_a_cache_kept_in_an_attribute_read_through_a_local_runs_once(review_new_file, path, text, line):
    assert line not in review_new_file(path, text)


@pytest.mark.parametrize(("path", "text", "line", "rule"), [
    ("layers/attention/dsa_backend.py", IDENTITY_SCALE.replace("{store}", "pass"), 11, "host-to-device-copy-per-call"),
    ("layers/attention/indexer.py", AXIS_MAP.replace("{read}", "self._axis_map_cache").replace("{returned}", "cache")
     .replace("{store}", "pass"), 16, "host-to-device-copy-per-call"),
    # The hit returns something else: the attribute is a flag read on the way, not a cache.
    ("layers/attention/indexer.py", AXIS_MAP.replace("{read}", "self._axis_map_cache").replace("{returned}", "None")
     .replace("{store}", "self._axis_map_cache = axis_map.to(device)"), 16, "host-to-device-copy-per-call"),
], ids=["never-stored", "hit-never-stored", "hit-returns-something-else"])
def test_the_same_shapes_that_keep_nothing_are_reported(review_new_file, path, text, line, rule):
    assert review_new_file(path, text).get(line) == rule


# Host mirrors of device indices, read once and kept: the guard tests locals read from
# the mirrors, ``or``-ed, and the body stores both (SGLang's diffusion KV cache). Storing
# only one of them leaves the guard open for the other, and its read on every call.
SGLANG_INDEX_MIRRORS = '''import torch


class CausalAttentionCache(torch.nn.Module):
    def __init__(self, device):
        super().__init__()
        self.global_end_index = torch.zeros((), dtype=torch.long, device=device)
        self.local_end_index = torch.zeros((), dtype=torch.long, device=device)
        self.global_end_index_int = None
        self.local_end_index_int = None

    def forward(self, x):
        global_end = self.global_end_index_int
        local_end = self.local_end_index_int
        if global_end is None or local_end is None:
            global_end = int(self.global_end_index.item())
            local_end = int(self.local_end_index.item())
            self.global_end_index_int = global_end
            {store}
        return x[:, local_end:global_end]
'''


@pytest.mark.parametrize(("store", "reported"), [
    ("self.local_end_index_int = local_end", False),
    ("pass", True),  # one mirror never kept: the guard stays open
], ids=["both-mirrors-kept", "one-mirror-never-kept"])
def test_a_guard_on_locals_read_from_kept_mirrors_runs_once(review_new_file, store, reported):
    found = review_new_file("sglang/multimodal_gen/runtime/layers/kvcache/causal_cache.py",
                            SGLANG_INDEX_MIRRORS.replace("{store}", store))
    assert (16 in found) is reported, found
