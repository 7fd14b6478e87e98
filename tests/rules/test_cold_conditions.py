"""Which branches run cold: conditions that hold only when type checking, compiling,
debugging or run as a script; one-time guards whose body keeps what it builds; early
returns on degenerate inputs."""

from __future__ import annotations

import functools
import textwrap

import libcst as cst
import pytest

from rltrefactor.config import Config
from rltrefactor.library.loader import load_library
from rltrefactor.matching.engine import Engine, select_rules
from rltrefactor.matching.matchers.base import FileContext
from rltrefactor.matching.matchers.context import is_cold_condition, is_never_true, runs_cold
from rltrefactor.matching.matchers.early_returns import is_degenerate_check

from .helpers import context


@pytest.mark.parametrize(
    "test",
    [
        '__name__ == "__main__"',
        "TYPE_CHECKING",
        "logger.isEnabledFor(logging.DEBUG) and x.isnan().any()",
        "torch.compiler.is_compiling()",
        "self.debug",
        "self.validate_folding_routing",  # an opt-in validation pass
        "envs.VLLM_VALIDATE_SCHEDULE and step % 100 == 0",
        "self.debug or envs.VLLM_PROFILE",  # every operand of an ``or`` is a diagnostic
    ],
)
def test_cold_conditions(test: str) -> None:
    assert is_cold_condition(cst.parse_expression(test))


@pytest.mark.parametrize(
    "test",
    [
        # The name of an object's type is read on every call, not only when run as a script.
        'not any(m.__class__.__name__ == "ThunderModule" for m in model.modules())',
        'type(layer).__name__ == "FusedMoE"',
        'fn.__name__ in self.hooks',
        "x.is_cuda and n > 0",
        "not self.validated",  # holds in ordinary runs once validated... or never: says nothing
        "not self.is_async or is_profile",  # holds in every synchronous run
    ],
)
def test_hot_conditions(test: str) -> None:
    assert not is_cold_condition(cst.parse_expression(test))


@pytest.mark.parametrize("test", ["False", "0", "None", "self.bc is not None and False", "False and x.any()",
                                  "(False) or 0"])
def test_conditions_false_as_written(test: str) -> None:
    assert is_never_true(cst.parse_expression(test))


@pytest.mark.parametrize("test", ["True", "1", "x and y", "False or x.any()", "not False", "self.enabled is False"])
def test_conditions_that_may_hold(test: str) -> None:
    assert not is_never_true(cst.parse_expression(test))


def test_a_cache_rebuilt_only_when_missing_or_stale_runs_cold_and_its_look_alikes_do_not() -> None:
    code = """
    class Decoder:
        def output(self, n):
            if self.out is None or self.out.shape[1] != 2 * n:
                self.out = upload(n)
            if self.out is None or n > self.limit:
                self.out = upload(n)
            if self.spare is None or self.spare.shape[0] < n:
                other = upload(n)
            if self.bc is not None and False:
                upload(n)
            if self.ready or self.out is None:
                self.out = upload(n)
            return self.out
    """
    ctx = context(code)
    calls = [c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "upload"]
    cold = sorted(ctx.span(c).line for c in calls if runs_cold(c, ctx))
    # Line 6's second operand is not the cache; line 8 does not rebuild what it tests;
    # line 12's ``self.ready`` is not the cache either.
    assert cold == [5, 11]


def test_a_cache_built_in_a_conditional_expression_runs_cold_and_its_look_alikes_do_not() -> None:
    code = """
    class Attention:
        def forward(self, x, n):
            self.mask = upload(n) if self.mask is None else self.mask
            self.rope = self.rope if self.rope is not None else upload(n)
            self.buf = upload(n) if self.buf is None or self.buf.shape[0] < n else self.buf
            self.buf = upload(n) if self.buf is None or n > self.limit else self.buf
            other = upload(n) if self.mask is None else self.mask
            self.mask = self.mask if self.mask is None else upload(n)
            self.rope = upload(n) if self.mask is None else self.rope
            return x
    """
    ctx = context(code)
    calls = [c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "upload"]
    cold = sorted(ctx.span(c).line for c in calls if runs_cold(c, ctx))
    # Line 7's second operand is not the cache; line 8 does not keep what it builds;
    # line 9 builds when the cache is present; line 10 tests another attribute.
    assert cold == [4, 5, 6]


# The whole engine, as a review runs it (regions, prefilters, applicability): a snippet's
# ``# expect`` lines must report one of these rules, and no other line may.
PER_CALL_RULES = frozenset({"host-to-device-copy-per-call", "device-allocation-per-step"})
ATTENTION = "vllm/v1/attention/backends/flash_attn.py"
LOSSES = "verl/trainer/ppo/core_algos.py"
RUNNER = "vllm/v1/worker/gpu_model_runner.py"


@functools.lru_cache(maxsize=1)
def _engine() -> Engine:
    library, config = load_library(), Config()
    return Engine(select_rules(library, config), config, frozenset(rule.id for rule in library.rules))


def _per_call_lines(path: str, code: str) -> list[int]:
    outcome = _engine().review_file(path, textwrap.dedent(code))
    return sorted({f.span.line for f in outcome.findings if f.rule_id in PER_CALL_RULES})


def _expected_lines(code: str) -> list[int]:
    return [number for number, line in enumerate(textwrap.dedent(code).splitlines(), 1) if line.endswith("# expect")]


# A guard is cold only when what its body builds persists (an attribute, a module-level
# cache): a guard that fills a local or a parameter's default runs on every call that
# needs it, so what it allocates there is allocated per call.
GUARDS_THAT_FILL_LOCALS = {
    "attention-backend": (ATTENTION, """
        import torch

        class FlashAttentionImpl:
            def forward(self, layer, query, key, value, attn_metadata, output=None, scale=None, alibi=None):
                if scale is None:
                    scale = torch.tensor([self.scale], device=query.device)  # expect
                alibi = torch.tensor(self.alibi_slopes, device=query.device) if alibi is None else alibi  # expect
                if not hasattr(layer, "_k_scale_float"):
                    k_scale = torch.tensor([1.0], device=query.device)  # expect
                if not self.initialized:
                    block_table = torch.tensor(attn_metadata.block_ids, device=query.device)  # expect
                if not hasattr(self, "_q_scale"):
                    self._q_scale = torch.tensor([1.0], device=query.device)
                if not hasattr(self, "_v_scale"):
                    v_scale = torch.tensor([1.0], device=query.device)
                    self._v_scale = v_scale
                if not self.initialized:
                    self.positions = torch.tensor(attn_metadata.positions, device=query.device)
                    self.initialized = True
                return self.kernel(query, key, value, output, scale, alibi, k_scale, block_table)
        """),
    "loss-functions": (LOSSES, """
        import torch

        _CLASS_WEIGHTS = {}
        _CAUSAL = None


        def class_weighted_loss(logits, labels, weights=None, eps=None):
            if weights is None:
                weights = torch.tensor([1.0, 2.0], device=logits.device)  # expect
            eps = torch.tensor([1e-6], device=logits.device) if eps is None else eps  # expect
            classes = logits.shape[-1]
            if classes not in _CLASS_WEIGHTS:
                _CLASS_WEIGHTS[classes] = torch.tensor([1.0] * classes, device=logits.device)
            return (weights * logits * _CLASS_WEIGHTS[classes] + eps).sum()


        def causal_mask(n, device):
            global _CAUSAL
            if _CAUSAL is None:
                _CAUSAL = torch.tensor([[j <= i for j in range(n)] for i in range(n)], device=device)
            return _CAUSAL


        class FocalLoss(torch.nn.Module):
            def forward(self, logits, labels, mask):
                if not self.ready:
                    alpha = torch.tensor([0.25, 0.75], device=logits.device)  # expect
                if not self.ready:
                    self.alpha = torch.tensor([0.25, 0.75], device=logits.device)
                    self.ready = True
                if self.ready is None:
                    gamma = torch.tensor([2.0], device=logits.device)  # expect
                return (self.alpha * alpha * gamma * logits * causal_mask(8, logits.device)).sum()


        def train_step(batch, model, loss):
            for micro in batch:
                class_weighted_loss(model(micro), micro.labels) + loss(micro.logits, micro.labels, micro.mask)
        """),
}


@pytest.mark.parametrize("name", sorted(GUARDS_THAT_FILL_LOCALS))
def test_a_guard_is_cold_only_when_what_it_builds_persists(name: str) -> None:
    path, code = GUARDS_THAT_FILL_LOCALS[name]
    assert _per_call_lines(path, code) == _expected_lines(code)


# An early return (or raise) on a degenerate input (empty, zero-size, zero-variance, None)
# is cold: the small tensor it builds is no per-call copy. The common path, a size of one,
# a flag of the object, and a degenerate check that falls through stay per call.
EARLY_RETURNS = {
    "attention-backend": (ATTENTION, """
        import torch

        class FlashAttentionImpl:
            def forward(self, layer, query, key, value, attn_metadata, output=None):
                if attn_metadata is None:
                    return torch.tensor([], device=query.device)
                if query.numel() == 0:
                    return torch.tensor([], device=query.device)
                seq_lens = attn_metadata.seq_lens
                if not seq_lens:
                    return torch.tensor([0], device=query.device)
                num_tokens = query.shape[0]
                if num_tokens == 0:
                    empty = torch.tensor([], device=query.device)
                    return empty
                if key.size(0) == 0 or value is None:
                    return torch.tensor([], device=query.device)
                if query.shape[0] == 1:
                    return torch.tensor(seq_lens, device=query.device)  # expect
                if not self.enabled:
                    return torch.tensor([0], device=query.device)  # expect
                if key.numel() > 0:
                    lens = torch.tensor(seq_lens, device=query.device)  # expect
                    return self.kernel(query, key, value, lens)
                if output is None:
                    output = torch.tensor([0.0], device=query.device)  # expect
                if value.numel() == 0:
                    value = torch.tensor([0.0], device=query.device)  # expect
                if num_tokens == 0 or query.shape[0] > 1:
                    return torch.tensor([0], device=query.device)  # expect
                return self.kernel(query, key, value, output)
        """),
    "loss-functions": (LOSSES, """
        import torch


        def compute_advantages(rewards, lengths, group_size, normalize: bool = True):
            if not lengths:
                return torch.tensor([], device=rewards.device)
            seq_len = rewards.size(1)
            if seq_len == 0:
                empty = torch.tensor([], device=rewards.device)
                return empty
            std = rewards.std()
            if std == 0:
                return torch.tensor(0.0, device=rewards.device)
            if rewards.var(dim=-1) <= 0:
                return torch.tensor(0.0, device=rewards.device)
            if len(lengths) == 0:
                shape = torch.tensor(rewards.shape, device=rewards.device)
                raise ValueError(f"no lengths for rewards of shape {shape}")
            if not normalize:
                return torch.tensor(lengths, device=rewards.device)  # expect
            if group_size == 1:
                return torch.tensor(lengths, device=rewards.device)  # expect
            if rewards.numel() > 0:
                scale = torch.tensor(lengths, device=rewards.device)  # expect
                return rewards * scale
            if lengths is None:
                lengths = torch.tensor([seq_len], device=rewards.device)  # expect
            if seq_len == 0:
                rewards = torch.tensor([0.0], device=rewards.device)  # expect
            return rewards / std


        def update_policy(batches):
            for batch in batches:
                compute_advantages(batch.rewards, batch.lengths, batch.group_size)
        """),
    "model-runner": (RUNNER, """
        import torch

        class GPUModelRunner:
            def execute_model(self, scheduler_output):
                num_tokens = scheduler_output.total_num_scheduled_tokens
                if num_tokens == 0:
                    return torch.zeros(1, device=self.device)
                if num_tokens == 1:
                    return torch.zeros(1, device=self.device)  # expect
                return self.model(torch.zeros(num_tokens, device=self.device))  # expect
        """),
}


@pytest.mark.parametrize("name", sorted(EARLY_RETURNS))
def test_an_early_return_on_a_degenerate_input_is_cold_and_its_look_alikes_are_not(name: str) -> None:
    path, code = EARLY_RETURNS[name]
    assert _per_call_lines(path, code) == _expected_lines(code)


def test_a_region_that_leaves_a_branch_body_out_gets_the_whole_file_answer() -> None:
    # A rule reading only the statement that builds the value has the ``return`` and the
    # ``self._scale = scale`` left out of what it parses (emptied lines keep their numbers).
    code = textwrap.dedent("""
    import torch

    class FlashAttentionImpl:
        def forward(self, query, output):
            if query.numel() == 0:
                lens = upload(query)
                return output
            if not hasattr(self, "_scale"):
                scale = upload(query)
                self._scale = scale
            if query.numel() == 1:
                lens = upload(query)
                return output
            return output
    """)
    whole = context(code)
    region_text = "\n".join("" if line.strip() in ("return output", "self._scale = scale") else line
                            for line in code.splitlines()) + "\n"
    region = FileContext(whole.model, cst.parse_module(region_text), text=region_text)
    for ctx in (whole, region):
        calls = [c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "upload"]
        assert [ctx.span(c).line for c in calls if not runs_cold(c, ctx)] == [13]


def _degenerate(test: str) -> bool:
    ctx = context(f"""
    class Impl:
        def forward(self, x, batch, mask=None, use_cache: bool = True, seq_len=0):
            if {test}:
                return x
    """)
    branch = ctx.nodes(cst.If)[0]
    function = ctx.enclosing_function(branch)
    assert function is not None
    return is_degenerate_check(branch.test, function, ctx)


@pytest.mark.parametrize("test", [
    "x.numel() == 0", "len(batch) == 0", "x.shape[0] == 0", "x.size(1) <= 0", "0 == x.size()[0]", "x.std() == 0",
    "x.var(dim=-1) == 0.0", "stats.reward_std == 0", "seq_len == 0", "not batch", "mask is None",
    "batch.input_ids is None", "mask is None or x.numel() == 0", "x.is_cuda and seq_len == 0",
])
def test_degenerate_input_checks(test: str) -> None:
    assert _degenerate(test)


@pytest.mark.parametrize("test", [
    "x.numel() > 0", "x.numel() != 0", "seq_len == 1", "x.dim() == 0", "not self.enabled", "not use_cache",
    "self.cache is None", "mask is not None", "mask is None or seq_len > 1", "not x.is_cuda", "x.sum() == 0",
])
def test_checks_that_do_not_find_a_degenerate_input(test: str) -> None:
    assert not _degenerate(test)
