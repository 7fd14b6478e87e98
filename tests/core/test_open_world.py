"""What the file cannot show is unknown, never proof: verdicts read from evidence in the
code, each with a look-alike that keeps the other verdict."""

from __future__ import annotations

import textwrap

from rltrefactor.context.execution import execution_map
from rltrefactor.source.syntax import parse_tree


def _kinds(text: str) -> dict[str, tuple[str, str]]:
    found = execution_map(parse_tree(textwrap.dedent(text)))
    return {f.qualname: (f.kind, f.evidence) for f in found.functions}


BUILDER = """
    class MetadataBuilder:
        def __init__(self, device):
            self.device = device

        def capture(self, max_batch):
            self.graph_metadata = self.build(max_batch)

        def build(self, num_reqs):
            lengths = self.seq_lens[:num_reqs]
            return lengths.max().item()

        def _workspace(self, n):
            return n * 2

        def reserve(self, n):
            self.workspace = self._workspace(n)
"""


def test_a_public_method_its_file_calls_only_at_capture_stays_unknown():
    # A model runner in another module calls it per step: ``self.attn_metadata_builder.build(...)``.
    kinds = _kinds(BUILDER)
    assert kinds["MetadataBuilder.build"] == ("unknown", "")


def test_a_private_helper_only_one_time_code_calls_is_one_time():
    kinds = _kinds(BUILDER.replace("def reserve(self, n)", "def __post_init__(self, n)"))
    assert kinds["MetadataBuilder._workspace"] == ("one-time", "only called from MetadataBuilder.__post_init__")


def test_a_private_helper_handed_on_as_a_value_stays_unknown():
    text = BUILDER.replace("def reserve(self, n)", "def __post_init__(self, n)") + (
        "\n        def hooks(self):\n            return [self._workspace]\n"
    )
    assert _kinds(text)["MetadataBuilder._workspace"] == ("unknown", "")


TIMED = """
    import time
    import torch


    class Trainer:
        def forward_backward_step(self, batch):
            loss = self.model(batch).sum()
            loss.backward()
            self.log_step(loss)

        def log_step(self, loss):
            torch.cuda.synchronize()
            elapsed = time.perf_counter() - self.started
            self.metrics.append(elapsed)

        def benchmark_throughput(self, batch):
            torch.cuda.synchronize()
            started = time.perf_counter()
            self.model(batch)
            torch.cuda.synchronize()
            return time.perf_counter() - started
"""


def test_a_function_that_times_itself_runs_as_often_as_its_callers():
    kinds = _kinds(TIMED.replace("log_step", "record_metrics"))
    assert kinds["Trainer.record_metrics"] == ("per-step", "called from Trainer.forward_backward_step")


def test_benchmark_code_stays_offline_by_its_name():
    assert _kinds(TIMED)["Trainer.benchmark_throughput"][0] == "offline"


NO_GRAD = """
    import torch


    class Checkpointer:
        @torch.no_grad()
        def restore(self, model, path):
            state = torch.load(path)
            staging = torch.empty(state["numel"], device="cuda")
            model.copy_from(staging)


    class Engine:
        @torch.compile
        def fused_rmsnorm(self, x):
            scratch = torch.empty_like(x)
            return scratch.copy_(x)
"""


def test_no_grad_says_nothing_about_how_often_a_function_runs():
    assert _kinds(NO_GRAD)["Checkpointer.restore"] == ("unknown", "")


def test_a_compiled_function_runs_per_step():
    assert _kinds(NO_GRAD)["Engine.fused_rmsnorm"] == ("per-step", "a compiled kernel")


DISPATCH = """
    import torch


    def _sdpa_attention(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


    def _eager_attention(q, k, v):
        weights = torch.empty(q.shape[0], k.shape[0], device=q.device)
        return weights.softmax(-1) @ v


    def _export_attention(q, k, v):
        return q


    ATTENTION_FUNCTIONS = {"sdpa": _sdpa_attention, "eager": _eager_attention}
    EXPORTERS = [_export_attention]


    class SelfAttention(torch.nn.Module):
        def forward(self, q, k, v):
            return ATTENTION_FUNCTIONS[self.implementation](q, k, v)
"""


def test_every_entry_of_a_table_forward_calls_into_runs_per_step():
    kinds = _kinds(DISPATCH)
    expected = "called from SelfAttention.forward through the table `ATTENTION_FUNCTIONS`"
    assert kinds["_eager_attention"] == ("per-step", expected)
    assert kinds["_sdpa_attention"] == ("per-step", expected)


def test_a_table_no_per_step_code_calls_into_proves_nothing():
    assert _kinds(DISPATCH)["_export_attention"] == ("unknown", "")
