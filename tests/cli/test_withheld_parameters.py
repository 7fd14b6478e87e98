"""Code that runs only when an optional parameter is given or differs from its default
(``if param_padding is not None: ...``, ``if norm_type == inf:`` of ``norm_type=2``) runs as
often as the calls that give it. Where only construction, warm-up or
capture code passes the parameter and the per-step calls leave it out, that code runs on
no step and its findings are not reported; a per-step call that passes it, or a function
that rebinds the parameter before the test, keeps them. End to end through ``review
--diff``, no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

DEEPSPEED_BASE = ("deepspeed/runtime/base_optimizer.py", '''class ZeROOptimizer:
    def step(self, closure=None):
        raise NotImplementedError
''')

# DeepSpeed's ZeRO style: the constructor pads each parameter once; the step flattens
# gradients without padding.
DEEPSPEED_ZERO = ("deepspeed/runtime/zero/stage_flat.py", '''import torch

from deepspeed.runtime.base_optimizer import ZeROOptimizer


class FlatZeroOptimizer(ZeROOptimizer):
    def __init__(self, groups, alignment):
        self.groups = groups
        self.alignment = alignment
        self.padding = [[4 for _ in group] for group in groups]
        self.flat = [self.flatten_aligned(group, alignment, param_padding=padding)
                     for group, padding in zip(groups, self.padding)]

    def flatten_aligned(self, tensors, alignment, param_padding=None):
        if param_padding is not None:
            padded = []
            for tensor, padding in zip(tensors, param_padding):
                padded.append(tensor)
                padded.append(torch.zeros(padding, dtype=tensor.dtype, device=tensor.device))
            tensors = padded
        return torch.cat(tensors)

    def step(self, closure=None):
        return [self.flatten_aligned(group, self.alignment) for group in self.groups]
''')
ZERO_PADDED_STEP = ('''        return [self.flatten_aligned(group, self.alignment) for group in self.groups]''',
                    '''        return [self.flatten_aligned(group, self.alignment, param_padding=padding)
                for group, padding in zip(self.groups, self.padding)]''')
ZERO_REBOUND = ('''    def flatten_aligned(self, tensors, alignment, param_padding=None):
''', '''    def flatten_aligned(self, tensors, alignment, param_padding=None):
        if param_padding is None and alignment > 1:
            param_padding = [alignment - 1 for _ in tensors]
''')


@pytest.mark.parametrize(("variant", "reported"), [("as-written", False), ("padded-step", True), ("rebound", True)])
def test_code_only_the_constructor_reaches_by_giving_a_parameter_runs_once(review_added, variant, reported):
    path, text = DEEPSPEED_ZERO
    if variant == "padded-step":
        text = text.replace(*ZERO_PADDED_STEP)
    elif variant == "rebound":
        text = text.replace(*ZERO_REBOUND)
    findings = review_added({path: text}, base=dict([DEEPSPEED_BASE]))
    allocation = "padded.append(torch.zeros(padding"
    line = next(n for n, row in enumerate(text.splitlines(), 1) if allocation in row)
    lines = {f["line"] for f in findings if f["rule"] == "device-allocation-per-step"}
    assert (line in lines) is reported, findings


VLLM_BACKEND = ("vllm/v1/attention/backend.py", '''class AttentionMetadataBuilder:
    def build(self, common_prefix_len, common_attn_metadata):
        raise NotImplementedError
''')

# vLLM's metadata-builder style: only the CUDA-graph capture hands the builder the
# accepted lengths; the per-step build leaves them out.
VLLM_BUILDER = ("vllm/v1/attention/backends/draft_attn.py", '''from vllm.v1.attention.backend import AttentionMetadataBuilder


class DraftMetadataBuilder(AttentionMetadataBuilder):
    def build(self, common_prefix_len, common_attn_metadata, num_accepted=None):
        seq_lens = common_attn_metadata.seq_lens
        if num_accepted is not None:
            longest = int(num_accepted.max().item())
            seq_lens = seq_lens[:longest]
        return seq_lens

    def build_for_cudagraph_capture(self, common_attn_metadata):
        return self.build(0, common_attn_metadata, num_accepted=common_attn_metadata.seq_lens)
''')
VLLM_PER_STEP_CALLER = ("vllm/v1/spec_decode/draft_proposer.py", '''class DraftProposer:
    def propose(self, builder, common_attn_metadata, num_accepted):
        return builder.build(0, common_attn_metadata, num_accepted=num_accepted)
''')


@pytest.mark.parametrize(("per_step_caller", "reported"), [(False, False), (True, True)],
                         ids=["capture-only", "a-proposer-also-passes-it"])
def test_code_only_the_capture_reaches_by_giving_a_parameter_is_not_per_step(review_added, per_step_caller, reported):
    added = dict([VLLM_BUILDER, VLLM_PER_STEP_CALLER]) if per_step_caller else dict([VLLM_BUILDER])
    findings = review_added(added, base=dict([VLLM_BACKEND]))
    lines = {f["line"] for f in findings if f["rule"] in ("host-sync-in-hot-path", "device-scalar-read-in-hot-path")}
    assert (8 in lines) is reported, findings


# DeepSpeed's gradient-norm style: the infinity norm runs only for callers that ask for it;
# the optimizer's step keeps the default L2 norm.
DEEPSPEED_NORMS = ("deepspeed/runtime/norm_utils.py", '''import torch
from math import inf


def get_weight_norm(parameters, norm_type=2, mpu=None):
    if norm_type == inf:
        total_norm = max(p.data.abs().max() for p in parameters)
        return float(total_norm.item())
    return sum(p.data.float().norm(norm_type) ** norm_type for p in parameters)
''')
DEEPSPEED_NORM_CALLER = ("deepspeed/runtime/fp16/norm_optimizer.py", '''from deepspeed.runtime.base_optimizer import ZeROOptimizer
from deepspeed.runtime.norm_utils import get_weight_norm


class NormOptimizer(ZeROOptimizer):
    def step(self, closure=None):
        return get_weight_norm(self.params, NORM_TYPE)
''')


@pytest.mark.parametrize(("norm_type", "reported"), [("mpu=self.mpu", False), ("norm_type=self.norm_type", True)],
                         ids=["default-norm", "norm-type-passed"])
@pytest.mark.parametrize("first", ["", "norm_type = float(norm_type)", "norm_type = 2 * norm_type"],
                         ids=["as-given", "cast-kept", "rebound"])
def test_a_branch_on_a_non_default_value_runs_as_often_as_the_calls_that_pass_it(review_added, norm_type, reported, first):
    caller = DEEPSPEED_NORM_CALLER[1].replace("NORM_TYPE", norm_type)
    norms = DEEPSPEED_NORMS[1]
    if first:  # DeepSpeed's own first line casts the parameter: the value it was given is kept
        norms = norms.replace("    if norm_type == inf:", f"    {first}\n    if norm_type == inf:")
    findings = review_added({DEEPSPEED_NORMS[0]: norms, DEEPSPEED_NORM_CALLER[0]: caller}, base=dict([DEEPSPEED_BASE]))
    lines = {f["line"] for f in findings if f["rule"] in ("host-sync-in-hot-path", "device-scalar-read-in-hot-path")
             and f["path"] == DEEPSPEED_NORMS[0]}
    line = 9 if first else 8
    assert (line in lines) is (reported or first == "norm_type = 2 * norm_type"), findings


# DeepSpeed's gating style: a branch on the default itself, written with other quotes,
# runs on every call that leaves the parameter out.
DEEPSPEED_GATING = ("deepspeed/moe/gating_utils.py", '''import torch


def topkgating(logits, k, capacity, drop_policy: str = "probs"):
    if drop_policy == POLICY:
        selection = min(capacity, torch.tensor(logits.size(0)).to(logits.device))
        return torch.topk(logits, k=selection, dim=0)
    return torch.topk(logits, k=k, dim=1)
''')
DEEPSPEED_GATE = ("deepspeed/moe/gate_layer.py", '''import torch

from deepspeed.moe.gating_utils import topkgating


class TopKGate(torch.nn.Module):
    def forward(self, logits):
        return topkgating(logits, self.k, self.capacity)
''')


@pytest.mark.parametrize(("policy", "reported"), [("'probs'", True), ("'position'", False)],
                         ids=["the-default-other-quotes", "another-policy"])
def test_a_branch_on_the_default_value_runs_on_calls_that_leave_it_out(review_added, policy, reported):
    gating = DEEPSPEED_GATING[1].replace("POLICY", policy)
    findings = review_added(dict([(DEEPSPEED_GATING[0], gating), DEEPSPEED_GATE]))
    lines = {f["line"] for f in findings if f["rule"] == "host-to-device-copy-per-call" and f["path"] == DEEPSPEED_GATING[0]}
    assert (6 in lines) is reported, findings


# vLLM's micro-batch style: a closure tests its runner's flag, which only the CUDA-graph
# capture sets; the per-step call leaves it at its default.
VLLM_UBATCH = ("vllm/v1/worker/gpu/ubatch_runner.py", '''import torch


class UbatchRunner:
    def run(self, model, chunks, for_capture=False):
        def run_ubatch(chunk):
            if for_capture:
                warm = int(chunk.sum().item())
                chunk = chunk[:warm]
            return model(chunk)

        return [run_ubatch(chunk) for chunk in chunks]
''')
VLLM_UBATCH_CALLERS = ("vllm/v1/worker/gpu/ubatch_model_runner.py", '''from vllm.v1.worker.gpu.ubatch_runner import UbatchRunner


class UbatchModelRunner:
    def __init__(self, model):
        self.model = model
        self.runner = UbatchRunner()

    def capture_model(self, chunks):
        return self.runner.run(self.model, chunks, for_capture=True)

    def execute_model(self, chunks):
        return self.runner.run(self.model, chunks, STEP)
''')
# DeepSpeed's style: a reduction checks for overflow only when asked, which the step does not.
DEEPSPEED_REDUCE = ("deepspeed/runtime/zero/overflow_reduce.py", '''import torch

from deepspeed.runtime.base_optimizer import ZeROOptimizer


class OverflowReducer(ZeROOptimizer):
    def reduce(self, grads, check_overflow=False):
        flat = torch.cat([g.flatten() for g in grads])
        if check_overflow and flat.numel() > 0:
            if bool(torch.isinf(flat).any().item()):
                raise FloatingPointError("overflow")
        return flat

    def initialize_checks(self, grads):
        return self.reduce(grads, check_overflow=True)

    def step(self, closure=None):
        return self.reduce(self.grads, STEP)
''')


@pytest.mark.parametrize("case", ["vllm-closure", "deepspeed-and"])
@pytest.mark.parametrize(("step", "reported"), [(False, False), (True, True)], ids=["left-out", "step-sets-it"])
def test_a_branch_on_a_flag_only_cold_calls_set_is_not_per_step(review_added, case, step, reported):
    if case == "vllm-closure":
        keyword = "for_capture"
        added = {VLLM_UBATCH[0]: VLLM_UBATCH[1], VLLM_UBATCH_CALLERS[0]: VLLM_UBATCH_CALLERS[1].replace("STEP", f"{keyword}=True" if step else "")}
        path, marker, base = VLLM_UBATCH[0], "warm = int(chunk.sum().item())", None
    else:
        keyword = "check_overflow"
        added = {DEEPSPEED_REDUCE[0]: DEEPSPEED_REDUCE[1].replace("STEP", f"{keyword}=True" if step else "")}
        path, marker, base = DEEPSPEED_REDUCE[0], "torch.isinf(flat).any().item()", dict([DEEPSPEED_BASE])
    findings = review_added(added, base=base)
    line = next(n for n, row in enumerate(added[path].splitlines(), 1) if marker in row)
    lines = {f["line"] for f in findings if f["path"] == path
             and f["rule"] in ("host-sync-in-hot-path", "device-scalar-read-in-hot-path", "device-tensor-as-python-number")}
    assert (line in lines) is reported, findings


# SGLang's AITER style: a resolver reads a device length only where a caller hands one in,
# ``if extend_seq_lens is not None and extend_seq_lens.numel() > 0:``; every call leaves it
# out. A caller that passes it, per step, keeps the read.
SGLANG_RESOLVER = ("sglang/srt/layers/attention/draft_resolver.py", '''import torch
from torch import nn


class DraftExtendBackend(nn.Module):
    def __init__(self, num_draft_tokens=None):
        super().__init__()
        self.num_draft_tokens = num_draft_tokens

    def _resolve_num_draft_tokens(self, extend_seq_lens=None, extend_seq_lens_cpu=None):
        num_draft_tokens = self.num_draft_tokens
        if num_draft_tokens is None:
            if extend_seq_lens is not None and extend_seq_lens.numel() > 0:
                num_draft_tokens = int(extend_seq_lens[0].item())
            elif extend_seq_lens_cpu:
                num_draft_tokens = max(extend_seq_lens_cpu)
        return num_draft_tokens

    def forward(self, q, forward_batch):
        n = self._resolve_num_draft_tokens(CALL)
        return q[:n]
''')


@pytest.mark.parametrize(("call", "reported"), [
    ("", False),
    ("extend_seq_lens_cpu=forward_batch.extend_seq_lens_cpu", False),  # the other parameter given: still not this one
    ("forward_batch.extend_seq_lens", True),
], ids=["nothing-given", "the-host-list-given", "the-device-lengths-given"])
def test_a_conjunction_that_needs_a_parameter_no_call_gives_runs_on_no_step(review_added, call, reported):
    path, text = SGLANG_RESOLVER
    findings = review_added({path: text.replace("CALL", call)})
    lines = {f["line"] for f in findings if f["rule"] == "host-sync-in-hot-path"}
    assert (14 in lines) is reported, findings
