"""Protocol models as data: how often the methods of well-known bases run, decided by the
class's base as the file's imports resolve it, never by the method's name alone."""

from __future__ import annotations

import textwrap

import pytest

from rltrefactor.context.execution import execution_map
from rltrefactor.errors import RuleLibraryError
from rltrefactor.library.protocols import bundled_protocols, parse_protocols
from rltrefactor.source.syntax import parse_tree


def _kinds(text: str) -> dict[str, tuple[str, str]]:
    found = execution_map(parse_tree(textwrap.dedent(text)))
    return {f.qualname: (f.kind, f.basis) for f in found.functions}


def test_a_metadata_builders_build_runs_per_step_by_its_framework_base():
    kinds = _kinds("""
        from vllm.v1.attention.backends.utils import AttentionMetadataBuilder


        class FlashMetadataBuilder(AttentionMetadataBuilder[FlashMetadata]):
            def build(self, common_prefix_len, common_attn_metadata):
                return common_attn_metadata.seq_lens.max().item()

            def build_for_cudagraph_capture(self, common_attn_metadata):
                return self.build(0, common_attn_metadata)
    """)
    assert kinds["FlashMetadataBuilder.build"] == ("per-step", "protocol")
    assert kinds["FlashMetadataBuilder.build_for_cudagraph_capture"] == ("one-time", "protocol")


def test_the_same_method_name_on_a_class_no_model_holds_proves_nothing():
    kinds = _kinds("""
        class ReportBuilder:
            def build(self, rows):
                return rows
    """)
    assert kinds["ReportBuilder.build"] == ("unknown", "")


def test_a_base_is_resolved_through_aliases_and_the_files_own_classes():
    kinds = _kinds("""
        from torch import nn


        class Block(nn.Module):
            pass


        class DecoderLayer(Block):
            def forward(self, hidden):
                return hidden
    """)
    assert kinds["DecoderLayer.forward"] == ("per-step", "protocol")


def test_a_processor_runs_per_request_and_per_step_rules_leave_it_alone():
    kinds = _kinds("""
        from transformers import ProcessorMixin


        class VisionProcessor(ProcessorMixin):
            def __call__(self, images):
                return images
    """)
    assert kinds["VisionProcessor.__call__"] == ("per-request", "protocol")


def test_every_method_of_a_multimodal_processor_runs_per_request_in_two_engines_styles():
    kinds = _kinds("""
        import torch
        from vllm.multimodal.processing import BaseMultiModalProcessor, BaseProcessingInfo
        from vllm.multimodal.processing.dummy_inputs import BaseDummyInputsBuilder


        class QwenVLProcessingInfo(BaseProcessingInfo):
            def get_num_video_tokens(self, grid_thw):
                return int(grid_thw.prod().item())


        class QwenVLMultiModalProcessor(BaseMultiModalProcessor[QwenVLProcessingInfo]):
            def _get_prompt_updates(self, mm_items, out_mm_kwargs):
                def get_replacement(item_idx):
                    return out_mm_kwargs["grid_thw"][item_idx].tolist()
                return get_replacement


        class QwenVLDummyInputsBuilder(BaseDummyInputsBuilder[QwenVLProcessingInfo]):
            def get_dummy_mm_data(self, seq_len, mm_counts):
                return torch.zeros(seq_len)


        class QwenVLForConditionalGeneration(torch.nn.Module):
            def forward(self, input_ids, grid_thw):
                return grid_thw.tolist()
    """)
    assert kinds["QwenVLProcessingInfo.get_num_video_tokens"] == ("per-request", "protocol")
    assert kinds["QwenVLMultiModalProcessor._get_prompt_updates"] == ("per-request", "protocol")
    assert kinds["QwenVLMultiModalProcessor._get_prompt_updates.<locals>.get_replacement"][0] == "per-request"
    assert kinds["QwenVLDummyInputsBuilder.get_dummy_mm_data"] == ("one-time", "protocol")
    assert kinds["QwenVLForConditionalGeneration.forward"] == ("per-step", "protocol")  # the model itself runs per step
    sglang = _kinds("""
        from sglang.srt.multimodal.processors.base_processor import BaseMultimodalProcessor as SGLangBaseProcessor


        class KimiVLImageProcessor(SGLangBaseProcessor):
            async def process_mm_data_async(self, image_data, input_text, request_obj):
                return self.grid_thws.tolist()
    """)
    assert sglang["KimiVLImageProcessor.process_mm_data_async"] == ("per-request", "protocol")


def test_an_fx_interpreter_runs_when_a_graph_is_compiled_not_per_step():
    kinds = _kinds("""
        import torch
        from torch.fx import Interpreter


        class ProfilingInterpreter(Interpreter):
            def run_node(self, n):
                out = super().run_node(n)
                torch.cuda.synchronize()
                return out


        class Runner(torch.nn.Module):
            def forward(self, x):
                torch.cuda.synchronize()
                return x
    """)
    assert kinds["ProfilingInterpreter.run_node"] == ("one-time", "protocol")
    assert kinds["Runner.forward"] == ("per-step", "protocol")


def test_a_named_method_outranks_the_wildcard_of_its_model():
    protocols = parse_protocols(textwrap.dedent("""
        protocols:
          - bases: [acme.Pipeline]
            methods:
              "*": per-request
              warm_up: once
            source: acme docs
    """), "protocols.yaml")
    assert protocols.method(("acme.Pipeline",), "warm_up").frequency == "once"
    assert protocols.method(("acme.Pipeline",), "run").frequency == "per-request"
    assert protocols.method(("acme.Other",), "run") is None


def test_a_cpu_backends_method_is_named_by_its_model_and_no_other():
    protocols = bundled_protocols()
    found = protocols.host_method(("vllm.model_executor.custom_op.CustomOp",), "forward_cpu")
    assert found is not None and found.pattern == "vllm.*.CustomOp"
    assert protocols.host_method(("vllm.model_executor.custom_op.CustomOp",), "forward_cuda") is None
    assert protocols.host_method(("torch.nn.modules.module.Module",), "forward_cpu") is None


def test_the_bundled_models_load_and_answer():
    protocols = bundled_protocols()
    assert protocols.method(("torch.autograd.function.Function",), "backward").frequency == "per-layer"
    assert protocols.method(("sglang.srt.layers.attention.base_attn_backend.AttentionBackend",), "forward_decode").frequency == "per-layer"
    assert protocols.method(("mypackage.layers.Base",), "forward") is None


@pytest.mark.parametrize(("text", "message"), [
    ("protocols:\n  - bases: [torch.nn.Module]\n    methods: {forward: every-step}\n    source: x\n",
     "methods: forward: unknown frequency 'every-step'; use one of per-layer, per-step, per-request, once"),
    ("protocols:\n  - bases: [torch..Module]\n    methods: {forward: per-step}\n    source: x\n",
     "bases: 'torch..Module' is not a dotted name"),
    ("protocols:\n  - bases: [torch.nn.Module]\n    methods: {forward: per-step}\n    sorce: x\n",
     "sorce"),
    ("protocols:\n  - bases: [acme.Op]\n    methods: {forward: per-layer}\n    host-methods: forward_cpu\n    source: x\n",
     "host-methods: expected a list of method names"),
])
def test_a_bad_model_is_a_one_line_error_naming_its_line(text, message):
    with pytest.raises(RuleLibraryError) as info:
        parse_protocols(text, "protocols.yaml")
    assert str(info.value).startswith("protocols.yaml:") and message in str(info.value)
    assert "\n" not in str(info.value)


def _configured(tmp_path, body: str):
    from rltrefactor.config import declared_for, load_config

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n\n" + body)
    config = load_config(str(tmp_path))
    return config, declared_for(config, "eng/blocks.py")


BLOCKS = """
    from myengine.layers.base import DecoderBlock


    class LoopedBlock(DecoderBlock):
        def advance_block(self, hidden):
            return hidden

        def warm_up(self):
            return None
"""


def test_a_projects_own_base_is_modelled_in_its_configuration(tmp_path):
    _, declared = _configured(tmp_path, textwrap.dedent("""
        [[tool.rltrefactor.protocols]]
        bases = ["myengine.layers.*.DecoderBlock"]
        methods = { advance_block = "per-layer", warm_up = "once" }
        source = "docs/architecture.md"
    """))
    found = execution_map(parse_tree(textwrap.dedent(BLOCKS)), declared)
    kinds = {f.qualname: (f.kind, f.basis) for f in found.functions}
    assert kinds["LoopedBlock.advance_block"] == ("per-step", "protocol")
    assert kinds["LoopedBlock.warm_up"] == ("one-time", "protocol")


def test_without_the_model_the_same_base_proves_nothing(tmp_path):
    kinds = _kinds(BLOCKS)
    assert kinds["LoopedBlock.advance_block"] == ("unknown", "")


def test_a_bad_configured_model_is_a_one_line_error_naming_pyproject_and_its_line(tmp_path):
    from rltrefactor.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        _configured(tmp_path, "[tool.rltrefactor]\n\n[[tool.rltrefactor.protocols]]\nbases = [\"x.Y\"]\nmethods = { f = \"hourly\" }\n")
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'pyproject.toml'}:6: [[tool.rltrefactor.protocols]]"), message
    assert "unknown frequency 'hourly'; use one of per-layer, per-step, per-request, once" in message and "\n" not in message
