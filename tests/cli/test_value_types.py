"""What a value is, read by the type engine across the repository, decides whether a host
read in per-step code is reported: a helper in another module that returns a numpy array,
an attribute a constructor fills with one, a list of Python numbers are host values; a
helper that returns a device tensor is not. Each case is a change reviewed end to end with
no configuration, written in two engines' styles."""

from __future__ import annotations

import pytest

SCHEDULER_STYLE_HELPERS = '''import numpy as np
import torch


def build_logprob_matrix(num_reqs, vocab):
    return np.zeros((num_reqs, vocab), dtype=np.float32)


def gather_token_counts(reqs):
    return [len(r) for r in reqs]


def build_penalties(num_reqs, device):
    return torch.ones(num_reqs, device=device)
'''

SCHEDULER_STYLE_BASE = '''from srt.sampling.helpers import build_logprob_matrix, build_penalties, gather_token_counts


class ScheduleBatch:
    def __init__(self, reqs, device):
        self.reqs = reqs
        self.device = device
        self.history = build_logprob_matrix(len(reqs), 8)

    def prepare_for_decode(self):
        return len(self.reqs)
'''

RUNNER_STYLE_HELPERS = '''import numpy as np
import torch


class LogprobsLists:
    def __init__(self, rows):
        self.rows = rows


def compute_topk_logprobs(logits: np.ndarray, k):
    return logits.argsort(axis=-1)[:, -k:]


def make_scale(n, device):
    return torch.full((n,), 2.0, device=device)
'''

RUNNER_STYLE_BASE = '''from engine.worker.logprob_utils import compute_topk_logprobs, make_scale


class GPUModelRunner:
    def __init__(self, device):
        self.device = device

    def execute_model(self, scheduler_output):
        return scheduler_output
'''


def _review(repo, cli, files: dict[str, str], base: str, base_path: str, head_body: str):
    for path, text in files.items():
        repo.write(path, text)
    repo.write(base_path, base)
    repo.commit("base")
    repo.write(base_path, base.rsplit("\n    def ", 1)[0] + head_body)
    run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    assert run.code in (0, 1), run.err
    return run.json()


def _lines(report: dict, source: str) -> dict[int, str]:
    return {f["line"]: f["rule"] for f in report["findings"] if f["path"] == source}


SCHEDULER_DECODE = '''
    def prepare_for_decode(self):
        counts = gather_token_counts(self.reqs)
        longest = max(counts)
        best = self.history.max().item()
        penalties = build_penalties(len(self.reqs), self.device)
        worst = penalties.min().item()
        return longest, best, worst
'''


@pytest.fixture
def scheduler_report(repo, cli):
    return _review(repo, cli, {"srt/sampling/helpers.py": SCHEDULER_STYLE_HELPERS}, SCHEDULER_STYLE_BASE,
                   "srt/managers/schedule_batch.py", SCHEDULER_DECODE)


def test_attribute_filled_with_a_numpy_array_is_a_host_value(scheduler_report):
    # `self.history.max().item()`: `history` is assigned build_logprob_matrix(...) in __init__, an ndarray
    assert 13 not in _lines(scheduler_report, "srt/managers/schedule_batch.py")


def test_helper_returning_a_device_tensor_is_still_reported(scheduler_report):
    found = _lines(scheduler_report, "srt/managers/schedule_batch.py")
    assert found.get(15) == "host-sync-in-hot-path", scheduler_report["findings"]
    finding = next(f for f in scheduler_report["findings"] if f["line"] == 15)
    # a tensor whose device nothing shows: a warning that says which fact is missing
    assert finding["severity"] == "warning"
    assert any("the type engine says" in note and "does not name a device" in note for note in finding["notes"])


RUNNER_EXECUTE = '''
    def execute_model(self, scheduler_output):
        topk = compute_topk_logprobs(scheduler_output.logits, 5)
        ids = topk.tolist()
        scale = make_scale(len(ids), self.device)
        factor = scale.sum().item()
        return ids, factor
'''


@pytest.fixture
def runner_report(repo, cli):
    return _review(repo, cli, {"engine/worker/logprob_utils.py": RUNNER_STYLE_HELPERS}, RUNNER_STYLE_BASE,
                   "engine/worker/gpu_model_runner.py", RUNNER_EXECUTE)


def test_helper_returning_numpy_from_another_module_is_a_host_value(runner_report):
    # `topk.tolist()`: compute_topk_logprobs returns an ndarray, so nothing waits for the device
    assert 10 not in _lines(runner_report, "engine/worker/gpu_model_runner.py")


def test_helper_returning_a_device_tensor_in_another_style_is_reported(runner_report):
    found = _lines(runner_report, "engine/worker/gpu_model_runner.py")
    assert found.get(12) == "host-sync-in-hot-path", runner_report["findings"]


@pytest.mark.parametrize(("helpers", "base", "path", "head", "host_line"), [
    ({"engine/worker/logprob_utils.py": RUNNER_STYLE_HELPERS}, RUNNER_STYLE_BASE, "engine/worker/gpu_model_runner.py",
     RUNNER_EXECUTE, 10),
    ({"srt/sampling/helpers.py": SCHEDULER_STYLE_HELPERS}, SCHEDULER_STYLE_BASE, "srt/managers/schedule_batch.py",
     SCHEDULER_DECODE, 13),
], ids=["runner", "scheduler"])
def test_without_the_type_engine_the_host_values_are_reported_again(repo, cli, helpers, base, path, head, host_line):
    repo.write("pyproject.toml", "[tool.rltrefactor]\ntype-engine = false\n")
    report = _review(repo, cli, helpers, base, path, head)
    found = [f for f in report["findings"] if f["path"] == path]
    lines = {f["line"] for f in found} | {line for f in found for line in f.get("also_at", [])}
    assert host_line in lines, found  # the name alone does not say where the value lives: the old reading stays


def test_a_review_without_the_engine_says_so_in_one_line_and_finds_the_same(repo, monkeypatch, tmp_path):
    from rltrefactor.api import ReviewRequest, review_change
    from rltrefactor.context import typeengine

    for path, text in {"engine/worker/logprob_utils.py": RUNNER_STYLE_HELPERS,
                       "engine/worker/gpu_model_runner.py": RUNNER_STYLE_BASE}.items():
        repo.write(path, text)
    repo.commit("base")
    repo.write("engine/worker/gpu_model_runner.py", RUNNER_STYLE_BASE.rsplit("\n    def ", 1)[0] + RUNNER_EXECUTE)
    request = ReviewRequest(repo=str(repo.path), diff="main", use_cache=False)
    monkeypatch.setattr(typeengine, "_find_executable", lambda python: None)
    without = review_change(request)
    off = review_change(ReviewRequest(repo=str(repo.path), diff="main", use_cache=False,
                                      overrides={"type_engine": False}))
    notes = [w for w in without.warnings if w.startswith("type engine off")]
    assert len(notes) == 1 and "not installed" in notes[0] and "\n" not in notes[0]
    assert [(f.span.line, f.rule_id) for f in without.result.findings] == [(f.span.line, f.rule_id) for f in off.result.findings]
    assert without.result.gate_failed == off.result.gate_failed and without.result.findings
    assert not [w for w in off.warnings if w.startswith("type engine off")]  # turned off on purpose: nothing to say


TRAINER_BASE = '''import torch


class TrainingEngine:
    def __init__(self, module: torch.nn.Module, clip: float):
        self.module = module
        self.clip = clip
        self.host_copies = [p.detach().cpu() for p in module.parameters()]

    def backward(self, loss):
        loss.backward()
'''

TRAINER_CONFIG = '''[tool.rltrefactor]
fail-on = "error"
hot-functions = ["backward"]
'''


@pytest.mark.parametrize(("params", "blocks"), [
    ("self.module.parameters()", True),
    ("self.host_copies", False),  # copies made on the host once, at construction: not a module's parameters
], ids=["device-gradient", "host-copy-look-alike"])
def test_a_parameter_gradient_read_in_declared_per_step_code_is_an_error(repo, cli, params, blocks):
    repo.write("pyproject.toml", TRAINER_CONFIG)
    repo.write("runtime/engine.py", TRAINER_BASE)
    repo.commit("base")
    repo.write("runtime/engine.py", TRAINER_BASE + f'''        for param in {params}:
            if param.grad is not None:
                norm = param.grad.norm().item()
                print(norm)
''')
    repo.git("add", "-A")
    run = cli("review", "--staged", "--format", "json", "--no-cache", cwd=repo.path)
    errors = [f for f in run.json()["findings"] if f["severity"] == "error"]
    if blocks:  # the gradient of a module's parameter is on the device, in code the configuration runs per step
        assert run.code == 1 and [f["line"] for f in errors] == [14], run.json()["findings"]
        assert any("a module's parameter" in note for note in errors[0]["notes"]), errors[0]
    else:
        assert run.code == 0 and not errors, run.json()["findings"]


EXIT_BASE = '''import torch


class LoopedRunner:
    def __init__(self, device: str, threshold: float):
        self.device = device
        self.exit_threshold = threshold

    def decode_step(self, hidden):
        return hidden
'''

EXIT_STEP = '''
    def decode_step(self, hidden):
        exited = torch.zeros(hidden.shape[0], dtype=torch.bool, device=self.device)
        exited = exited | (hidden.mean(-1) >= self.exit_threshold)
        if exited.all().item():
            return hidden
        return hidden
'''


def test_python_numbers_and_string_devices_do_not_make_a_tensor_a_host_value(repo, cli):
    # `self.device: str` names a device wherever it points, and a float threshold combines
    # with the device tensor it is compared to: `exited` stays a device value.
    report = _review(repo, cli, {}, EXIT_BASE, "engine/looped_runner.py", EXIT_STEP)
    assert _lines(report, "engine/looped_runner.py").get(12) == "host-sync-in-hot-path", report["findings"]


DEVICE_ARGUMENT_BASE = '''import torch


class Runner:
    def __init__(self, device: str):
        self.device = device

    @classmethod
    def from_model(cls, model, device: str = None):
        return cls(device)

    def execute_model(self, logits):
        return logits
'''

DEVICE_ARGUMENT_HEAD = '''import torch


class Runner:
    def __init__(self, device: str):
        self.device = device

    @classmethod
    def from_model(cls, model, device: str = None):
        if device:
            model = model.to(device)
        return cls(device)

    def execute_model(self, logits):
        noise = torch.zeros(logits.shape[0], device=self.device)
        return logits + noise
'''


def test_a_device_typed_as_a_string_is_still_a_device(repo, cli):
    # `device: str` says nothing of where it points: the per-step allocation stays reported,
    # and moving a model to it is no copy to the host.
    repo.write("engine/runner.py", DEVICE_ARGUMENT_BASE)
    repo.commit("base")
    repo.write("engine/runner.py", DEVICE_ARGUMENT_HEAD)
    report = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path).json()
    found = _lines(report, "engine/runner.py")
    assert found.get(15) == "device-allocation-per-step", report["findings"]
    assert 11 not in found, report["findings"]


def test_the_project_interpreter_can_be_named_and_a_wrong_one_is_said_in_one_line(repo, cli):
    repo.write("rltrefactor.toml", 'type-engine-python = ".venv/bin/python"\n')  # no such environment here
    for path, text in {"engine/worker/logprob_utils.py": RUNNER_STYLE_HELPERS,
                       "engine/worker/gpu_model_runner.py": RUNNER_STYLE_BASE}.items():
        repo.write(path, text)
    repo.commit("base")
    repo.write("engine/worker/gpu_model_runner.py", RUNNER_STYLE_BASE.rsplit("\n    def ", 1)[0] + RUNNER_EXECUTE)
    report_run = cli("review", "--diff", "main", "--no-cache", cwd=repo.path)
    lines = [line for line in report_run.err.splitlines() if "type engine off" in line]
    assert report_run.code == 1 and len(lines) == 1, report_run.err
    assert f"{repo.path}/.venv/bin/python is not an executable file" in lines[0]
