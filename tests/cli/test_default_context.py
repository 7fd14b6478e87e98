"""Where code runs and where values live, with no ``[tool.rltrefactor]`` table: each
shape that needs the repository or the open world, end to end, beside a look-alike."""

from __future__ import annotations

import textwrap
from pathlib import Path

from rltrefactor.api import ReviewRequest, review
from tests.gitrepo import GitRepo


def _findings(tmp_path: Path, base: dict[str, str], head: dict[str, str]) -> list[tuple[str, str, int, str]]:
    """(path, rule, line, context) of every new finding of ``base..head``; no configuration."""
    repo = GitRepo(tmp_path / "repo")
    for path, text in base.items():
        repo.write(path, textwrap.dedent(text))
    repo.commit("base")
    repo.git("branch", "base")
    for path, text in head.items():
        repo.write(path, textwrap.dedent(text))
    repo.commit("head")
    result = review(ReviewRequest(repo=str(repo.path), diff="base..HEAD", use_cache=False, jobs=1))
    return [(f.path, f.rule_id, f.span.line, f.execution) for f in result.findings if not f.suppressed]


RUNNER = """
    class ModelRunner:
        def execute_model(self, scheduler_output):
            metadata = self.attn_metadata_builder.build(scheduler_output.num_reqs)
            return self.model(metadata)
"""

BUILDER = """
    import torch


    class MetadataBuilder:
        def __init__(self, device):
            self.seq_lens = torch.zeros(256, dtype=torch.int32, device=device)

        def capture(self, max_batch):
            self.graph_metadata = self.build(max_batch)

        def build(self, num_reqs):
            return self.seq_lens[:num_reqs]
"""


def test_a_public_build_another_module_calls_per_step_gets_its_sync_reported(tmp_path):
    synced = BUILDER.replace("            return self.seq_lens[:num_reqs]",
                             "            longest = self.seq_lens[:num_reqs].max().item()\n"
                             "            return self.seq_lens[:longest]")
    found = _findings(tmp_path, {"eng/runner.py": RUNNER, "eng/builder.py": BUILDER}, {"eng/builder.py": synced})
    assert any(path == "eng/builder.py" and "sync" in rule for path, rule, _, _ in found), found


def test_a_private_helper_only_capture_calls_keeps_its_sync_quiet(tmp_path):
    synced = BUILDER.replace("self.graph_metadata = self.build(max_batch)", "self.graph_metadata = self._warm(max_batch)") + (
        "\n        def _warm(self, n):\n            return self.seq_lens[:n].max().item()\n")
    found = _findings(tmp_path, {"eng/runner.py": RUNNER, "eng/builder.py": BUILDER}, {"eng/builder.py": synced})
    assert found == []


TRAINER = """
    import torch


    class Trainer:
        def train(self):
            for batch in self.loader:
                loss = self.model(batch)
                loss.backward()
                self.optimizer.step()
"""

LAUNCHER = """
    from train.trainer import Trainer


    def build():
        return Trainer()


    if __name__ == "__main__":
        build().train()
"""


def test_a_launchers_main_block_leaves_the_training_loop_reviewed(tmp_path):
    synced = TRAINER.replace("                loss.backward()\n",
                             "                loss.backward()\n                self.losses.append(loss.item())\n")
    found = _findings(tmp_path, {"train/trainer.py": TRAINER, "train/launch.py": LAUNCHER}, {"train/trainer.py": synced})
    assert [(rule, context) for path, rule, _, context in found if path == "train/trainer.py"], found
    assert all(context not in ("offline", "one-time") for _, _, _, context in found)


TIMED = """
    import time
    import torch


    class Worker:
        def execute_model(self, batch):
            out = self.model(batch)
            self.record(out)
            return out

        def record(self, out):
            self.outputs.append(out)
"""


def test_a_per_step_function_that_adds_a_sync_and_a_clock_read_is_reported(tmp_path):
    timed = TIMED.replace("            self.outputs.append(out)",
                          "            torch.cuda.synchronize()\n            self.latency.append(time.perf_counter() - self.t0)\n"
                          "            self.outputs.append(out)")
    found = _findings(tmp_path, {"eng/worker.py": TIMED}, {"eng/worker.py": timed})
    assert any(rule == "device-synchronize-in-hot-path" for _, rule, _, _ in found), found


def test_a_benchmark_that_syncs_and_reads_a_clock_stays_quiet(tmp_path):
    bench = TIMED + (
        "\n        def benchmark_latency(self, batch):\n            torch.cuda.synchronize()\n"
        "            started = time.perf_counter()\n            self.model(batch)\n            torch.cuda.synchronize()\n"
        "            return time.perf_counter() - started\n")
    assert _findings(tmp_path, {"eng/worker.py": TIMED}, {"eng/worker.py": bench}) == []


LOADER = """
    import torch


    class Checkpointer:
        @torch.no_grad()
        def restore(self, model, state):
            for name, value in state.items():
                model.get_parameter(name).copy_(value)
"""


def test_a_no_grad_checkpoint_loader_gets_no_per_step_finding(tmp_path):
    staged = LOADER.replace("            for name, value in state.items():",
                            "            staging = torch.empty(len(state), device=\"cuda\")\n"
                            "            for name, value in state.items():")
    found = _findings(tmp_path, {"eng/checkpoint.py": LOADER}, {"eng/checkpoint.py": staged})
    assert [context for _, _, _, context in found if context == "per-step"] == []


def test_a_compiled_step_that_syncs_is_reported(tmp_path):
    compiled = LOADER + (
        "\n\n@torch.compile\ndef fused_residual(x, y):\n    scale = y.abs().max().item()\n    return x + y / scale\n")
    compiled_base = LOADER + "\n\n@torch.compile\ndef fused_residual(x, y):\n    return x + y\n"
    found = _findings(tmp_path, {"eng/checkpoint.py": compiled_base}, {"eng/checkpoint.py": compiled})
    assert [context for _, _, _, context in found] == ["per-step"], found


DECODE = """
    import numpy as np
    import torch


    def decode_lengths(payload):
        return torch.from_numpy(np.frombuffer(payload, dtype=np.int32))


    def upload_lengths(payload, device):
        return torch.from_numpy(np.frombuffer(payload, dtype=np.int32)).to(device)
"""

SERVER = """
    from eng.decode import decode_lengths, upload_lengths


    class Server:
        def step(self, request):
            lengths = decode_lengths(request.payload)
            return lengths
"""


def test_a_from_numpy_tensor_of_another_module_read_with_tolist_is_not_a_sync(tmp_path):
    read = SERVER.replace("            return lengths", "            return lengths.tolist()")
    found = _findings(tmp_path, {"eng/decode.py": DECODE, "eng/server.py": SERVER}, {"eng/server.py": read})
    assert found == []


def test_an_uploaded_tensor_of_another_module_read_with_tolist_is_a_sync(tmp_path):
    read = SERVER.replace("decode_lengths(request.payload)", "upload_lengths(request.payload, self.device)").replace(
        "            return lengths", "            return lengths.tolist()")
    found = _findings(tmp_path, {"eng/decode.py": DECODE, "eng/server.py": SERVER}, {"eng/server.py": read})
    assert [rule for _, rule, _, _ in found], found


ATTENTION = """
    import torch


    def _sdpa(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


    def _eager(q, k, v):
        return (q @ k.transpose(-1, -2)).softmax(-1) @ v


    ATTENTION = {"sdpa": _sdpa, "eager": _eager}


    class SelfAttention(torch.nn.Module):
        def forward(self, q, k, v):
            return ATTENTION[self.implementation](q, k, v)
"""


def test_a_dispatch_table_forward_calls_into_makes_its_functions_per_step(tmp_path):
    masked = ATTENTION.replace("        return (q @ k.transpose(-1, -2)).softmax(-1) @ v",
                               "        scale = q.abs().max().item()\n"
                               "        return ((q @ k.transpose(-1, -2)) / scale).softmax(-1) @ v")
    found = _findings(tmp_path, {"eng/attention.py": ATTENTION}, {"eng/attention.py": masked})
    assert [(rule, context) for _, rule, _, context in found if context == "per-step"], found


def test_a_table_no_per_step_code_calls_into_proves_nothing(tmp_path):
    unused = ATTENTION.replace("            return ATTENTION[self.implementation](q, k, v)", "            return _sdpa(q, k, v)")
    masked = unused.replace("        return (q @ k.transpose(-1, -2)).softmax(-1) @ v",
                            "        scale = q.abs().max().item()\n"
                            "        return ((q @ k.transpose(-1, -2)) / scale).softmax(-1) @ v")
    found = _findings(tmp_path, {"eng/attention.py": unused}, {"eng/attention.py": masked})
    assert [context for _, _, _, context in found if context == "per-step"] == []


RUNNER_STEP = """
    import torch


    class Runner:
        def execute_model(self, batch):
            return batch
"""


def _one_finding(tmp_path, body: str):
    head = RUNNER_STEP.replace("            return batch", body)
    (finding,) = [f for f in review_of(tmp_path, RUNNER_STEP, head) if f.rule_id == "host-sync-in-hot-path"]
    return finding


def review_of(tmp_path, base: str, head: str):
    repo = GitRepo(tmp_path / "repo")
    repo.write("eng/runner.py", textwrap.dedent(base))
    repo.commit("base")
    repo.git("branch", "base")
    repo.write("eng/runner.py", textwrap.dedent(head))
    repo.commit("head")
    return review(ReviewRequest(repo=str(repo.path), diff="base..HEAD", use_cache=False, jobs=1)).findings


def test_a_read_of_a_value_the_function_does_not_place_is_a_conditional_low_confidence_claim(tmp_path):
    finding = _one_finding(tmp_path, "            return batch.sum().item()")
    assert finding.confidence == "low"
    (note,) = [n for n in finding.notes if "lives is not visible" in n]  # a caveat: --explain and JSON, not the impact
    assert note.startswith("Where `batch.sum()` lives is not visible in this function")


def test_a_read_of_a_value_the_function_puts_on_the_device_keeps_its_confidence(tmp_path):
    finding = _one_finding(tmp_path, "            placed = batch.to(self.device)\n            return placed.sum().item()")
    assert finding.confidence == "medium"  # a per-step name is the evidence of how often it runs
    assert "lives is not visible" not in finding.explanation


def test_a_parameter_annotated_as_a_numpy_array_is_host_memory(tmp_path):
    base = RUNNER_STEP.replace("def execute_model(self, batch):", "def execute_model(self, batch, lengths: np.ndarray):").replace(
        "import torch\n", "import numpy as np\n    import torch\n")
    head = base.replace("            return batch", "            return lengths.tolist()")
    assert [f for f in review_of(tmp_path, base, head) if f.rule_id == "host-sync-in-hot-path"] == []


def test_a_parameter_annotated_as_a_tensor_is_not_host_memory(tmp_path):
    base = RUNNER_STEP.replace("def execute_model(self, batch):", "def execute_model(self, batch, lengths: torch.Tensor):")
    head = base.replace("            return batch", "            return lengths.tolist()")
    assert [f.rule_id for f in review_of(tmp_path, base, head)] == ["host-sync-in-hot-path"]
