"""Precision on real engine code: look-alikes cut from vLLM, SGLang, vllm-ascend and
LMDeploy stay quiet through the whole engine (paths, applicability, prefilters), and
prefilters never hide a hit the matcher would make."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from rltrefactor.config import Config
from rltrefactor.matching.engine import Engine, select_rules
from rltrefactor.library.loader import load_library

LIBRARY = load_library()
ROOT = Path(__file__).resolve().parents[2]


def engine(*, prefilters: bool = True) -> Engine:
    config = Config()
    built = Engine(select_rules(LIBRARY, config), config, frozenset(r.id for r in LIBRARY.rules))
    if not prefilters:
        built._matchers = [(rule, _Unfiltered(m)) for rule, m in built._matchers]
    return built


class _Unfiltered:
    def __init__(self, inner) -> None:
        self.rule_id, self.prefilter, self.reach, self._inner = inner.rule_id, (), inner.reach, inner

    def find(self, ctx):
        return self._inner.find(ctx)


def review(path: str, code: str, *, prefilters: bool = True) -> list[tuple[str, int]]:
    outcome = engine(prefilters=prefilters).review_file(path, textwrap.dedent(code))
    return sorted((f.rule_id, f.span.line) for f in outcome.findings)


# Each case: a path where the code really lives and code a senior reviewer would not act on.
QUIET = {
    "numpy-on-host-tensor": ("vllm_ascend/worker/pcp_utils.py", """
        def remap(self, req, mask):
            dst = req.mrope_positions[:, -1:].numpy()
            return dst
        """),
    "weight-processing-is-cold": ("vllm_ascend/attention/sfa_v1.py", """
        import torch
        class Impl:
            def _process_weights_for_fused_mlapo(self, w, device):
                self.w_cpu = w.cpu()
                self.scale = torch.tensor([1], device=device)
        """),
    "event-wait-and-sync-helpers": ("vllm_ascend/worker/model_runner_v1.py", """
        import torch
        class Runner:
            def _update_seq_lens_cpu(self):
                self.num_computed_tokens_event.synchronize()
            def _sync_device(self):
                torch.npu.synchronize()
        """),
    "pinned-per-call-tensor": ("vllm/v1/sample/rejection_sampler.py", """
        import torch
        def sample(num_draft_tokens, device):
            return torch.tensor(num_draft_tokens, pin_memory=True).to(device, non_blocking=True)
        """),
    "mode-is-configuration": ("vllm/v1/sample/sampler.py", """
        def forward(self, logits):
            if self.logprobs_mode == "processed_logits":
                return logits
        """),
    "layer-namespace-in-quantization": ("vllm/model_executor/layers/quantization/fp8.py", """
        class Method:
            def apply(self, layer, x):
                layer._chunk_size = x.shape[0]
                return x
        """),
    "lazy-static-buffer": ("vllm_ascend/ops/vocab_parallel_embedding.py", """
        import torch
        class Embedding:
            def _forward(self, x):
                if not hasattr(self, "_gather_buf"):
                    self._gather_buf = torch.empty_like(x)
                return self._gather_buf.copy_(x)
        """),
    "guard-in-cleanup": ("vllm_ascend/patch/worker/patch_distributed.py", """
        class Group:
            def __init__(self):
                self.device_group = None
            def destroy(self):
                if hasattr(self, "device_group"):
                    del self.device_group
        """),
    "engine-idiom-names": ("sglang/srt/managers/scheduler.py", """
        def schedule(self, reqs):
            for req in reqs:
                bs = len(req.output_ids)
            return bs
        """),
    "data-like-bool-parameter": ("vllm/model_executor/layers/batch_invariant.py", """
        def reduce_sum(x, dim=None, keepdim: bool = False, async_op=False):
            return x.sum(dim, keepdim=keepdim)
        """),
    "bool-into-custom-op": ("vllm/compilation/passes/fusion.py", """
        import torch
        def replacement(x):
            return torch.ops.vllm.maybe_all_gather_and_maybe_unpad(x, True)
        """),
    "version-check-helper": ("vllm_ascend/patch/worker/patch_uva.py", """
        import triton
        def check_triton_ascend_version_valid():
            if triton.__version__ in ("3.2.0",):
                return False
            return True
        """),
    "capability-declaration-helper": ("sglang/srt/utils/common.py", """
        import torch
        def is_sm90_supported(device=None):
            return torch.cuda.get_device_capability(device)[0] >= 9
        """),
    "spec-decode-draft-loop": ("lmdeploy/pytorch/spec_decode/spec_agent.py", """
        def forward(self, inputs, loop_count):
            for loop_idx in range(loop_count):
                inputs.position_ids += 1
        """),
    "minimum-version-requirement": ("vllm/tokenizers/fastokens.py", """
        from packaging.version import Version
        def get_fast_tokenizer(installed, minimum):
            if installed is None or Version(installed) < Version(minimum):
                raise ImportError(f"fastokens >= {minimum} is required")
            return installed
        """),
    "minimum-capability-rejected": ("deepspeed/ops/transformer/inference/op_binding/base.py", """
        import torch
        def build_op(device):
            major, _ = torch.cuda.get_device_capability(device)
            if major < 8:
                raise RuntimeError("this kernel needs compute capability 8.0 or newer")
        """),
    "quantization-config-module": ("vllm_ascend/quantization/modelslim_config.py", """
        def apply_mapper(self, model_type):
            if model_type == "qwen3_omni_moe":
                return self.mapper
        """),
}


@pytest.mark.parametrize("name", sorted(QUIET))
def test_real_engine_look_alikes_stay_quiet(name):
    path, code = QUIET[name]
    assert review(path, code) == []


def test_the_real_defects_next_to_them_still_report():
    code = """
        import torch
        class Runner:
            def _update_states(self, batch):
                torch.npu.current_stream().synchronize()
                n = int(batch.seq_lens.max().item())
                return torch.tensor(batch.ids).to(self.device, non_blocking=True), n
            def get_hcomm_info(self, group):
                if torch.__version__ > "2.0":
                    return group.rank
        """
    found = review("vllm_ascend/worker/model_runner_v1.py", code)
    assert ("device-synchronize-in-hot-path", 5) in found
    assert ("host-sync-in-hot-path", 6) in found
    assert ("non-blocking-copy-from-pageable-memory", 7) in found
    assert ("branch-on-library-version", 9) in found


def _example_files():
    for rule in LIBRARY.rules:
        for example in rule.examples:
            yield example.path, example.code
    for file in sorted((ROOT / "examples" / "demo_engine").rglob("*.py")):
        yield str(file.relative_to(ROOT / "examples" / "demo_engine")), file.read_text()


def test_prefilters_never_hide_a_hit():
    for path, code in _example_files():
        assert review(path, code) == review(path, code, prefilters=False), path
