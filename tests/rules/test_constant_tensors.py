"""Constant device tensors rebuilt per call, `None` defaults filled per call and full-size
intermediates made for a slice, each written in the styles of two engines the rule
examples do not use (DeepSpeed's inference v2 modules and Mistral's reference
inference), reviewed end to end as the change that adds them (`review --diff`): every
line marked `# defect` is reported, and nothing else; each look-alike stays quiet. A rule
reports one finding per function (repeats fold), so each defect has a function of its own."""

from __future__ import annotations

import textwrap

import pytest

from rltrefactor.api import ReviewRequest, review

from gitrepo import GitRepo

from .helpers import marked_lines, reviewed_in_diff



CONSTANT = "constant-tensor-rebuilt-per-call"
DEFAULT = "default-filled-per-call"
SLICE = "full-result-computed-for-a-slice"

DEFECTS = {
    "DeepSpeed: alpha vector of a GEMM module": (CONSTANT, """
        import torch

        class DSCutlassFP8Linear(DSLinearBase):
            def forward(self, hidden_states: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
                n_out = w.shape[0]
                alpha = torch.ones(n_out, dtype=torch.float32, device=hidden_states.device)  # defect
                output = self._output[:hidden_states.shape[0]]
                self._linear_impl(output, hidden_states, w, alpha)
                return output
        """),
    "Mistral: cu_seqlens of a fixed-length batch": (CONSTANT, """
        import torch
        from torch import nn

        class Attention(nn.Module):
            def forward(self, x: torch.Tensor, seqlen: int) -> torch.Tensor:
                bsz = x.shape[0] // seqlen
                cu_seqlens = torch.arange(0, (bsz + 1) * seqlen, step=seqlen, dtype=torch.int32, device=x.device)  # defect
                return varlen_attention(self.wq(x), self.wk(x), self.wv(x), cu_seqlens)
        """),
    "Mistral: mask from empty and element writes": (CONSTANT, """
        import torch
        from torch import nn

        class TransformerBlock(nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                keep = torch.empty(3, dtype=torch.bool, device=x.device)  # defect
                keep[0] = True
                keep[1:] = False
                return torch.where(keep[0], x, -x)

        class Attention(nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                pad = torch.full((x.shape[-1],), float("-inf"), device=x.device)  # defect
                return torch.maximum(x, pad)
        """),
    "DeepSpeed: bias default in a kernel wrapper": (DEFAULT, """
        import torch

        class DSBiasAddModule(DSModuleBase):
            def forward(self, activation: torch.Tensor, bias: torch.Tensor = None) -> torch.Tensor:
                if bias is None:
                    bias = torch.zeros(activation.shape[-1], dtype=activation.dtype, device=activation.device)  # defect
                self._kernel(activation, bias)
                return activation
        """),
    "Mistral: scale default as a conditional expression": (DEFAULT, """
        import torch
        from torch import nn
        from typing import Optional

        class FeedForward(nn.Module):
            def forward(self, x: torch.Tensor, scale: Optional[torch.Tensor] = None) -> torch.Tensor:
                scale = torch.ones(x.shape[-1], device=x.device) if scale is None else scale  # defect
                return self.w2(nn.functional.silu(self.w1(x)) * self.w3(x) * scale)
        """),
    "DeepSpeed: gate weights default in an MoE module": (DEFAULT, """
        import torch

        class DSMultiGemmMoE(DSMoEBase):
            def forward(self, hidden_states: torch.Tensor, gate_w=None) -> torch.Tensor:
                if gate_w is not None:
                    pass
                else:
                    gate_w = torch.full((hidden_states.shape[0],), 1.0, device=hidden_states.device)  # defect
                return self._moe_gemm(hidden_states, gate_w)
        """),
    "Mistral: greedy pick through softmax": (SLICE, """
        import torch
        from torch import nn

        class Transformer(nn.Module):
            def forward(self, logits: torch.Tensor) -> torch.Tensor:
                return torch.softmax(logits.float(), dim=-1).argmax(dim=-1)  # defect
        """),
    "DeepSpeed: log-probabilities of chosen tokens": (SLICE, """
        import torch
        import torch.nn.functional as F

        class DSUnembed(DSUnembedBase):
            def forward(self, logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
                return torch.gather(F.log_softmax(logits, dim=-1), -1, ids[:, None])  # defect
        """),
    "DeepSpeed: count of live sequences": (SLICE, """
        import torch

        class DSStateManager(DSStateManagerBase):
            def forward(self, done: torch.Tensor) -> int:
                return done.logical_not().nonzero().shape[0]  # defect
        """),
}

LOOK_ALIKES = {
    "DeepSpeed: fresh output written by the kernel and returned": (CONSTANT, """
        import torch

        class DSCutlassFP8Linear(DSLinearBase):
            def forward(self, hidden_states: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
                output = torch.zeros(hidden_states.shape[0], w.shape[0], device=hidden_states.device)
                self._linear_impl(output, hidden_states, w)
                return output
        """),
    "Mistral: buffer of data-dependent size filled by the next op": (CONSTANT, """
        import torch
        from torch import nn

        class Attention(nn.Module):
            def forward(self, x: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
                starts = torch.empty(lens.shape[0] + 1, dtype=torch.int32, device=x.device)
                torch.cumsum(lens, 0, out=starts[1:])
                counts = torch.zeros(lens.shape[0], device=x.device)
                counts.scatter_add_(0, lens.long(), torch.ones_like(lens, dtype=torch.float))
                return varlen_attention(x, starts, counts)
        """),
    "DeepSpeed: memoised on the module and in an lru_cache": (CONSTANT, """
        import functools
        import torch

        @functools.lru_cache(maxsize=16)
        def _unit_alpha(n: int, device: torch.device) -> torch.Tensor:
            return torch.ones(n, dtype=torch.float32, device=device)

        class DSCutlassFP8Linear(DSLinearBase):
            def forward(self, hidden_states: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
                if self._cu_seqlens is None:
                    self._cu_seqlens = torch.arange(0, 9, dtype=torch.int32, device=w.device)
                self._linear_impl(hidden_states, w, _unit_alpha(w.shape[0], w.device), self._cu_seqlens)
                return hidden_states
        """),
    "DeepSpeed: default stored back on the module": (DEFAULT, """
        import torch

        class DSBiasAddModule(DSModuleBase):
            def forward(self, activation: torch.Tensor, bias: torch.Tensor = None) -> torch.Tensor:
                if bias is None:
                    bias = torch.zeros(activation.shape[-1], device=activation.device)
                    self.bias = bias
                self._kernel(activation, bias)
                return activation
        """),
    "Mistral: default made only at construction": (DEFAULT, """
        import torch
        from torch import nn
        from typing import Optional

        class RMSNorm(nn.Module):
            def __init__(self, dim: int, weight: Optional[torch.Tensor] = None):
                super().__init__()
                if weight is None:
                    weight = torch.ones(dim, device="cuda")
                self.weight = nn.Parameter(weight)
        """),
    "DeepSpeed: out parameter filled with the fresh output": (DEFAULT, """
        import torch

        class DSPostNorm(DSPostNormBase):
            def forward(self, residual: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
                if out is None:
                    out = torch.empty_like(residual)
                self._fp_ln(out, residual, self.gamma, self.beta)
                return out
        """),
    "Mistral: softmax kept for sampling": (SLICE, """
        import torch

        def sample(logits: torch.Tensor, temperature: float) -> torch.Tensor:
            probs = torch.softmax(logits / temperature, dim=-1)
            greedy = probs.argmax(dim=-1)
            return torch.where(temperature > 0, torch.multinomial(probs, 1)[:, 0], greedy)
        """),
    "DeepSpeed: log-probabilities over the vocabulary returned too": (SLICE, """
        import torch
        import torch.nn.functional as F

        class DSUnembed(DSUnembedBase):
            def forward(self, logits: torch.Tensor, ids: torch.Tensor):
                logprobs = F.log_softmax(logits, dim=-1)
                return logprobs, logprobs.gather(-1, ids[:, None])
        """),
    "DeepSpeed: indices of live sequences used": (SLICE, """
        import torch

        class DSStateManager(DSStateManagerBase):
            def forward(self, done: torch.Tensor) -> torch.Tensor:
                live = done.logical_not().nonzero()
                return live[:, 0]
        """),
}


def _reviewed(tmp_path, rule: str, code: str) -> list[int]:
    return reviewed_in_diff(tmp_path, rule, code, "engine/layers.py")


@pytest.mark.parametrize("name", sorted(DEFECTS))
def test_each_defect_is_reported_on_its_line(tmp_path, name):
    rule, code = DEFECTS[name]
    assert marked_lines(code), "a defect case marks its lines"
    assert _reviewed(tmp_path, rule, code) == marked_lines(code)


@pytest.mark.parametrize("name", sorted(LOOK_ALIKES))
def test_each_look_alike_stays_quiet(tmp_path, name):
    rule, code = LOOK_ALIKES[name]
    assert _reviewed(tmp_path, rule, code) == []


def test_every_rule_has_three_defects_and_three_look_alikes():
    for rule in (CONSTANT, DEFAULT, SLICE):
        assert sum(r == rule for r, _ in DEFECTS.values()) >= 3
        assert sum(r == rule for r, _ in LOOK_ALIKES.values()) >= 3


def test_a_gemm_wrapper_default_is_reported_once_configuration_says_it_runs_per_step(tmp_path):
    code = """
        import torch

        def cutlass_scaled_mm(a, b, alpha=None):
            if alpha is None:
                alpha = torch.ones(b.shape[1], device=a.device)  # defect
            return ops.cutlass_scaled_mm(a, b, alpha)
        """
    assert _reviewed(tmp_path, DEFAULT, code) == []  # nothing in the file says how often it runs
    repo_settings = '[tool.rltrefactor]\nhot-paths = ["**"]\n'
    repo = GitRepo(tmp_path / "configured")
    repo.write("pyproject.toml", repo_settings)
    repo.commit("base")
    repo.write("engine/gemm.py", textwrap.dedent(code))
    repo.commit("head")
    result = review(ReviewRequest(repo=str(repo.path), diff="HEAD~1..HEAD", use_cache=False, jobs=1,
                                  overrides={"select": (DEFAULT,)}))
    assert [f.span.line for f in result.findings] == marked_lines(code)
