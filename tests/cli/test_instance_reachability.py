"""A module's ``forward`` runs as often as the code that calls its instances, where every
instance is seen: a vision tower kept in ``self.visual`` and called only while a request's
images are embedded runs per request, and so do the blocks it keeps in a ``ModuleList``;
the same tower called from the model's per-step ``forward``, or handed to a class that
keeps it, stays per step. Instances are seen through a registry of classes by key
(``REG[key](...)``), a module-level alias nothing uses and a device map's list of class
names; a registry entry looked up and handed out, or an alias called, leaves them unseen.
Reviewed end to end with no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

VLLM_INTERFACES = ("vllm/model_executor/models/interfaces.py", '''from typing import Protocol


class SupportsMultiModal(Protocol):
    def embed_multimodal(self, **kwargs):
        ...
''')

VLLM_TOWER = ("vllm/model_executor/models/vision_tower.py", '''import torch
from torch import nn


class VisionBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, cu_seqlens):
        return self.proj(x)


class VisionTower(nn.Module):
    def __init__(self, dim, depth):
        super().__init__()
        self.blocks = nn.ModuleList([VisionBlock(dim) for _ in range(depth)])

    def forward(self, x, grid_thw):
        cu_seqlens = grid_thw.prod(-1).cumsum(0)
        for block in self.blocks:
            x = block(x, cu_seqlens)
        return x
''')

VLLM_MODEL = ("vllm/model_executor/models/tower_vl.py", '''import torch
from torch import nn

from .interfaces import SupportsMultiModal
from .vision_tower import VisionTower


class TowerVLForConditionalGeneration(nn.Module, SupportsMultiModal):
    def __init__(self, config):
        super().__init__()
        self.visual = VisionTower(config.dim, config.depth)
        self.lm_head = nn.Linear(config.dim, config.vocab)

    def _process_image_input(self, image_input):
        grid_thw = image_input["image_grid_thw"]
        return self.visual(image_input["pixel_values"], grid_thw=grid_thw)

    def embed_multimodal(self, **kwargs):
        return self._process_image_input(kwargs)

    def forward(self, input_ids, positions, hidden_states):
        return self.lm_head(hidden_states)
''')

TOWER_READS = {  # line of the added read -> the text replacing the line before it
    "tower": ('''        cu_seqlens = grid_thw.prod(-1).cumsum(0)
''', '''        cu_seqlens = grid_thw.prod(-1).cumsum(0)
        max_seqlen = int(cu_seqlens.max().item())
'''),
    "block": ('''        return self.proj(x)
''', '''        longest = (cu_seqlens[1:] - cu_seqlens[:-1]).max().item()
        return self.proj(x[:longest])
'''),
}


def _review(repo, cli, files: dict[str, str], reviewed: str, old: str, new: str) -> dict[tuple[str, int], str]:
    for path, text in files.items():
        repo.write(path, text)
    repo.commit("base")
    repo.write(reviewed, files[reviewed].replace(old, new))
    run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    assert run.code in (0, 1), run.err
    return {(f["path"], line): f["rule"] for f in run.json()["findings"] for line in (f["line"], *f.get("also_at", []))}


def _vllm(model: str = VLLM_MODEL[1]) -> dict[str, str]:
    return dict([VLLM_INTERFACES, VLLM_TOWER, (VLLM_MODEL[0], model)])


@pytest.mark.parametrize(("where", "line"), [("tower", 21), ("block", 11)])
def test_a_tower_only_the_media_embedding_calls_runs_per_request(repo, cli, where, line):
    found = _review(repo, cli, _vllm(), VLLM_TOWER[0], *TOWER_READS[where])
    assert (VLLM_TOWER[0], line) not in found, found


@pytest.mark.parametrize(("where", "line"), [("tower", 21), ("block", 11)])
def test_the_same_tower_called_from_the_models_forward_stays_per_step(repo, cli, where, line):
    per_step = VLLM_MODEL[1].replace('''        return self.lm_head(hidden_states)''', '''        hidden_states = self.visual(hidden_states, grid_thw=positions)
        return self.lm_head(hidden_states)''')
    found = _review(repo, cli, _vllm(per_step), VLLM_TOWER[0], *TOWER_READS[where])
    assert found.get((VLLM_TOWER[0], line)) == "host-sync-in-hot-path", found


def test_a_tower_whose_method_the_models_forward_calls_stays_per_step(repo, cli):
    # ``self.visual.encode(...)`` runs the tower's forward through ``self(x)``: a method
    # call on the instance is a use of it as much as a call of it.
    tower = VLLM_TOWER[1] + '''
    def encode(self, x, grid_thw):
        return self(x, grid_thw)
'''
    per_step = VLLM_MODEL[1].replace('''        return self.lm_head(hidden_states)''', '''        hidden_states = self.visual.encode(hidden_states, positions)
        return self.lm_head(hidden_states)''')
    files = dict([VLLM_INTERFACES, (VLLM_TOWER[0], tower), (VLLM_MODEL[0], per_step)])
    found = _review(repo, cli, files, VLLM_TOWER[0], *TOWER_READS["tower"])
    assert found.get((VLLM_TOWER[0], 21)) == "host-sync-in-hot-path", found


@pytest.mark.parametrize("kept", [
    '''        self.runner = TowerRunner(self.visual)''',  # a class that keeps the tower may run it at any time
    '''        self.towers = [self.visual]''',  # stored where no call of it is seen
], ids=["handed-to-a-class", "stored"])
def test_a_tower_that_escapes_its_holder_stays_per_step(repo, cli, kept):
    escaping = VLLM_MODEL[1].replace('''        self.lm_head = nn.Linear(config.dim, config.vocab)''', f'''        self.lm_head = nn.Linear(config.dim, config.vocab)
{kept}''')
    found = _review(repo, cli, _vllm(escaping), VLLM_TOWER[0], *TOWER_READS["tower"])
    assert found.get((VLLM_TOWER[0], 21)) == "host-sync-in-hot-path", found


def test_a_tower_some_class_derives_from_without_a_seen_instance_stays_per_step(repo, cli):
    files = _vllm()
    files["vllm/model_executor/models/other_vl.py"] = '''from .vision_tower import VisionTower


class OtherVisionTower(VisionTower):
    pass


TOWERS = {"other": OtherVisionTower}
'''
    found = _review(repo, cli, files, VLLM_TOWER[0], *TOWER_READS["tower"])
    assert found.get((VLLM_TOWER[0], 21)) == "host-sync-in-hot-path", found


@pytest.mark.parametrize(("mention", "per_request"), [
    ('"""Runs ``VisionTower`` once per image, as :class:`VisionTower` says."""', True),  # a docstring
    ('# VisionTower is built by the model below', True),  # a comment
    ('raise ValueError(f"VisionTower needs {1} image")', True),  # a message
    ('ARCHS = ["VisionTower"]', False),  # a name a registry may load with getattr
    ('ARCHS = {"tower": VisionTower}', False),  # a registry's value
], ids=["docstring", "comment", "message", "registry-string", "registry-value"])
def test_a_class_named_in_prose_elsewhere_keeps_its_instances_seen(repo, cli, mention, per_request):
    files = _vllm()
    files["vllm/model_executor/models/notes.py"] = f"""def describe():
    {mention}
"""
    found = _review(repo, cli, files, VLLM_TOWER[0], *TOWER_READS["tower"])
    assert ((VLLM_TOWER[0], 21) not in found) is per_request, found


@pytest.mark.parametrize(("exports", "per_request"), [
    ('__all__ = [\n    "VisionTower",\n    "describe",\n]', True),  # vLLM's and SGLang's export lists
    ('__all__ += ("VisionTower",)', True),
    ('EXPORTED = ["VisionTower"]', False),  # any other list of names may be a registry
], ids=["all-list", "all-extended", "other-list"])
def test_a_class_a_module_exports_by_name_keeps_its_instances_seen(repo, cli, exports, per_request):
    files = _vllm()
    files[VLLM_TOWER[0]] = VLLM_TOWER[1].replace("import torch\n", f"import torch\n\n{exports}\n", 1)
    found = _review(repo, cli, files, VLLM_TOWER[0], *TOWER_READS["tower"])
    added = 21 + files[VLLM_TOWER[0]].count("\n") - VLLM_TOWER[1].count("\n")
    assert ((VLLM_TOWER[0], added) not in found) is per_request, found


SGLANG_FRONTEND = ("sglang/srt/multimodal/mel_frontend.py", '''import torch
from torch import nn


class MelFrontend(nn.Module):
    def __init__(self, hop):
        super().__init__()
        self.hop = hop

    def forward(self, waveform, lengths):
        frames = lengths // self.hop
        return waveform[..., : frames.max()]
''')

SGLANG_PROCESSOR = ("sglang/srt/multimodal/processors/audio.py", '''import torch

from sglang.srt.multimodal.processors.base_processor import BaseMultimodalProcessor
from sglang.srt.multimodal.mel_frontend import MelFrontend


class AudioProcessor(BaseMultimodalProcessor):
    def __init__(self, hf_config, server_args):
        super().__init__(hf_config, server_args)
        self.frontend = MelFrontend(hf_config.hop_length)

    async def process_mm_data_async(self, audio_data, input_text, request_obj):
        waveform = torch.as_tensor(audio_data, device="cuda")
        lengths = torch.as_tensor(request_obj.audio_lengths, device="cuda")
        return self.frontend(waveform, lengths)
''')

SGLANG_BASE = ("sglang/srt/multimodal/processors/base_processor.py", '''class BaseMultimodalProcessor:
    def __init__(self, hf_config, server_args):
        self.hf_config = hf_config

    async def process_mm_data_async(self, audio_data, input_text, request_obj):
        return None
''')

SGLANG_MODEL = ("sglang/srt/models/audio_lm.py", '''import torch
from torch import nn

from sglang.srt.multimodal.mel_frontend import MelFrontend


class AudioLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.frontend = MelFrontend(config.hop_length)

    def forward(self, input_ids, positions, forward_batch):
        return self.frontend(forward_batch.audio, forward_batch.audio_lengths)
''')

FRONTEND_READ = ('''        return waveform[..., : frames.max()]
''', '''        longest = int(frames.max().item())
        return waveform[..., :longest]
''')


def test_a_module_only_a_request_processor_keeps_runs_per_request(repo, cli):
    files = dict([SGLANG_FRONTEND, SGLANG_PROCESSOR, SGLANG_BASE])
    found = _review(repo, cli, files, SGLANG_FRONTEND[0], *FRONTEND_READ)
    assert (SGLANG_FRONTEND[0], 12) not in found, found


def test_the_same_module_kept_by_a_model_layer_too_stays_per_step(repo, cli):
    files = dict([SGLANG_FRONTEND, SGLANG_PROCESSOR, SGLANG_BASE, SGLANG_MODEL])
    found = _review(repo, cli, files, SGLANG_FRONTEND[0], *FRONTEND_READ)
    assert found.get((SGLANG_FRONTEND[0], 12)) == "host-sync-in-hot-path", found


HELPER_TOWER = VLLM_TOWER[1].replace('''    def forward(self, x, grid_thw):
        cu_seqlens = grid_thw.prod(-1).cumsum(0)''', '''    def window_index(self, grid_thw):
        return grid_thw.prod(-1).cumsum(0)

    def forward(self, x, grid_thw):
        cu_seqlens = self.window_index(grid_thw)''')
HELPER_READ = ('''        return grid_thw.prod(-1).cumsum(0)
''', '''        sizes = grid_thw.prod(-1).tolist()
        return torch.tensor(sizes).cumsum(0)
''')


@pytest.mark.parametrize(("model", "reported"), [
    (VLLM_MODEL[1], False),
    (VLLM_MODEL[1].replace('''        return self.lm_head(hidden_states)''', '''        hidden_states = self.visual(hidden_states, grid_thw=positions)
        return self.lm_head(hidden_states)'''), True),
], ids=["per-request-tower", "per-step-tower"])
def test_a_public_helper_of_a_tower_whose_every_instance_is_seen_runs_as_the_tower(repo, cli, model, reported):
    # No code outside the repository can hold an instance of the tower, so the helper's
    # callers, all seen, decide: the tower's own forward, as often as the tower runs.
    files = dict([VLLM_INTERFACES, (VLLM_TOWER[0], HELPER_TOWER), (VLLM_MODEL[0], model)])
    found = _review(repo, cli, files, VLLM_TOWER[0], *HELPER_READ)
    assert ((VLLM_TOWER[0], 20) in found) is reported, found



# The tower made by a factory: a method returning it, kept by its one caller, and a class
# method returning ``cls(...)``; the tower's ``encode``, a method no root reaches, runs
# through the same instances.
FACTORY_MODEL = VLLM_MODEL[1].replace('''        self.visual = VisionTower(config.dim, config.depth)''', '''        self.visual = self._init_tower(config)''').replace('''    def _process_image_input(self, image_input):''', '''    def _init_tower(self, config):
        return VisionTower(config.dim, config.depth)

    def _process_image_input(self, image_input):''')
CLASS_FACTORY_TOWER = VLLM_TOWER[1] + '''
    @classmethod
    def from_config(cls, config):
        return cls(config.dim, config.depth)
'''
CLASS_FACTORY_MODEL = VLLM_MODEL[1].replace('''        self.visual = VisionTower(config.dim, config.depth)''', '''        self.visual = VisionTower.from_config(config)''')
ENCODE_TOWER = VLLM_TOWER[1] + '''
    def encode(self, x, grid_thw):
        lengths = grid_thw.prod(-1)
        return self(x[: lengths.sum()], grid_thw)
'''
ENCODE_MODEL = VLLM_MODEL[1].replace('''        return self.visual(image_input["pixel_values"], grid_thw=grid_thw)''', '''        return self.visual.encode(image_input["pixel_values"], grid_thw)''')


@pytest.mark.parametrize(("tower", "model"), [
    (VLLM_TOWER[1], FACTORY_MODEL), (CLASS_FACTORY_TOWER, CLASS_FACTORY_MODEL),
], ids=["factory-method", "class-method"])
@pytest.mark.parametrize("from_forward", [False, True], ids=["media-embedding-only", "also-the-models-forward"])
def test_a_tower_a_factory_makes_runs_as_often_as_its_holders_uses(repo, cli, tower, model, from_forward):
    if from_forward:
        model = model.replace('''        return self.lm_head(hidden_states)''', '''        hidden_states = self.visual(hidden_states, grid_thw=positions)
        return self.lm_head(hidden_states)''')
    files = dict([VLLM_INTERFACES, (VLLM_TOWER[0], tower), (VLLM_MODEL[0], model)])
    found = _review(repo, cli, files, VLLM_TOWER[0], *TOWER_READS["tower"])
    assert ((VLLM_TOWER[0], 21) in found) is from_forward, found


def test_a_factory_whose_result_escapes_keeps_the_tower_per_step(repo, cli):
    escaping = FACTORY_MODEL.replace('''    def _process_image_input(self, image_input):''', '''    def spare_tower(self, config):
        return [self._init_tower(config)]

    def _process_image_input(self, image_input):''')
    files = dict([VLLM_INTERFACES, VLLM_TOWER, (VLLM_MODEL[0], escaping)])
    found = _review(repo, cli, files, VLLM_TOWER[0], *TOWER_READS["tower"])
    assert found.get((VLLM_TOWER[0], 21)) == "host-sync-in-hot-path", found


@pytest.mark.parametrize("from_forward", [False, True], ids=["media-embedding-only", "also-the-models-forward"])
def test_a_towers_method_runs_as_often_as_the_code_that_uses_its_instances(repo, cli, from_forward):
    model = ENCODE_MODEL
    if from_forward:
        model = model.replace('''        return self.lm_head(hidden_states)''', '''        hidden_states = self.visual.encode(hidden_states, positions)
        return self.lm_head(hidden_states)''')
    files = dict([VLLM_INTERFACES, (VLLM_TOWER[0], ENCODE_TOWER), (VLLM_MODEL[0], model)])
    found = _review(repo, cli, files, VLLM_TOWER[0], '''        lengths = grid_thw.prod(-1)
''', '''        lengths = grid_thw.prod(-1)
        longest = int(lengths.max().item())
''')
    line = next(n for n, text in enumerate(ENCODE_TOWER.splitlines(), start=1) if "lengths = grid_thw.prod(-1)" in text) + 1
    assert ((VLLM_TOWER[0], line) in found) is from_forward, found


SGLANG_FACTORY_FRONTEND = SGLANG_FRONTEND[1] + '''
    @classmethod
    def from_config(cls, hf_config):
        return cls(hf_config.hop_length)
'''


@pytest.mark.parametrize("kept_by_a_model", [False, True], ids=["request-processor-only", "also-a-model-layer"])
def test_a_module_a_class_method_makes_runs_as_often_as_its_holders_uses(repo, cli, kept_by_a_model):
    processor = SGLANG_PROCESSOR[1].replace("MelFrontend(hf_config.hop_length)", "MelFrontend.from_config(hf_config)")
    files = dict([(SGLANG_FRONTEND[0], SGLANG_FACTORY_FRONTEND), (SGLANG_PROCESSOR[0], processor), SGLANG_BASE])
    if kept_by_a_model:
        files[SGLANG_MODEL[0]] = SGLANG_MODEL[1].replace("MelFrontend(config.hop_length)", "MelFrontend.from_config(config)")
    found = _review(repo, cli, files, SGLANG_FRONTEND[0], *FRONTEND_READ)
    assert ((SGLANG_FRONTEND[0], 12) in found) is kept_by_a_model, found


# The tower kept by a wrapper the model keeps, and called through it from a public method
# of an inner model (``self.model.get_encoder_outputs`` → ``self.encoder.tower(...)``):
# every instance of the wrapper is seen, so the call of its attribute is a seen use.
WRAPPED_MODEL = ("vllm/model_executor/models/speech_lm.py", '''import torch
from torch import nn

from .interfaces import SupportsMultiModal
from .vision_tower import VisionTower


class SpeechEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.tower = VisionTower(config.dim, config.depth)


class SpeechModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.encoder = SpeechEncoder(config)
        self.lm_head = nn.Linear(config.dim, config.vocab)

    def get_encoder_outputs(self, speech, lengths):
        return self.encoder.tower(speech, grid_thw=lengths)

    def forward(self, input_ids, positions, hidden_states):
        return self.lm_head(hidden_states)


class SpeechLMForConditionalGeneration(nn.Module, SupportsMultiModal):
    def __init__(self, config):
        super().__init__()
        self.model = SpeechModel(config)

    def embed_multimodal(self, **kwargs):
        return self.model.get_encoder_outputs(kwargs["input_features"], kwargs["lengths"])

    def forward(self, input_ids, positions, hidden_states):
        return self.model(input_ids, positions, hidden_states)
''')


@pytest.mark.parametrize("from_forward", [False, True], ids=["media-embedding-only", "also-the-models-forward"])
def test_a_tower_called_through_the_object_that_keeps_it_runs_as_often_as_that_call(repo, cli, from_forward):
    model = WRAPPED_MODEL[1]
    if from_forward:
        model = model.replace('''    def forward(self, input_ids, positions, hidden_states):
        return self.lm_head(hidden_states)''', '''    def forward(self, input_ids, positions, hidden_states):
        hidden_states = self.encoder.tower(hidden_states, grid_thw=positions)
        return self.lm_head(hidden_states)''')
    files = dict([VLLM_INTERFACES, VLLM_TOWER, (WRAPPED_MODEL[0], model)])
    found = _review(repo, cli, files, VLLM_TOWER[0], *TOWER_READS["tower"])
    assert ((VLLM_TOWER[0], 21) in found) is from_forward, found


def test_a_call_of_the_attribute_on_an_object_of_unknown_class_keeps_the_tower_per_step(repo, cli):
    # ``runner.encoder.tower(...)`` with ``runner`` of no class the code shows may be one of these instances.
    files = dict([VLLM_INTERFACES, VLLM_TOWER, WRAPPED_MODEL])
    files["vllm/v1/worker/speech_runner.py"] = '''def run_encoder(runner, hidden_states, positions):
    return runner.encoder.tower(hidden_states, grid_thw=positions)
'''
    found = _review(repo, cli, files, VLLM_TOWER[0], *TOWER_READS["tower"])
    assert found.get((VLLM_TOWER[0], 21)) == "host-sync-in-hot-path", found


# A factory that casts what it makes before returning it (``return tower.to(dtype)``),
# and a processor that keeps its front end moved to its device through a local.
MOVED_FACTORY_MODEL = FACTORY_MODEL.replace('''        return VisionTower(config.dim, config.depth)''', '''        tower = VisionTower(config.dim, config.depth)
        return tower.to(dtype=torch.float16)''')
MOVED_PROCESSOR = SGLANG_PROCESSOR[1].replace('''        self.frontend = MelFrontend(hf_config.hop_length)''', '''        frontend = MelFrontend(hf_config.hop_length)
        frontend.eval()
        self.frontend = frontend.to(server_args.device)''')


@pytest.mark.parametrize("from_forward", [False, True], ids=["media-embedding-only", "also-the-models-forward"])
def test_a_tower_a_factory_returns_moved_runs_as_often_as_its_holders_uses(repo, cli, from_forward):
    model = MOVED_FACTORY_MODEL
    if from_forward:
        model = model.replace('''        return self.lm_head(hidden_states)''', '''        hidden_states = self.visual(hidden_states, grid_thw=positions)
        return self.lm_head(hidden_states)''')
    files = dict([VLLM_INTERFACES, VLLM_TOWER, (VLLM_MODEL[0], model)])
    found = _review(repo, cli, files, VLLM_TOWER[0], *TOWER_READS["tower"])
    assert ((VLLM_TOWER[0], 21) in found) is from_forward, found


@pytest.mark.parametrize("kept_by_a_model", [False, True], ids=["request-processor-only", "also-a-model-layer"])
def test_a_module_kept_moved_through_a_local_runs_as_often_as_its_holders_uses(repo, cli, kept_by_a_model):
    files = dict([SGLANG_FRONTEND, (SGLANG_PROCESSOR[0], MOVED_PROCESSOR), SGLANG_BASE])
    if kept_by_a_model:
        files[SGLANG_MODEL[0]] = SGLANG_MODEL[1]
    found = _review(repo, cli, files, SGLANG_FRONTEND[0], *FRONTEND_READ)
    assert ((SGLANG_FRONTEND[0], 12) in found) is kept_by_a_model, found


def test_a_call_of_the_models_holder_attribute_elsewhere_runs_its_forward_not_its_encoder(repo, cli):
    # ``runner.model(...)`` on an object of unknown class may run a ``SpeechModel``'s
    # ``forward``; ``get_encoder_outputs`` is still called only where it is seen.
    files = dict([VLLM_INTERFACES, VLLM_TOWER, WRAPPED_MODEL])
    files["vllm/v1/worker/speech_runner.py"] = '''def execute_model(runner, input_ids, positions, hidden_states):
    return runner.model(input_ids, positions, hidden_states)
'''
    found = _review(repo, cli, files, VLLM_TOWER[0], *TOWER_READS["tower"])
    assert (VLLM_TOWER[0], 21) not in found, found


# A module a processor builds on first use and keeps behind a property (``self.frontend``
# returns ``self._frontend``): every use of the property is a use of the instance.
PROPERTY_PROCESSOR = SGLANG_PROCESSOR[1].replace('''        self.frontend = MelFrontend(hf_config.hop_length)
''', '''        self.hop = hf_config.hop_length
        self._frontend = None

    @property
    def frontend(self):
        if self._frontend is None:
            frontend = MelFrontend(self.hop)
            self._frontend = frontend.to("cuda")
        return self._frontend
''')
# The same module handed out by a plain method: its caller may keep it and run it at any time.
ACCESSOR_PROCESSOR = PROPERTY_PROCESSOR.replace('''    @property
    def frontend(self):''', '''    def frontend(self):''').replace("return self.frontend(waveform, lengths)", "return self.frontend()(waveform, lengths)")


@pytest.mark.parametrize(("processor", "reported"), [(PROPERTY_PROCESSOR, False), (ACCESSOR_PROCESSOR, True)],
                         ids=["kept-behind-a-property", "handed-out-by-a-method"])
def test_a_module_a_property_returns_runs_as_often_as_the_propertys_uses(repo, cli, processor, reported):
    files = dict([SGLANG_FRONTEND, (SGLANG_PROCESSOR[0], processor), SGLANG_BASE])
    found = _review(repo, cli, files, SGLANG_FRONTEND[0], *FRONTEND_READ)
    assert ((SGLANG_FRONTEND[0], 12) in found) is reported, found


# vLLM's style: a transformers sequence feature extractor (per request, by its protocol
# model) that keeps its filterbank module behind a property.
VLLM_FEATURE_EXTRACTOR = ("vllm/transformers_utils/processors/speech_asr.py", '''import numpy as np
import torch
from torch import nn
from transformers.feature_extraction_sequence_utils import SequenceFeatureExtractor


class FilterbankFeatures(nn.Module):
    def __init__(self, hop):
        super().__init__()
        self.hop = hop

    def forward(self, audio, seq_len):
        frames = seq_len // self.hop
        return audio[..., : frames.max()]


class SpeechFeatureExtractor(SequenceFeatureExtractor):
    def __init__(self, hop, device="cuda", **kwargs):
        super().__init__(feature_size=80, sampling_rate=16000, padding_value=0.0, **kwargs)
        self._hop = hop
        self._device = device
        self._filterbank = None

    @property
    def filterbank(self):
        if self._filterbank is None:
            fb = FilterbankFeatures(self._hop)
            fb.eval()
            self._filterbank = fb.to(self._device)
        return self._filterbank

    def __call__(self, raw_speech, sampling_rate=None, **kwargs):
        seq_len = torch.tensor([s.shape[0] for s in raw_speech], device=self._device)
        padded = torch.from_numpy(np.stack(raw_speech)).to(self._device)
        return self.filterbank(padded, seq_len)
''')
FILTERBANK_READ = ('''        return audio[..., : frames.max()]
''', '''        longest = int(frames.max().item())
        return audio[..., :longest]
''')


def test_a_feature_extractors_filterbank_behind_a_property_runs_per_request(repo, cli):
    found = _review(repo, cli, dict([VLLM_FEATURE_EXTRACTOR]), VLLM_FEATURE_EXTRACTOR[0], *FILTERBANK_READ)
    assert (VLLM_FEATURE_EXTRACTOR[0], 14) not in found, found


def test_the_same_filterbank_a_model_layer_also_keeps_stays_per_step(repo, cli):
    model = ("vllm/model_executor/models/speech_frontend.py", '''from torch import nn

from vllm.transformers_utils.processors.speech_asr import FilterbankFeatures


class SpeechFrontend(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.filterbank = FilterbankFeatures(config.hop)

    def forward(self, audio, seq_len):
        return self.filterbank(audio, seq_len)
''')
    found = _review(repo, cli, dict([VLLM_FEATURE_EXTRACTOR, model]), VLLM_FEATURE_EXTRACTOR[0], *FILTERBANK_READ)
    assert found.get((VLLM_FEATURE_EXTRACTOR[0], 14)) == "host-sync-in-hot-path", found


# An accessor kept for a library's interface (``get_vision_tower``) that no code calls or
# names hands the tower to no one; once some code calls it, the tower may run anywhere.
ACCESSOR_MODEL = VLLM_MODEL[1].replace('''    def embed_multimodal(self, **kwargs):''', '''    def get_vision_tower(self):
        return self.visual

    def embed_multimodal(self, **kwargs):''')
ACCESSOR_CALLER = ("vllm/v1/worker/tower_probe.py", '''def run_tower(model, pixels, grid_thw):
    return model.get_vision_tower()(pixels, grid_thw)
''')


@pytest.mark.parametrize(("called", "reported"), [(False, False), (True, True)],
                         ids=["accessor-no-code-names", "accessor-called-elsewhere"])
def test_a_tower_an_unnamed_accessor_returns_runs_as_often_as_its_holders_uses(repo, cli, called, reported):
    files = _vllm(ACCESSOR_MODEL)
    if called:
        files[ACCESSOR_CALLER[0]] = ACCESSOR_CALLER[1]
    found = _review(repo, cli, files, VLLM_TOWER[0], *TOWER_READS["tower"])
    assert ((VLLM_TOWER[0], 21) in found) is reported, found


# SGLang's style: a multimodal model embeds images through ``get_image_feature`` (per
# request, by its protocol model); its base hands the vision tower out through
# ``get_vision_tower``, and a wrapper's accessor of the same name hands that on; neither is
# called.
SGLANG_VL_MODEL = ("sglang/srt/models/tower_vl.py", '''from torch import nn


class VisionTower(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, pixels, grid_thw):
        return self.proj(pixels)


class VLModelBase(nn.Module):
    def get_vision_tower(self):
        return self.visual


class TowerVLModel(VLModelBase):
    def __init__(self, dim):
        super().__init__()
        self.visual = VisionTower(dim)

    def get_image_feature(self, items):
        return self.visual(items.pixels, items.grid_thw)


class TowerVLForConditionalGeneration(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.model = TowerVLModel(dim)

    def get_vision_tower(self):
        return self.model.get_vision_tower()

    def get_image_feature(self, items):
        return self.model.get_image_feature(items)
''')
TOWER_READ = ('''        return self.proj(pixels)
''', '''        longest = int(grid_thw.prod(-1).max().item())
        return self.proj(pixels[:longest])
''')


@pytest.mark.parametrize(("called", "reported"), [(False, False), (True, True)],
                         ids=["accessor-no-code-names", "accessor-called-elsewhere"])
def test_a_vision_tower_behind_unnamed_accessors_runs_per_request(repo, cli, called, reported):
    files = dict([SGLANG_VL_MODEL])
    if called:
        files["sglang/srt/model_executor/tower_probe.py"] = '''def run_tower(model, pixels, grid_thw):
    return model.get_vision_tower()(pixels, grid_thw)
'''
    found = _review(repo, cli, files, SGLANG_VL_MODEL[0], *TOWER_READ)
    assert ((SGLANG_VL_MODEL[0], 10) in found) is reported, found


# A block class chosen by a conditional expression (``block_cls = FP8Block if fp8 else
# VisionBlock``), then called: every instance of either is kept where the call's value is.
CHOSEN_TOWER = VLLM_TOWER[1].replace('''class VisionTower(nn.Module):
    def __init__(self, dim, depth):
        super().__init__()
        self.blocks = nn.ModuleList([VisionBlock(dim) for _ in range(depth)])
''', '''class FP8VisionBlock(VisionBlock):
    pass


class VisionTower(nn.Module):
    def __init__(self, dim, depth, fp8=False):
        super().__init__()
        block_cls = FP8VisionBlock if fp8 else VisionBlock
        self.blocks = nn.ModuleList([block_cls(dim) for _ in range(depth)])
''')


@pytest.mark.parametrize(("per_step", "reported"), [(False, False), (True, True)],
                         ids=["tower-embeds-media", "tower-in-the-models-forward"])
def test_a_block_class_chosen_by_a_conditional_expression_runs_as_often_as_its_holder(repo, cli, per_step, reported):
    model = VLLM_MODEL[1].replace('''        return self.lm_head(hidden_states)''', '''        hidden_states = self.visual(hidden_states, grid_thw=positions)
        return self.lm_head(hidden_states)''') if per_step else VLLM_MODEL[1]
    files = dict([VLLM_INTERFACES, (VLLM_TOWER[0], CHOSEN_TOWER), (VLLM_MODEL[0], model)])
    found = _review(repo, cli, files, VLLM_TOWER[0], *TOWER_READS["block"])
    assert ((VLLM_TOWER[0], 11) in found) is reported, found


@pytest.mark.parametrize(("listed", "per_step"), [
    ('''    _no_split_modules = ["VisionBlock"]''', False),  # a device map's unit: no class loaded by name
    ('''    BLOCK_CLASSES = ["VisionBlock"]''', True),  # a registry by name may load it anywhere
], ids=["device-map-list", "registry"])
def test_a_block_named_in_a_device_map_list_keeps_its_instances_seen(repo, cli, listed, per_step):
    tower = VLLM_TOWER[1].replace('''class VisionTower(nn.Module):
''', f'''class VisionTower(nn.Module):
{listed}
''')
    files = dict([VLLM_INTERFACES, (VLLM_TOWER[0], tower), VLLM_MODEL])
    found = _review(repo, cli, files, VLLM_TOWER[0], *TOWER_READS["block"])
    assert ((VLLM_TOWER[0], 11) in found) is per_step, found


# vLLM's dots3 style: a block builds its attention from a registry of classes by key.
REGISTRY_ATTENTION = ("vllm/model_executor/models/vision_attention.py", '''import torch
from torch import nn


class VisionSdpaAttention(nn.Module):
    def forward(self, x, cu_seqlens):
        longest = (cu_seqlens[1:] - cu_seqlens[:-1]).max().item()
        return x[:longest]


class VisionFlashAttention(nn.Module):
    def forward(self, x, cu_seqlens):
        return x


VISION_ATTENTION_CLASSES: dict[str, type[nn.Module]] = {
    "sdpa": VisionSdpaAttention,
    "flash_attention_2": VisionFlashAttention,
}


def build_vision_attention(attn_implementation):
    if attn_implementation not in VISION_ATTENTION_CLASSES:
        raise ValueError(attn_implementation)
    BUILD
''')
REGISTRY_TOWER = ("vllm/model_executor/models/vision_tower.py", '''import torch
from torch import nn

from .vision_attention import build_vision_attention


class VisionBlock(nn.Module):
    def __init__(self, attn_implementation):
        super().__init__()
        self.attn = build_vision_attention(attn_implementation)

    def forward(self, x, cu_seqlens):
        return self.attn(x, cu_seqlens)


class VisionTower(nn.Module):
    def __init__(self, dim, depth):
        super().__init__()
        self.blocks = nn.ModuleList([VisionBlock("sdpa") for _ in range(depth)])

    def forward(self, x, grid_thw):
        cu_seqlens = grid_thw.prod(-1).cumsum(0)
        for block in self.blocks:
            x = block(x, cu_seqlens)
        return x
''')


@pytest.mark.parametrize(("build", "per_step"), [
    ("return VISION_ATTENTION_CLASSES[attn_implementation]()", False),
    # A class looked up and handed out may be made anywhere.
    ("return VISION_ATTENTION_CLASSES.get(attn_implementation)()", True),
], ids=["entry-called", "entry-looked-up"])
def test_a_class_built_from_a_registry_runs_where_its_instances_are_used(repo, cli, build, per_step):
    attention = REGISTRY_ATTENTION[1].replace("BUILD", build)
    files = dict([VLLM_INTERFACES, (REGISTRY_ATTENTION[0], attention), REGISTRY_TOWER, VLLM_MODEL])
    found = _review(repo, cli, files, REGISTRY_ATTENTION[0], ".max().item()", ".amax().item()")
    assert ((REGISTRY_ATTENTION[0], 7) in found) is per_step, found


@pytest.mark.parametrize(("alias_use", "per_step"), [
    ("", False),  # an exported spelling nothing uses
    ("\n\ndef legacy_attention():\n    return VisionEagerAttention()\n", True),  # made through the alias, kept nowhere seen
], ids=["unused", "called"])
def test_a_module_alias_of_a_registry_class(repo, cli, alias_use, per_step):
    attention = REGISTRY_ATTENTION[1].replace("BUILD", "return VISION_ATTENTION_CLASSES[attn_implementation]()") \
        + "\n\nVisionEagerAttention = VisionSdpaAttention\n" + alias_use
    files = dict([VLLM_INTERFACES, (REGISTRY_ATTENTION[0], attention), REGISTRY_TOWER, VLLM_MODEL])
    found = _review(repo, cli, files, REGISTRY_ATTENTION[0], ".max().item()", ".amax().item()")
    assert ((REGISTRY_ATTENTION[0], 7) in found) is per_step, found


# vLLM's BERT style: an embedding module kept in ``self.position_embeddings`` and called.
BERT_EMBEDDING = ("vllm/model_executor/models/bert_like.py", '''import torch
from torch import nn


class BertLikeEmbedding(nn.Module):
    def __init__(self, config):
        super().__init__()
        ASSIGN

    def forward(self, input_ids, position_ids):
        return self.position_embeddings(position_ids)
''')


@pytest.mark.parametrize(("assign", "per_step"), [
    ("self.position_embeddings = nn.Embedding(config.max_positions, config.dim)", False),
    ("self.dim = config.dim", True),  # no attribute of that name: the one method of the name is called
], ids=["kept-module", "no-such-attribute"])
def test_a_call_of_a_kept_module_is_no_call_of_a_method_of_its_name(repo, cli, assign, per_step):
    tower = VLLM_TOWER[1].replace('''    def forward(self, x, grid_thw):
        cu_seqlens = grid_thw.prod(-1).cumsum(0)''', '''    def position_embeddings(self, grid_thw):
        return torch.arange(int(grid_thw.sum()), device=grid_thw.device)

    def forward(self, x, grid_thw):
        cu_seqlens = grid_thw.prod(-1).cumsum(0) + self.position_embeddings(grid_thw)[0]''')
    files = dict([VLLM_INTERFACES, (VLLM_TOWER[0], tower), VLLM_MODEL,
                  (BERT_EMBEDDING[0], BERT_EMBEDDING[1].replace("ASSIGN", assign))])
    found = _review(repo, cli, files, VLLM_TOWER[0], "int(grid_thw.sum())", "int(grid_thw.sum().item())")
    assert ((VLLM_TOWER[0], 20) in found) is per_step, found


# Another model's file defines a class of the same name and mentions it as a value
# (``tower_targets={"vision": (VisionTower, Projector)}``): that mention is of its own
# class, and leaves this tower's instances all seen. Importing this tower there instead
# makes the mention one of an instance maker no rule follows.
OTHER_TOWER = ("vllm/model_executor/models/other_asr.py", '''from torch import nn
{defined}

class OtherASRModel(nn.Module):
    packed_modules = dict(tower_targets={{"vision": (VisionTower, nn.Linear)}})
''')


@pytest.mark.parametrize(("defined", "reported"), [
    ('''

class VisionTower(nn.Module):
    def forward(self, x):
        return x
''', False),
    ("from .vision_tower import VisionTower\n", True),
], ids=["a-class-of-the-same-name", "this-class-imported"])
def test_a_mention_of_another_class_of_the_same_name_leaves_the_instances_seen(repo, cli, defined, reported):
    files = _vllm()
    files[OTHER_TOWER[0]] = OTHER_TOWER[1].format(defined=defined)
    found = _review(repo, cli, files, VLLM_TOWER[0], *TOWER_READS["tower"])
    assert ((VLLM_TOWER[0], 21) in found) is reported, found
