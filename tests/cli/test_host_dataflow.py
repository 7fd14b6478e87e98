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


SGLANG_MAX_EXTEND = '''import torch
from typing import List, Optional
from torch import nn


class ForwardBatch:
    extend_lens: Optional[{declared}] = None


class HpcOpsMetadata(nn.Module):
    def forward(self, forward_batch: ForwardBatch):
        max_q = max(forward_batch.extend_lens)
        return int(max_q.item()) if isinstance(max_q, torch.Tensor) else int(max_q)
'''

VLLM_TOP_K = '''import torch
from torch import nn


class TopKSampler(nn.Module):
    def forward(self, logits: torch.Tensor, k: {declared}):
        k_value = k.item() if isinstance(k, torch.Tensor) else k
        return logits.topk(k_value)
'''


DECLARED_CASES = {
    "sglang": ("sglang/srt/layers/attention/hpc_ops_metadata.py", SGLANG_MAX_EXTEND, 13),
    "vllm": ("vllm/v1/sample/top_k_sampler.py", VLLM_TOP_K, 7),
}


@pytest.mark.parametrize(("engine", "declared", "reported"), [
    ("sglang", "List[int]", False),  # the maximum of a list of ints is an int: the tensor arm breaks the annotation
    ("sglang", "torch.Tensor", True),
    ("vllm", "int", False),
    ("vllm", "int | torch.Tensor", True),  # declared either: the tensor arm is a real one
], ids=["sglang-declared-ints", "sglang-declared-tensor", "vllm-declared-int", "vllm-declared-either"])
def test_a_value_declared_a_python_number_stays_one_under_an_isinstance_test(review_new_file, engine, declared, reported):
    _assert_reported(review_new_file, DECLARED_CASES[engine], reported, declared=declared)


SGLANG_LAYERWISE_OFFLOAD = '''import torch
from torch import nn


class PiGemmaModel(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.layerwise_cpu_offload_device = None

    def configure_layerwise_cpu_offload(self, compute_device):
        self.layerwise_cpu_offload_device = {device}

    def forward(self, inputs_embeds):
        device = self.layerwise_cpu_offload_device
        inputs_embeds = inputs_embeds.to(device=device)
        for layer in self.layers:
            inputs_embeds = layer(inputs_embeds)
        return inputs_embeds
'''

VLLM_OFFLOADER = '''import torch
from torch import nn


class OffloadedMLP(nn.Module):
    def __init__(self, mlp, device):
        super().__init__()
        self.mlp = mlp
        self.cpu_offload_target = {device}

    def forward(self, x):
        self.mlp.to(self.cpu_offload_target)
        out = self.mlp(x).to(self.cpu_offload_target)
        return out
'''


OFFLOAD_CASES = {
    "sglang": ("sglang/multimodal_gen/runtime/models/vlas/pi_gemma.py", SGLANG_LAYERWISE_OFFLOAD, 16),
    "vllm": ("vllm/model_executor/layers/offloaded_mlp.py", VLLM_OFFLOADER, 13),
}


@pytest.mark.parametrize(("engine", "device", "reported"), [
    ("sglang", "torch.device(compute_device)", False),  # named for CPU offload; it is the compute device
    ("sglang", 'torch.device("cpu")', True),
    ("vllm", "torch.device(device)", False),
    ("vllm", '"cpu"', True),
], ids=["sglang-compute-device", "sglang-cpu", "vllm-compute-device", "vllm-cpu"])
def test_a_device_attribute_is_where_its_class_puts_it_whatever_its_name(review_new_file, engine, device, reported):
    _assert_reported(review_new_file, OFFLOAD_CASES[engine], reported, device=device)


VLLM_DUAL_ENCODER = '''import torch
from torch import nn


def merge_dual_encoder_text_and_vision(text_features, vision_embeds, is_multimodal):
    if is_multimodal is None or not bool(is_multimodal.any().item()):
        return text_features
    mm_mask = is_multimodal.to(device=vision_embeds.device{non_blocking})
    return torch.where(mm_mask.unsqueeze(-1), vision_embeds, text_features)


class CLIPDualEncoder(nn.Module):
    def forward(self, text_features, vision_embeds, is_multimodal):
        return merge_dual_encoder_text_and_vision(text_features, vision_embeds, is_multimodal)
'''

SGLANG_ROPE_POSITIONS = '''import torch
from torch import nn


class MRotaryPositions(nn.Module):
    def forward(self, hidden, positions):
        {first}
        {second}
        return hidden[:, :max_pos], positions
'''


@pytest.mark.parametrize(("engine", "variant", "line", "reported"), [
    ("vllm", {"non_blocking": ", non_blocking=True"}, 6, False),  # an overlapping upload: the caller hands in host memory
    ("vllm", {"non_blocking": ""}, 6, True),  # a plain ``.to``: written for either place
    ("sglang", {"first": "max_pos = positions.max().item()", "second": "positions_gpu = positions.cuda(non_blocking=True)"},
     7, False),
    ("sglang", {"first": "positions = positions.cuda(non_blocking=True)", "second": "max_pos = positions.max().item()"},
     8, True),  # read after the upload
], ids=["vllm-non-blocking-upload", "vllm-plain-to", "sglang-non-blocking-upload", "sglang-read-after-upload"])
def test_a_parameter_the_function_uploads_without_waiting_is_a_host_value(review_new_file, engine, variant, line, reported):
    path, template = {
        "sglang": ("sglang/srt/layers/rotary_positions.py", SGLANG_ROPE_POSITIONS),
        "vllm": ("vllm/model_executor/models/clip_dual.py", VLLM_DUAL_ENCODER),
    }[engine]
    _assert_reported(review_new_file, (path, template, line), reported, **variant)


SGLANG_PAGED_LENS = '''import torch
from torch import nn


class DequantWorkspace(nn.Module):
    def forward(self, q, forward_batch):
        raw_lens = {iterated}
        paged_lens = [int(n.item()) if isinstance(n, torch.Tensor) else int(n) for n in raw_lens]
        return q[: sum(paged_lens)]
'''

VLLM_BLOCK_COUNTS = '''import torch
from torch import nn


class BlockTableWriter(nn.Module):
    def forward(self, block_table, num_blocks):
        total = 0
        for count in {iterated}:
            total += count.item()
        return block_table[:total]
'''


ELEMENT_CASES = {
    "sglang": ("sglang/srt/layers/attention/dequant_workspace.py", SGLANG_PAGED_LENS, 8),
    "vllm": ("vllm/v1/worker/block_table_writer.py", VLLM_BLOCK_COUNTS, 9),
}


@pytest.mark.parametrize(("engine", "iterated", "reported"), [
    ("sglang", "forward_batch.extend_prefix_lens.tolist()", False),  # elements of a ``.tolist()`` are numbers
    ("sglang", "forward_batch.extend_prefix_lens", True),  # elements of a tensor of unknown place
    ("vllm", "num_blocks.cpu()", False),
    ("vllm", "num_blocks.to(block_table.device)", True),
], ids=["sglang-tolist", "sglang-unknown", "vllm-cpu", "vllm-device"])
def test_an_element_of_a_host_container_is_a_host_value(review_new_file, engine, iterated, reported):
    _assert_reported(review_new_file, ELEMENT_CASES[engine], reported, iterated=iterated)


VLLM_SAMPLED_IDS = '''import torch
from torch import nn


class HPUSampledTokens(nn.Module):
    def forward(self, outputs, num_decodes, spec):
        decode_ids = []
        for out in outputs:
            decode_ids.append(out.sampled_token_ids[:num_decodes].flatten())
        if spec:
            decode_ids = [torch.tensor(v, device="cpu").int() for v in spec]
        host = [t.cpu() for t in decode_ids]
        return host
'''


def test_an_element_of_a_list_the_function_grows_is_not_read_from_its_last_assignment(review_new_file):
    # ``decode_ids`` holds device tensors where ``spec`` is empty: its last assignment (host
    # tensors) does not say what the appended elements are.
    found = review_new_file("vllm_gaudi/v1/worker/hpu_sampled_tokens.py", VLLM_SAMPLED_IDS)
    assert 12 in found, found


def _assert_reported(review_new_file, case: tuple[str, str, int], reported: bool, **values: str) -> None:
    """Review ``case`` (path, template, line) filled with ``values`` as a new file; its line
    is reported or not."""
    path, template, line = case
    found = review_new_file(path, template.format(**values))
    assert (line in found) is reported, found
