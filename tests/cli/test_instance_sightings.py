"""Which instances of a module the repository shows, and how often they run: a class
bound to a local name and built through it (``vision_cls = Tower``), named in a string
compared with another, built in a test, or reached through a helper's parameter of the
holder's name is still seen, and so are a module-level alias nothing names again and the
backends an encoder builds from a registry of classes into a ``ModuleDict``; a class
attribute, a module-level alias named elsewhere, or an instance made outside tests and
not kept, is not. A tower whose every instance runs only in code nothing
is seen running runs at an unknown frequency: a full scan holds its findings back, where
the model's per-step ``forward`` calling it keeps them. End to end with no configuration,
in the styles of two engines."""

from __future__ import annotations

import pytest

from tests.cli.test_instance_reachability import (
    TOWER_READS, VLLM_INTERFACES, VLLM_MODEL, VLLM_TOWER, _review, _vllm,
)

TOWER_PATH = VLLM_TOWER[0]
TOWER_READ_LINE = 21  # the ``.item()`` TOWER_READS["tower"] adds to the tower's forward

# SGLang style: the model picks its tower class by architecture into a local name.
SGLANG_TOWERS = ("sglang/srt/models/vision_towers.py", '''import torch
from torch import nn


class WindowTower(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, pixel_values, grid_thw):
        cu_seqlens = grid_thw.prod(-1).cumsum(0)
        return self.proj(pixel_values)


class PatchTower(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, pixel_values, grid_thw):
        return self.proj(pixel_values)
''')

SGLANG_MODEL = ("sglang/srt/models/bailing_like_vl.py", '''import torch
from torch import nn

from sglang.srt.models.vision_towers import PatchTower, WindowTower


class BailingLikeVLForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        if config.vision_arch == "WindowTower":
            vision_cls = WindowTower
        else:
            vision_cls = PatchTower
        self.visual = vision_cls(config.dim)
        self.lm_head = nn.Linear(config.dim, config.vocab)

    def get_image_feature(self, items):
        return self.visual(items.pixel_values, items.grid_thw)

    def forward(self, input_ids, positions, forward_batch):
        return self.lm_head(forward_batch.hidden_states)
''')

SGLANG_READ = ('''        cu_seqlens = grid_thw.prod(-1).cumsum(0)
''', '''        cu_seqlens = grid_thw.prod(-1).cumsum(0)
        max_seqlen = int(cu_seqlens.max().item())
''')
SGLANG_READ_LINE = 12


def _sglang(model: str = SGLANG_MODEL[1]) -> dict[str, str]:
    return dict([SGLANG_TOWERS, (SGLANG_MODEL[0], model)])


def test_a_tower_built_through_a_local_name_runs_as_its_holder_calls_it(repo, cli):
    found = _review(repo, cli, _sglang(), SGLANG_TOWERS[0], *SGLANG_READ)
    assert (SGLANG_TOWERS[0], SGLANG_READ_LINE) not in found, found


def test_the_same_tower_called_by_the_models_forward_stays_per_step(repo, cli):
    per_step = SGLANG_MODEL[1].replace('''        return self.lm_head(forward_batch.hidden_states)''', '''        hidden = self.visual(forward_batch.pixel_values, forward_batch.grid_thw)
        return self.lm_head(hidden)''')
    found = _review(repo, cli, _sglang(per_step), SGLANG_TOWERS[0], *SGLANG_READ)
    assert found.get((SGLANG_TOWERS[0], SGLANG_READ_LINE)) == "host-sync-in-hot-path", found


@pytest.mark.parametrize("alias", [
    # A class attribute is reached as ``self.tower_cls(...)``, never by its bare name.
    ('''class BailingLikeVLForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
''', '''class BailingLikeVLForConditionalGeneration(nn.Module):
    tower_cls = WindowTower

    def __init__(self, config):
        super().__init__()
        self.probe = self.tower_cls(config.dim)
'''),
    # A module-level alias named again (here in a registry by name, loaded with ``getattr``).
    ('''class BailingLikeVLForConditionalGeneration(nn.Module):
''', '''EntryTower = WindowTower
ENTRY_CLASSES = ["EntryTower"]


class BailingLikeVLForConditionalGeneration(nn.Module):
'''),
    # A local name handed on builds instances wherever it goes.
    ('''        self.visual = vision_cls(config.dim)
''', '''        self.visual = vision_cls(config.dim)
        self.factory = build_later(vision_cls)
'''),
], ids=["class-attribute", "module-level", "handed-on"])
def test_a_tower_whose_alias_may_build_unseen_instances_stays_per_step(repo, cli, alias):
    found = _review(repo, cli, _sglang(SGLANG_MODEL[1].replace(*alias)), SGLANG_TOWERS[0], *SGLANG_READ)
    assert found.get((SGLANG_TOWERS[0], SGLANG_READ_LINE)) == "host-sync-in-hot-path", found


@pytest.mark.parametrize(("mention", "per_request"), [
    ('    return arch == "VisionTower"', True),  # compared with another string
    ('    return "VisionTower" != arch', True),
    ('    return {"VisionTower": arch}', False),  # a registry's key may be loaded with getattr
], ids=["compared", "compared-on-the-left", "registry-key"])
def test_a_class_named_in_a_compared_string_keeps_its_instances_seen(repo, cli, mention, per_request):
    files = _vllm()
    files["vllm/model_executor/models/arch_check.py"] = f"""def is_tower(arch):
{mention}
"""
    found = _review(repo, cli, files, TOWER_PATH, *TOWER_READS["tower"])
    assert ((TOWER_PATH, TOWER_READ_LINE) not in found) is per_request, found


@pytest.mark.parametrize(("path", "per_request"), [
    ("tests/models/test_vision_tower.py", True),  # a test's instance runs in the test
    ("vllm/tools/tower_probe.py", False),  # the engine's own code: an instance no holder keeps
], ids=["test", "engine-code"])
def test_an_instance_made_in_a_test_hides_no_other(repo, cli, path, per_request):
    files = _vllm()
    files[path] = '''from vllm.model_executor.models.vision_tower import VisionTower


def probe_tower(x, grid_thw):
    tower = VisionTower(4, 2)
    return tower(x, grid_thw)
'''
    found = _review(repo, cli, files, TOWER_PATH, *TOWER_READS["tower"])
    assert ((TOWER_PATH, TOWER_READ_LINE) not in found) is per_request, found


SHARDED_HELPER = ("vllm/multimodal/sharding.py", '''def run_sharded(visual, pixel_values, grid_thw):
    return visual(pixel_values, grid_thw=grid_thw)
''')


@pytest.mark.parametrize(("helper", "per_request"), [
    (SHARDED_HELPER[1], True),  # ``visual(...)`` calls its parameter, the instance handed to it
    ('''def run_sharded(model, pixel_values, grid_thw):
    return model.visual(pixel_values, grid_thw=grid_thw)
''', False),  # ``model.visual(...)``: any model's tower, this one's too
], ids=["parameter", "other-receiver"])
def test_a_tower_handed_to_a_helper_runs_as_its_holder_hands_it(repo, cli, helper, per_request):
    model = VLLM_MODEL[1].replace('''from .vision_tower import VisionTower''', '''from vllm.multimodal.sharding import run_sharded

from .vision_tower import VisionTower''').replace(
        '''        return self.visual(image_input["pixel_values"], grid_thw=grid_thw)''',
        '''        return run_sharded(self.visual, image_input["pixel_values"], grid_thw)''')
    files = _vllm(model)
    files[SHARDED_HELPER[0]] = helper
    found = _review(repo, cli, files, TOWER_PATH, *TOWER_READS["tower"])
    assert ((TOWER_PATH, TOWER_READ_LINE) not in found) is per_request, found


UNSEEN_CALLER = VLLM_MODEL[1].replace('''    def embed_multimodal(self, **kwargs):
        return self._process_image_input(kwargs)
''', '''    def get_vision_hidden_states(self, image_input):
        return self._process_image_input(image_input)
''')


@pytest.mark.parametrize(("model", "held"), [
    (UNSEEN_CALLER, True),
    (UNSEEN_CALLER.replace('''        return self.lm_head(hidden_states)''', '''        hidden_states = self.visual(hidden_states, grid_thw=positions)
        return self.lm_head(hidden_states)'''), False),
], ids=["called-from-unseen-code", "called-from-forward"])
def test_a_full_scan_holds_back_a_tower_only_unseen_code_runs(repo, cli, model, held):
    files = _vllm(model)
    files[TOWER_PATH] = files[TOWER_PATH].replace(*TOWER_READS["tower"])
    for path, text in files.items():
        repo.write(path, text)
    repo.commit("engine")
    run = cli("review", "vllm", "--format", "json", "--no-cache", cwd=repo.path)
    assert run.code in (0, 1), run.err
    shown = {(f["path"], f["line"]) for f in run.json()["findings"]}
    assert ((TOWER_PATH, TOWER_READ_LINE) not in shown) is held, shown
    assert (run.json()["summary"]["unknown_frequency"] >= 1) is held
    everything = cli("review", "vllm", "--format", "json", "--no-cache", "--show-unknown-frequency", cwd=repo.path)
    assert (TOWER_PATH, TOWER_READ_LINE) in {(f["path"], f["line"]) for f in everything.json()["findings"]}


@pytest.mark.parametrize(("path", "per_request"), [
    ("tests/models/test_tower_outputs.py", True),  # a test's call runs in the test
    ("vllm/tools/compare_towers.py", False),  # engine code: ``model.visual`` may be any model's tower
], ids=["test", "engine-code"])
def test_a_call_of_an_instance_through_another_object_in_a_test_runs_in_the_test(repo, cli, path, per_request):
    files = _vllm()
    files[path] = '''def tower_outputs(model, pixel_values, grid_thw):
    return model.visual(pixel_values, grid_thw=grid_thw)
'''
    found = _review(repo, cli, files, TOWER_PATH, *TOWER_READS["tower"])
    assert ((TOWER_PATH, TOWER_READ_LINE) not in found) is per_request, found


# SGLang style: a vision attention registry, an encoder building one backend per name.
SGLANG_BACKENDS = ("sglang/srt/layers/attention/vision_backends.py", '''import torch
from torch import nn


class VisionSdpaAttention(nn.Module):
    def forward(self, q, cu_seqlens):
        longest = int((cu_seqlens[1:] - cu_seqlens[:-1]).max().item())
        return q[:longest]


class VisionTritonAttention(nn.Module):
    def forward(self, q, cu_seqlens):
        return q


QKV_BACKEND_IMPL = {
    "sdpa": VisionSdpaAttention,
    "triton_attn": VisionTritonAttention,
}
''')
SGLANG_ENCODER = ("sglang/srt/models/kimi_like_vl.py", '''import torch
from torch import nn

from sglang.srt.layers.attention.vision_backends import QKV_BACKEND_IMPL


class KimiLikeVisionEncoder(nn.Module):
    def __init__(self, backends):
        super().__init__()
        self.attention_backend_impls = nn.ModuleDict({
            backend: QKV_BACKEND_IMPL[backend]()
            for backend in backends
        })

    def forward(self, q, cu_seqlens, backend):
        return self.attention_backend_impls[backend](q, cu_seqlens)


class KimiLikeVLForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.vision_tower = KimiLikeVisionEncoder(config.backends)
        self.lm_head = nn.Linear(config.dim, config.vocab)

    def get_image_feature(self, items):
        return self.vision_tower(items.pixel_values, items.cu_seqlens, "sdpa")

    def forward(self, input_ids, positions, forward_batch):
        CALL
        return self.lm_head(forward_batch.hidden_states)
''')


@pytest.mark.parametrize(("call", "per_step"), [
    ("pass", False),
    ("self.vision_tower(forward_batch.q, forward_batch.cu_seqlens, 'sdpa')", True),
], ids=["media-embedding-only", "every-forward"])
def test_backends_built_from_a_registry_run_as_their_encoder(repo, cli, call, per_step):
    files = dict([SGLANG_BACKENDS, (SGLANG_ENCODER[0], SGLANG_ENCODER[1].replace("CALL", call))])
    found = _review(repo, cli, files, SGLANG_BACKENDS[0], ".max().item()", ".amax().item()")
    assert ((SGLANG_BACKENDS[0], 7) in found) is per_step, found
