"""Host values followed through the forms engines write them in: a cast that names no
device keeps a host tensor on the host, a ``torch.nn.functional`` op runs where its input
is, and an assertion that a value is on the CPU makes it a host value for what follows.
Each beside a look-alike that stays reported, in two engines' styles, end to end."""

from __future__ import annotations

import pytest

VLLM_PACKING = '''import torch
from torch import nn


class Siglip2Packer(nn.Module):
    def forward(self, pixel_values, spatial_shapes):
        {assertion}
        lengths = (spatial_shapes[:, 0] * spatial_shapes[:, 1]).to(dtype=torch.int64)
        lengths_list = lengths.tolist()
        return pixel_values.split(lengths_list)
'''

SGLANG_WINDOWS = '''import torch
import torch.nn.functional as F
from torch import nn


class VisionWindows(nn.Module):
    def forward(self, hidden, grid_t, grid_h, grid_w):
        index = torch.arange(grid_t * grid_h * grid_w{device}).reshape(grid_t, grid_h, grid_w)
        index_padded = F.pad(index, (0, 2, 0, 2), "constant", -100)
        kept = index_padded[index_padded != -100]
        return hidden[kept]
'''


@pytest.mark.parametrize(("assertion", "reported"), [
    ('assert spatial_shapes.device.type == "cpu", "keep the shapes on the host"', False),
    ("assert spatial_shapes.is_cpu", False),
    ("assert spatial_shapes.dim() == 2 and spatial_shapes.is_cpu", False),  # a conjunct holds it
    ("assert spatial_shapes.dim() == 2", True),  # says nothing of where it lives
    ("assert not spatial_shapes.is_cpu", True),  # asserts the opposite
    ("assert spatial_shapes.is_cpu or pixel_values.is_cpu", True),  # either may hold
], ids=["device-type", "is-cpu", "conjunct", "unrelated-assert", "negated", "either"])
def test_an_assertion_that_a_value_is_on_the_cpu_makes_it_a_host_value(review_new_file, assertion, reported):
    found = review_new_file("vllm/model_executor/models/siglip2_packing.py", VLLM_PACKING.format(assertion=assertion))
    assert (9 in found) is reported, found


@pytest.mark.parametrize(("device", "reported"), [
    ("", False),  # a factory with no device: the padded index is a host tensor
    (", device=hidden.device", True),
], ids=["host-index", "device-index"])
def test_a_functional_op_runs_where_its_input_is(review_new_file, device, reported):
    found = review_new_file("sglang/srt/models/vision_windows.py", SGLANG_WINDOWS.format(device=device))
    assert (10 in found) is reported, found


VLLM_CONV_METADATA = '''import torch


def compute_conv_metadata(query_start_loc, *, device: torch.device):
    {assertion}
    seqlens = query_start_loc.diff()
    nums = -(-seqlens // 8)
    total = nums.sum().item()
    return torch.empty(total, device=device)
'''


@pytest.mark.parametrize(("assertion", "reported"), [
    ('assert query_start_loc.device.type == "cpu"', False),  # ``diff`` and arithmetic stay on the host
    ("assert query_start_loc.dim() == 1", True),
], ids=["asserted-host", "unknown"])
def test_a_difference_of_a_host_tensor_is_a_host_tensor(review_new_file, assertion, reported):
    found = review_new_file("vllm/v1/attention/backends/conv_metadata.py", VLLM_CONV_METADATA.format(assertion=assertion))
    assert (8 in found) is reported, found


VLLM_PREFILL_LENS = '''import torch


class AiterFlashAttentionMetadataBuilder:
    def build(self, common_attn_metadata, num_prefills, num_decodes):
        seq_lens = (
            common_attn_metadata.seq_lens.{moved}()
            if num_prefills > 0
            else None
        )
        assert seq_lens is not None
        return seq_lens[num_decodes:].max().item()
'''


@pytest.mark.parametrize(("moved", "reported"), [
    ("cpu", False),  # the host copy, or nothing
    ("clone", True),  # still on the device
], ids=["host-or-none", "device-or-none"])
def test_a_conditional_host_copy_is_a_host_value(review_new_file, moved, reported):
    found = review_new_file("vllm/v1/attention/backends/rocm_aiter_fa.py", VLLM_PREFILL_LENS.format(moved=moved))
    assert (12 in found) is reported, found


SGLANG_TRANSFER = '''import numpy as np
import torch


class MooncakeKVManager:
    def send_kvcache_slice(self, prefill_kv_indices, page_size, item_len):
        page_indices = prefill_kv_indices.reshape(-1, 1){cast}
        offsets = {offsets}

        def process_layer(layer_ptr):
            addrs = layer_ptr + page_indices * item_len + offsets
            addr_list = addrs.reshape(-1).tolist()
            return self.engine.transfer(addr_list)

        return [process_layer(p) for p in self.layer_ptrs]
'''


@pytest.mark.parametrize(("cast", "offsets", "reported"), [
    (".astype(np.int64)", "np.arange(page_size).reshape(1, -1)", False),  # numpy values the closure reads
    ("", "np.arange(page_size).reshape(1, -1)", False),  # one numpy operand makes the sum a host value
    ("", "torch.arange(page_size, device=prefill_kv_indices.device)", True),
], ids=["astype", "numpy-offsets", "device-offsets"])
def test_a_closure_reads_the_values_its_function_bound(review_new_file, cast, offsets, reported):
    text = SGLANG_TRANSFER.format(cast=cast, offsets=offsets)
    found = review_new_file("sglang/srt/disaggregation/mooncake/conn.py", text)
    assert (12 in found) is reported, found


# Names bound by unpacking: the parts of a split of a pinned staging buffer live where it
# does (vLLM's indexer metadata), and a name unpacked from a tuple written out is its own
# element (an SGLang-style pair of lengths and starts).
VLLM_STAGING = '''import torch


class IndexerMetadataBuilder(torch.nn.Module):
    def forward(self, n, width, history_pages, device):
        staging = torch.empty(3 * n + 1 + n * width, dtype=torch.int32, {pinned})
        cu_seqlens_q, pages, offsets, table = staging.split([n + 1, n, n, n * width])
        pages.copy_(history_pages)
        return int(pages.max())
'''
SGLANG_PAIR = '''import torch


class DraftBatch(torch.nn.Module):
    def forward(self, num_reqs, device):
        lens, starts = torch.zeros(num_reqs, dtype=torch.int32, device=device), torch.arange(num_reqs)
        first = int(starts.max())
        return first, int(lens.max())
'''


@pytest.mark.parametrize(("pinned", "reported"), [("pin_memory=True", False), ("device=device", True)],
                         ids=["pinned-staging", "device-staging"])
def test_the_parts_of_a_split_live_where_it_does(review_new_file, pinned, reported):
    found = review_new_file("vllm/models/minimax_m3/indexer_metadata.py", VLLM_STAGING.format(pinned=pinned))
    assert (9 in found) is reported, found


def test_a_name_unpacked_from_a_written_tuple_is_its_own_element(review_new_file):
    found = review_new_file("sglang/srt/speculative/draft_batch.py", SGLANG_PAIR)
    assert 7 not in found and found.get(8) == "device-scalar-read-in-hot-path", found


# SGLang's batch-result style: the result's fields are asserted copied to the host first.
SGLANG_SPEC_TOKENS = '''import torch


class SchedulerBatchResultProcessor:
    def process_batch_result_decode(self, batch, result):
        {assertion}
        self.stats.observe(batch)
        {reassigned}
        next_token_ids = result.next_token_ids.tolist()
        return next_token_ids
'''

# vLLM's input-batch style: a field of ``self`` asserted on the CPU in the same method.
VLLM_INPUT_BATCH = '''import torch
from torch import nn


class InputBatchRunner(nn.Module):
    def forward(self, hidden):
        {assertion}
        num_tokens = int(self.input_batch.num_tokens.max().item())
        return hidden[:num_tokens]
'''


def test_an_assertion_that_a_field_is_on_the_cpu_makes_it_a_host_value(review_added):
    sglang = {  # (assertion, a statement after it): whether the read is reported
        "asserted": ("assert result.next_token_ids.is_cpu", "", False),
        "conjunct": ('assert result.accept_lens.is_cpu and result.next_token_ids.device.type == "cpu"', "", False),
        "other-field": ("assert result.accept_lens.is_cpu", "", True),
        "reassigned": ("assert result.next_token_ids.is_cpu", "result = self.resolve(result)", True),  # a new result since
        "one-path": ("if batch.is_prefill:\n            assert result.next_token_ids.is_cpu", "", True),
    }
    vllm = {"asserted": ("assert self.input_batch.num_tokens.is_cpu", False),
            "unknown": ("assert self.input_batch.num_tokens.dim() == 1", True)}
    texts = {f"sglang/srt/managers/scheduler_components/result_{name}.py":
             SGLANG_SPEC_TOKENS.format(assertion=assertion, reassigned=after) for name, (assertion, after, _) in sglang.items()}
    texts |= {f"vllm/v1/worker/input_batch_{name}.py": VLLM_INPUT_BATCH.format(assertion=assertion)
              for name, (assertion, _) in vllm.items()}
    found = review_added(texts)
    reported = {(f["path"], f["line"]) for f in found if f["rule"] == "host-sync-in-hot-path"}
    lines = {path: next(i for i, line in enumerate(text.splitlines(), 1) if ".tolist()" in line or ".item()" in line)
             for path, text in texts.items()}
    expected = {f"sglang/srt/managers/scheduler_components/result_{n}.py": r for n, (_, _, r) in sglang.items()}
    expected |= {f"vllm/v1/worker/input_batch_{n}.py": r for n, (_, r) in vllm.items()}
    assert {path: (path, lines[path]) in reported for path in texts} == expected, found
