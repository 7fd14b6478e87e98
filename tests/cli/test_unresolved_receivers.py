"""A module whose every instance is kept in one attribute, and whose every use seen runs
less often than per step (a multimodal model's vision tower, run while a request's images
are embedded), runs at an unknown frequency when a call of that attribute on an object of
unknown class (``runner.visual(...)``) may run it too: the protocol's per step is unproven,
and a full scan holds its findings back. A module also used per step stays per step
whatever such calls say. End to end, no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

VLLM_FILES = {
    "vllm/model_executor/models/interfaces.py": '''class SupportsMultiModal:
    def embed_multimodal(self, **kwargs):
        raise NotImplementedError
''',
    "vllm/model_executor/models/qwen_vl.py": '''import torch
from torch import nn

from vllm.model_executor.models.interfaces import SupportsMultiModal


class QwenVisionTransformer(nn.Module):
    def forward(self, pixels, grid_thw):
        sizes = grid_thw.prod(-1).tolist()
        return pixels.split(sizes)


class QwenRotary(nn.Module):
    def forward(self, positions):
        return positions.max().item()


class QwenVLForConditionalGeneration(nn.Module, SupportsMultiModal):
    def __init__(self):
        super().__init__()
        self.visual = QwenVisionTransformer()
        self.rotary = QwenRotary()

    def embed_multimodal(self, pixels, grid_thw):
        return self.visual(pixels, grid_thw)

    def forward(self, input_ids, positions):
        return self.rotary(positions)
''',
    "vllm/v1/worker/encoder_profiler.py": '''def profile_encoder(runner, pixels, grid_thw):
    return runner.visual(pixels, grid_thw), runner.rotary(grid_thw)
''',
}

SGLANG_FILES = {
    "sglang/srt/models/qwen_image_vl.py": '''from torch import nn


class QwenImageVisionTower(nn.Module):
    def forward(self, pixels, grid_thw):
        lengths = grid_thw.prod(-1).tolist()
        return pixels, lengths


class QwenImageVLForConditionalGeneration(nn.Module):
    def __init__(self):
        super().__init__()
        self.visual = QwenImageVisionTower()

    def get_image_feature(self, items):
        return self.visual(items.pixels, items.grid_thw)
''',
    "sglang/srt/model_executor/eager_runner.py": '''def run_extend(model, batch):
    return model.visual(batch.pixels, batch.grid_thw)
''',
}

CASES = {
    # files, the file of the module, its line held back, the line that stays per step (or None)
    "vllm": (VLLM_FILES, "vllm/model_executor/models/qwen_vl.py", 9, 15),
    "sglang": (SGLANG_FILES, "sglang/srt/models/qwen_image_vl.py", 6, None),
}


def _lines(run, path: str) -> dict[int, dict]:
    return {f["line"]: f for f in run.json()["findings"] if f["path"] == path}


@pytest.mark.parametrize("style", sorted(CASES))
def test_a_module_used_less_often_than_per_step_and_by_unknown_objects_runs_at_an_unknown_frequency(repo, cli, style):
    files, path, held, per_step = CASES[style]
    for name, text in files.items():
        repo.write(name, text)
    repo.commit("engine")
    scan = cli("review", path, "--format", "json", "--no-cache", cwd=repo.path)
    assert held not in _lines(scan, path), scan.json()["findings"]
    assert scan.json()["summary"]["unknown_frequency"] >= 1
    if per_step is not None:  # the rotary embedding is also run by the model's forward
        assert _lines(scan, path)[per_step]["evidence"].startswith("Per-step code:")
    shown = cli("review", path, "--format", "json", "--no-cache", "--show-unknown-frequency", cwd=repo.path)
    unknown = _lines(shown, path)[held]
    assert any("on an object of unknown class may run it too" in note for note in unknown["notes"]), unknown["notes"]
