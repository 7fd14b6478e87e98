"""Where ``self.x`` lives is read from every value its class assigns it, and where a
framework field lives from the file's own declaration of it: a buffer the constructor
allocates on the CPU or pinned is a host value, one allocated on the device is proven a
device value (and the finding says where), and what stays unproven stays reported. Each
case is a change reviewed end to end with no configuration, in two engines' styles."""

from __future__ import annotations

BUFFERS_BASE = '''import torch


class MetadataBuffers:
    def __init__(self, size, device):
        self.device = device
        self.bootstrap_room = torch.zeros(size, dtype=torch.int64, device="cpu")
        self.output_ids = torch.zeros(size, dtype=torch.int64, device=device)
        self.lens = torch.zeros(size, dtype=torch.int32)

    def forward(self, i):
        return i
'''

BUFFERS_STEP = '''
    def forward(self, i):
        room = self.bootstrap_room[i].item()
        out = self.output_ids[i].item()
        n = self.lens[i].item()
        return room, out, n
'''

RUNNER_BASE = '''import torch


class InputBatch:
    def __init__(self, max_num_reqs, device):
        self.device = device
        self.num_computed_tokens = torch.zeros(max_num_reqs, dtype=torch.int32, pin_memory=True)
        self.token_ids = torch.zeros(max_num_reqs, dtype=torch.int64).cuda()
        self.block_table = None

    def set_block_table(self, table):
        self.block_table = table

    def execute_model(self, n):
        return n
'''

RUNNER_STEP = '''
    def execute_model(self, n):
        computed = self.num_computed_tokens[:n].tolist()
        last = self.token_ids[:n].tolist()
        blocks = self.block_table[:n].tolist()
        return computed, last, blocks
'''


def _review(repo, cli, path: str, base: str, step: str) -> list[dict]:
    repo.write(path, base)
    repo.commit("base")
    repo.write(path, base.rsplit("\n    def ", 1)[0] + step)
    run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    assert run.code in (0, 1), run.err
    return [f for f in run.json()["findings"] if f["path"] == path]


def _by_line(found: list[dict]) -> dict[int, dict]:
    return {line: f for f in found for line in (f["line"], *f.get("also_at", []))}


def test_a_buffer_the_constructor_allocates_on_the_cpu_is_a_host_value(repo, cli):
    found = _by_line(_review(repo, cli, "srt/disaggregation/buffers.py", BUFFERS_BASE, BUFFERS_STEP))
    assert 12 not in found, found  # `device="cpu"` in __init__: reading it waits for nothing
    assert found[13]["rule"] == "host-sync-in-hot-path"  # allocated on the engine's device
    # a factory given no device allocates wherever the default device points when the
    # class is built: unproven, so still reported
    assert found[14]["rule"] == "host-sync-in-hot-path"


def test_a_buffer_allocated_on_the_device_says_where_in_the_finding(repo, cli):
    found = _review(repo, cli, "srt/disaggregation/buffers.py", BUFFERS_BASE, BUFFERS_STEP)
    finding = next(f for f in found if f["line"] == 13)
    assert ("On the device: `self.output_ids` is assigned `torch.zeros(size, dtype=torch.int64, device=device)` "
            "in `__init__`.") in finding["notes"], finding


def test_a_pinned_buffer_is_a_host_value_and_a_cuda_one_a_device_value_in_a_runner(repo, cli):
    found = _by_line(_review(repo, cli, "worker/gpu_input_batch.py", RUNNER_BASE, RUNNER_STEP))
    assert 15 not in found, found  # pin_memory=True in __init__
    assert found[16]["rule"] == "host-sync-in-hot-path"
    assert any("`self.token_ids` is assigned" in note and "`__init__`" in note for note in found[16]["notes"])
    # assigned `None` in __init__ and a table handed in by another method: nothing shows where
    assert found[17]["rule"] == "host-sync-in-hot-path"
    assert not any("self.block_table` is assigned" in note for note in found[17]["notes"])


def test_an_attribute_also_assigned_from_outside_the_class_is_not_known_to_be_on_the_host(repo, cli):
    base = RUNNER_BASE + '''

def restore(batch, saved):
    batch.num_computed_tokens = saved
'''
    step_file = base.replace("    def execute_model(self, n):\n        return n\n", RUNNER_STEP.lstrip("\n"))
    repo.write("worker/gpu_input_batch.py", base)
    repo.commit("base")
    repo.write("worker/gpu_input_batch.py", step_file)
    run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    lines = {f["line"] for f in run.json()["findings"]} | {n for f in run.json()["findings"] for n in f.get("also_at", [])}
    assert 15 in lines, run.json()["findings"]  # `batch.num_computed_tokens = saved` may be anything


MODEL_BASE = '''import torch
from vllm.multimodal.inputs import MultiModalFieldConfig


class QwenVLMultiModalProcessor:
    def _get_mm_fields_config(self, hf_inputs, hf_processor_mm_kwargs):
        return dict(
            pixel_values=MultiModalFieldConfig.batched("image"),
            image_grid_thw=MultiModalFieldConfig.batched("image", keep_on_cpu=True),
        )


class QwenVLForConditionalGeneration(torch.nn.Module):
    def forward(self, image_input):
        return image_input
'''

MODEL_STEP = '''
    def forward(self, image_input):
        grid_thw = image_input["image_grid_thw"]
        sizes = grid_thw.prod(-1).tolist()
        first = image_input["pixel_values"][0].tolist()
        return sizes, first
'''

RESAMPLER_BASE = '''import torch

_FIELDS = {
    "pixel_values": MultiModalFieldConfig.batched("image"),
    "tgt_sizes": MultiModalFieldConfig.batched(
        "image",
        keep_on_cpu=True,
    ),
}


class Resampler(torch.nn.Module):
    def forward(self, x, tgt_sizes, patch_lens):
        return x
'''

RESAMPLER_STEP = '''
    def forward(self, x, tgt_sizes, patch_lens):
        max_h = tgt_sizes[:, 0].max().item()
        longest = patch_lens.max().item()
        return x, max_h, longest
'''


def test_a_field_the_file_declares_kept_on_the_cpu_is_a_host_value(repo, cli):
    found = _by_line(_review(repo, cli, "model_executor/models/qwen_vl.py", MODEL_BASE, MODEL_STEP))
    assert 16 not in found, found  # image_grid_thw: keep_on_cpu=True
    assert found[17]["rule"] == "host-sync-in-hot-path"  # pixel_values: not declared so


def test_a_parameter_named_as_a_declared_host_field_is_a_host_value(repo, cli):
    found = _by_line(_review(repo, cli, "model_executor/models/minicpm_resampler.py", RESAMPLER_BASE, RESAMPLER_STEP))
    assert 14 not in found, found  # tgt_sizes: the dict entry keeps it on the CPU
    assert found[15]["rule"] == "host-sync-in-hot-path"


def test_the_same_field_name_without_a_declaration_in_the_file_is_reported(repo, cli):
    base = RESAMPLER_BASE.replace("keep_on_cpu=True", "keep_on_cpu=False")
    found = _by_line(_review(repo, cli, "model_executor/models/minicpm_resampler.py", base, RESAMPLER_STEP))
    assert found[14]["rule"] == "host-sync-in-hot-path", found


FIELD_FACTORY = '''from vllm.multimodal.inputs import MultiModalFieldConfig


def _create_qwen2vl_field_factory(spatial_merge_size):
    def _field_config(hf_inputs):
        return dict(
            pixel_values=MultiModalFieldConfig.flat_from_sizes("image", hf_inputs["sizes"]),
            image_grid_thw=MultiModalFieldConfig.batched("image", keep_on_cpu=True),
        )
    return _field_config
'''

READER_BASE = '''import torch


class Qwen2_5_VLForConditionalGeneration(torch.nn.Module):
    def forward(self, image_input):
        return image_input
'''

READER_STEP = '''
    def forward(self, image_input):
        grid_thw = image_input["image_grid_thw"]
        sizes = grid_thw.prod(-1).tolist()
        return sizes
'''


def test_a_field_another_file_declares_kept_on_the_cpu_is_a_host_value(repo, cli):
    repo.write("vllm/model_executor/models/qwen2_vl.py", FIELD_FACTORY)
    found = _by_line(_review(repo, cli, "vllm/model_executor/models/qwen2_5_vl.py", READER_BASE, READER_STEP))
    assert 7 not in found, found


def test_a_field_another_file_declares_on_the_device_is_not_known_to_be_on_the_host(repo, cli):
    repo.write("vllm/model_executor/models/qwen2_vl.py", FIELD_FACTORY)
    repo.write("vllm/model_executor/models/other_vl.py", FIELD_FACTORY.replace(', keep_on_cpu=True', ''))
    found = _by_line(_review(repo, cli, "vllm/model_executor/models/qwen2_5_vl.py", READER_BASE, READER_STEP))
    assert found[7]["rule"] == "host-sync-in-hot-path", found
