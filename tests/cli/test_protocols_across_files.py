"""How often a method runs is read from the protocol model of its class's bases through
base classes defined in other files, and reaches the private helpers only such methods
call: a processor subclassing an engine's processor subclass runs per request, and so
does its helper; a model layer deriving the same way stays per step. Reviewed end to end
with no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

VLLM_FILES = {
    "vllm/multimodal/processing.py": '''class BaseMultiModalProcessor:
    def apply(self, prompt, mm_data):
        return prompt
''',
    "vllm/model_executor/models/qwen_vl.py": '''import torch
from vllm.multimodal.processing import BaseMultiModalProcessor


class QwenVLProcessingInfo:
    pass


class QwenVLMultiModalProcessor(BaseMultiModalProcessor[QwenVLProcessingInfo]):
    def _get_prompt_updates(self, mm_items):
        return mm_items


class QwenVLVisionBlock(torch.nn.Module):
    def forward(self, x):
        return x
''',
    "vllm/model_executor/models/utils_vl.py": '''import torch

__all__ = ["_merged_grid_sizes"]


def _merged_grid_sizes(grid_thw, merge_size):
    return (grid_thw.prod(-1) // merge_size**2).tolist()
''',
}

VLLM_HEAD = ("vllm/model_executor/models/qwen_vl_ext.py", '''import torch
from vllm.model_executor.models.qwen_vl import QwenVLMultiModalProcessor, QwenVLVisionBlock
from vllm.model_executor.models.utils_vl import _merged_grid_sizes


class QwenVLExtMultiModalProcessor(QwenVLMultiModalProcessor):
    def _get_prompt_updates(self, mm_items):
        grid_thw = mm_items["image_grid_thw"]
        sizes = _merged_grid_sizes(grid_thw, 2)
        longest = grid_thw.max().item()
        return sizes, longest


class QwenVLExtVisionBlock(QwenVLVisionBlock):
    def forward(self, x):
        return x.max().item()
''')

SGLANG_FILES = {
    "sglang/srt/multimodal/processors/base_processor.py": '''class BaseMultimodalProcessor:
    async def process_mm_data_async(self, image_data, input_text, request_obj):
        return None
''',
    "sglang/srt/multimodal/processors/qwen_vl.py": '''import torch
from sglang.srt.multimodal.processors.base_processor import BaseMultimodalProcessor


class QwenVLImageProcessor(BaseMultimodalProcessor):
    async def process_mm_data_async(self, image_data, input_text, request_obj):
        return None
''',
}

SGLANG_HEAD = ("sglang/srt/multimodal/processors/qwen_vl_video.py", '''import torch
from sglang.srt.multimodal.processors.qwen_vl import QwenVLImageProcessor


class QwenVLVideoProcessor(QwenVLImageProcessor):
    async def process_mm_data_async(self, image_data, input_text, request_obj):
        frames = request_obj.frame_lengths
        total = frames.sum().item()
        return total
''')


def _review(repo, cli, files: dict[str, str], head: tuple[str, str], added: dict[str, str] | None = None,
            config: str = "") -> dict[tuple[str, int], str]:
    for path, text in files.items():
        repo.write(path, text)
    if config:
        repo.write("rltrefactor.toml", config)
    repo.write(head[0], "")
    repo.commit("base")
    for path, text in {head[0]: head[1], **(added or {})}.items():
        repo.write(path, text)
    run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    assert run.code in (0, 1), run.err
    return {(f["path"], line): f["rule"] for f in run.json()["findings"] for line in (f["line"], *f.get("also_at", []))}


@pytest.mark.parametrize(("files", "head", "lines"), [
    (VLLM_FILES, VLLM_HEAD, [10]),
    (SGLANG_FILES, SGLANG_HEAD, [8]),
], ids=["vllm", "sglang"])
def test_a_processor_two_bases_away_from_the_model_runs_per_request(repo, cli, files, head, lines):
    found = _review(repo, cli, files, head)
    assert not [line for line in lines if (head[0], line) in found], found


def test_a_private_helper_only_processors_call_runs_per_request(repo, cli):
    files = dict(VLLM_FILES)
    path = "vllm/model_executor/models/utils_vl.py"
    helper = files.pop(path)
    found = _review(repo, cli, files, VLLM_HEAD, added={path: helper})
    assert (path, 7) not in found, found  # only the processor calls it
    without_index = _review_again(repo, cli, path, helper)
    assert without_index.get((path, 7)) == "host-sync-in-hot-path", without_index


def _review_again(repo, cli, path: str, text: str) -> dict[tuple[str, int], str]:
    """The same change reviewed with the call index off."""
    repo.write("rltrefactor.toml", "call-index = false\n")
    run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    return {(f["path"], line): f["rule"] for f in run.json()["findings"] for line in (f["line"], *f.get("also_at", []))}


@pytest.mark.parametrize(("files", "head", "line"), [
    (VLLM_FILES, VLLM_HEAD, 10),
    (SGLANG_FILES, SGLANG_HEAD, 8),
], ids=["vllm", "sglang"])
def test_per_file_reading_alone_cannot_see_the_base_two_files_away(repo, cli, files, head, line):
    # The same change with the call index off: only the file's own bases are read, and a
    # processor's subclass in another file looks like any other class.
    found = _review(repo, cli, files, head, config="call-index = false\n")
    assert found.get((head[0], line)) == "host-sync-in-hot-path", found


def test_a_layer_deriving_from_a_layer_in_another_file_stays_per_step(repo, cli):
    found = _review(repo, cli, VLLM_FILES, VLLM_HEAD)
    assert found.get((VLLM_HEAD[0], 16)) == "host-sync-in-hot-path", found


def test_a_helper_called_per_request_and_from_offline_code_is_offline_and_the_scan_finishes(repo, cli):
    # Resolved: the processor's per-request call. Unresolved (a receiver of no known class):
    # the benchmark's. Together they make the helper offline, whose chain starts at the one
    # resolved caller.
    files = dict(VLLM_FILES)
    files["benchmarks/benchmark_grid.py"] = '''def benchmark_grid(loader, grid_thw):
    return loader._merged_grid_sizes(grid_thw, 2)
'''
    for path, text in {**files, VLLM_HEAD[0]: VLLM_HEAD[1]}.items():
        repo.write(path, text)
    repo.commit("all")
    run = cli("review", ".", "--format", "json", "--no-cache", cwd=repo.path)
    assert run.code in (0, 1), run.err
    helper = [f for f in run.json()["findings"] if f["path"] == "vllm/model_executor/models/utils_vl.py"]
    assert helper == [], helper


RUNNER_FILES = {
    "srt/model_executor/runner/base_runner.py": '''import torch


class BaseRunner:
    def _dummy_run(self, batch_size):
        ids = torch.tensor(list(range(batch_size)), device="cuda")
        return ids

    def {outer}(self):
        def forward_fn(batch_size):
            return self._dummy_run(batch_size)
        return tune(forward_fn)
''',
}


@pytest.mark.parametrize(("outer", "reported"), [
    ("_flashinfer_autotune", False),  # a closure of tuning code runs while the tuning does
    ("_install_step_hook", True),  # a closure nothing marks cold: its name makes it a per-step root
], ids=["tuning-closure", "plain-closure"])
def test_a_closure_of_cold_code_is_no_per_step_root(repo, cli, outer, reported):
    path = "srt/model_executor/runner/base_runner.py"
    repo.write("srt/__init__.py", "")
    repo.commit("base")
    repo.write(path, RUNNER_FILES[path].replace("{outer}", outer))
    run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    lines = {f["line"] for f in run.json()["findings"] if f["path"] == path}
    assert (6 in lines) is reported, run.json()["findings"]


DRAFT_MODEL = '''import torch

from srt.layers.linear import LinearBase


class Glm4MoeForCausalLM(torch.nn.Module):
    def {method}(self, embed, head):
        del self.model.embed_tokens.weight
        self.model.embed_tokens.weight = embed
        torch.cuda.empty_cache()
        torch.cuda.synchronize()


class ColumnParallelLinear(LinearBase):
    def {loader}(self, param, loaded_weight):
        scale = loaded_weight.abs().max().item()
        param.data.copy_(loaded_weight / scale)
'''


@pytest.mark.parametrize(("method", "loader", "reported"), [
    ("set_embed_and_head", "weight_loader", set()),
    ("share_embed_and_head_each_step", "rescale_rows", {11, 16}),
], ids=["load-time-conventions", "same-bodies-other-names"])
def test_weight_loaders_and_draft_embedding_sharing_run_once(repo, cli, method, loader, reported):
    path = "srt/models/glm4_moe.py"
    repo.write("srt/layers/linear.py", "import torch\n\n\nclass LinearBase(torch.nn.Module):\n    pass\n")
    repo.write(path, "")
    repo.commit("base")
    repo.write(path, DRAFT_MODEL.replace("{method}", method).replace("{loader}", loader))
    run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    lines = {line for f in run.json()["findings"] if f["path"] == path for line in (f["line"], *f.get("also_at", []))}
    assert lines & {11, 16} == reported, run.json()["findings"]


STAGE_BASE = ("sglang/multimodal_gen/runtime/pipelines_core/stages/base.py", '''from abc import ABC, abstractmethod


class PipelineStage(ABC):
    def __call__(self, batch, server_args):
        return self.forward(batch, server_args)

    @abstractmethod
    def forward(self, batch, server_args):
        raise NotImplementedError
''')

STAGE = ("sglang/multimodal_gen/runtime/pipelines_core/stages/flow_denoising.py", '''import torch

from sglang.multimodal_gen.runtime.pipelines_core.stages.base import PipelineStage


class FlowDenoisingStage(PipelineStage):
    def __init__(self, transformer, scheduler):
        super().__init__()
        self.transformer = transformer
        self.scheduler = scheduler

    def forward(self, batch, server_args):
        latents = batch.latents
        for t in batch.timesteps:
            latents = self._run_denoising_step(latents, t, batch)
        return latents

    def _run_denoising_step(self, latents, t, batch):
        noise = self.transformer(latents, t, batch.prompt_embeds)
        return self.scheduler.step(noise, t, latents)
''')


@pytest.mark.parametrize(("old", "new", "line", "reported"), [
    ('''        latents = batch.latents
''', '''        latents = batch.latents
        steps = int(batch.timesteps.numel().item() if torch.is_tensor(batch.timesteps) else len(batch.timesteps))
''', 14, False),  # once per request: the stage's forward
    ('''        noise = self.transformer(latents, t, batch.prompt_embeds)
''', '''        noise = self.transformer(latents, t, batch.prompt_embeds)
        if noise.isnan().any().item():
            raise ValueError("the transformer gave NaN")
''', 20, True),  # once per denoising step: the stage's step method
], ids=["stage-forward", "denoising-step"])
def test_a_diffusion_stage_runs_per_request_and_its_denoising_step_per_step(repo, cli, old, new, line, reported):
    found = _review(repo, cli, dict([STAGE_BASE]), (STAGE[0], STAGE[1].replace(old, new)))
    assert ((STAGE[0], line) in found) is reported, found


ENCODER_BASES = {
    "sglang": ("sglang/multimodal_gen/runtime/models/encoders/base.py", "sglang.multimodal_gen.runtime.models.encoders.base"),
    "fastvideo": ("fastvideo/models/encoders/base.py", "fastvideo.models.encoders.base"),
}
ENCODER_BASE_TEXT = '''from torch import nn


class TextEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
'''
ENCODER_HEAD = '''import torch
from torch import nn
from {module} import TextEncoder


def _rope_positions(grid_thw):
    return torch.arange(int(grid_thw.max().item()))


class Qwen2_5_VLTextEncoder(TextEncoder):
    def forward(self, input_ids, grid_thw):
        positions = _rope_positions(grid_thw)
        return self.embed(input_ids) + positions
'''
DIT_BLOCK = '''from torch import nn


class WanTransformerBlock(nn.Module):
    def forward(self, hidden, timestep):
        if timestep.max().item() > 900:
            return hidden * 2
        return hidden
'''


@pytest.mark.parametrize("style", sorted(ENCODER_BASES))
def test_a_diffusion_text_encoder_runs_per_request_and_the_transformer_per_step(repo, cli, style):
    base_path, module = ENCODER_BASES[style]
    head = (base_path.replace("encoders/base.py", "encoders/qwen_text.py"), ENCODER_HEAD.format(module=module))
    dit = base_path.replace("encoders/base.py", "dits/wan.py")
    found = _review(repo, cli, {base_path: ENCODER_BASE_TEXT}, head, added={dit: DIT_BLOCK})
    # The encoder and the helper only it calls run once per request; the DiT block runs per denoising step.
    assert found == {(dit, 6): "host-sync-in-hot-path"}, found


VAE_BASE = '''from abc import ABC

import torch
from torch import nn


class ParallelTiledVAE(ABC, nn.Module):
    def decode(self, latents):
        tiles = int(latents.shape[-1] // 64)
        if latents.isnan().any().item():
            raise ValueError("NaN latents")
        return self._decode_tiles(latents, tiles)

    def _decode_tiles(self, latents, tiles):
        return latents


class TimestepEmbedder(nn.Module):
    def forward(self, timestep):
        return timestep.max().item()
'''


@pytest.mark.parametrize(("base", "beside"), [("sglang/multimodal_gen/runtime/models/vaes/common.py", {}),
                                              ("fastvideo/models/vaes/common.py", {20: "host-sync-in-hot-path"})])
def test_the_framework_class_a_model_names_runs_as_the_model_says(repo, cli, base, beside):
    # ``ParallelTiledVAE`` is itself the base the model names: its own ``decode`` runs once
    # per request. A module beside it runs per request in SGLang's ``vaes`` package, whose
    # every class the runtime runs so; elsewhere it keeps ``torch.nn.Module``'s per step.
    found = _review(repo, cli, {}, (base, VAE_BASE))
    assert found == {(base, line): rule for line, rule in beside.items()}, found
