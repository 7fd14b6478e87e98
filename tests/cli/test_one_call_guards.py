"""Code that runs on one call only: a graph captured per shape, where the method that
captures it stores it under the key the guard found missing (``if key not in
self.graphs: self._create(x)``, ``if key in self.graphs: return`` then ``self._capture(key)``),
and a one-shot save after ``if _save_path is None: return`` that clears the path before
any other exit, where only construction sets it. Its reads are not reported. The same code
is reported when the capture stores somewhere else, when the path is cleared only after an
exit that may leave it set, and when another method sets the value again each step. End to end through ``review --diff``, no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

# SGLang's ViT graph runner: a guard in ``run``, the store two methods down.
SGLANG_GRAPHS = ("sglang/srt/multimodal/vit_graph_runner.py", '''import torch
from torch import nn


class VitGraphRunner(nn.Module):
    def __init__(self):
        super().__init__()
        self.graphs = {}
        self.other = {}

    def _warmup(self, key, cu):
        max_len = int(cu.max().item())
        return max_len

    def _capture(self, key, x):
        graph = torch.cuda.CUDAGraph()
        STORE = graph

    def _create(self, x, cu):
        key = x.shape[0]
        self._warmup(key, cu)
        self._capture(key, x)

    def forward(self, x, cu):
        key = x.shape[0]
        if key not in self.graphs:
            self._create(x, cu)
        self.graphs[key].replay()
        return x
''', "self.graphs[key]", "self.other[key]")

# vLLM's encoder graphs: a return on the key found, then the capture.
VLLM_GRAPHS = ("vllm/v1/worker/encoder_graphs.py", '''import torch
from torch import nn


class EncoderGraphs(nn.Module):
    def __init__(self):
        super().__init__()
        self.graphs = {}
        self.other = {}

    def _record(self, key, x):
        STORE = torch.cuda.CUDAGraph()

    def _ensure(self, x, lens):
        key = x.shape[0]
        if key in self.graphs:
            return key
        longest = lens.max().item()
        self._record(key, x)
        return longest

    def forward(self, x, lens):
        self._ensure(x, lens)
        return x
''', "self.graphs[key]", "self.other[key]")

GRAPHS = {"sglang": (SGLANG_GRAPHS, ".item()"), "vllm": (VLLM_GRAPHS, ".item()")}


def _line_of(text: str, read: str) -> int:
    return next(number for number, line in enumerate(text.split("\n"), 1) if read in line)


def _sync_lines(findings: list[dict]) -> set[int]:
    return {line for f in findings if f["rule"] == "host-sync-in-hot-path" for line in (f["line"], *f.get("also_at", []))}


@pytest.mark.parametrize("stored", [True, False], ids=["stores-the-missed-key", "stores-elsewhere"])
@pytest.mark.parametrize("style", sorted(GRAPHS))
def test_a_capture_per_key_through_methods_runs_once_per_key(review_added, style, stored):
    (path, text, kept, elsewhere), read = GRAPHS[style]
    written = text.replace("STORE", kept if stored else elsewhere)
    assert (_line_of(written, read) in _sync_lines(review_added({path: written}))) is not stored


# vLLM's FP8 scale save: a module path, cleared once the save fires.
VLLM_SAVE = ("vllm/model_executor/layers/attention/scale_save.py", '''import torch
from torch import nn

_save_path = None
_refs = {}


def maybe_save_scales(name, scale, wrapped):
    global _save_path
    if _save_path is None:
        return
    _refs[name] = scale
    if not wrapped:
        return
    CLEAR_BEFORE
    scales = {n: s.item() for n, s in _refs.items()}
    CLEAR_AFTER
    with open(path, "w") as f:
        f.write(str(scales))


class Attention(nn.Module):
    def __init__(self, save_path):
        super().__init__()
        self._init_save(save_path)

    def _init_save(self, save_path):
        global _save_path
        _save_path = save_path

    def forward(self, q, scale, wrapped):
        maybe_save_scales("attn", scale, wrapped)
        return q * scale
''')

# SGLang's expert dump: a pending path on the instance, cleared after the dump.
SGLANG_SAVE = ("sglang/srt/layers/moe/expert_dump.py", '''import torch
from torch import nn


class ExpertDump(nn.Module):
    def __init__(self, path):
        super().__init__()
        self._pending = path

    def forward(self, counts, done):
        if self._pending is None:
            return counts
        CLEAR_BEFORE
        total = counts.sum().item()
        CLEAR_AFTER
        print(total)
        return counts
''')

# A look-alike: a result each step hands on through the attribute, read and cleared by the next.
SGLANG_HANDED_ON = SGLANG_SAVE[1].replace('''        print(total)
        return counts
''', '''        print(total)
        return counts

    def schedule(self, counts):
        self._pending = counts
''')

SAVES = {"vllm": (VLLM_SAVE, "_save_path = None", "path = _save_path"),
         "sglang": (SGLANG_SAVE, "self._pending = None", "path = self._pending")}


@pytest.mark.parametrize("early_exit", [False, True], ids=["cleared-before-any-exit", "an-exit-first"])
@pytest.mark.parametrize("style", sorted(SAVES))
def test_a_one_shot_save_that_clears_its_guard_runs_once(review_added, style, early_exit):
    (path, text), clear, keep = SAVES[style]
    # The look-alike may leave before it clears the path: the read runs again next call.
    exit_first = "if not done:\n        return None\n    " if style == "vllm" else "if not done:\n            return counts\n        "
    written = text.replace("CLEAR_BEFORE", keep).replace("CLEAR_AFTER", (exit_first if early_exit else "") + clear)
    read = ".item()"
    assert (_line_of(written, read) in _sync_lines(review_added({path: written}))) is early_exit


def test_a_value_another_method_sets_each_step_is_no_one_shot(review_added):
    path = SGLANG_SAVE[0]
    written = SGLANG_HANDED_ON.replace("CLEAR_BEFORE", "path = self._pending").replace("CLEAR_AFTER", "self._pending = None")
    assert _line_of(written, ".item()") in _sync_lines(review_added({path: written}))


# vLLM's slot bookkeeping: a return when the key is missing, then work on every known key.
VLLM_SLOTS = ("vllm/v1/worker/slot_counts.py", '''import torch
from torch import nn


def count_of(x):
    return int(x.sum().item())


class SlotCounts(nn.Module):
    def __init__(self):
        super().__init__()
        self.slots = {}

    def forward(self, key, x):
        if key TEST self.slots:
            return x
        self.slots[key] = count_of(x)
        return x
''')


@pytest.mark.parametrize(("test", "reported"), [("in", False), ("not in", True)], ids=["key-found-returns", "key-missing-returns"])
def test_a_return_on_a_missing_key_leaves_the_rest_per_step(repo, cli, test, reported):
    # A full scan: the helper's frequency comes from its one call, after the return.
    path, text = VLLM_SLOTS
    repo.write(path, text.replace("TEST", test))
    repo.commit("engine")
    run = cli("review", path, "--format", "json", "--no-cache", cwd=repo.path)
    assert run.code in (0, 1), run.err
    assert (6 in {f["line"] for f in run.json()["findings"]}) is reported, run.json()["findings"]
