"""Moved code is not new: a finding whose code left another definition or file of the
change is pre-existing and names where it came from; a move that makes the code run
less often is an improvement of the summary, not a finding."""

from __future__ import annotations

import json

from rltrefactor.api import ReviewRequest, review
from rltrefactor.findings import moves
from rltrefactor.report.json import render_json
from rltrefactor.report.markdown import render_markdown
from rltrefactor.report.text import render_text
from rltrefactor.types import BaseLocation

MODEL = "model_executor/model.py"
HEADER = "import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n"
SYNC = "scale = x.abs().max().item()"
PER_LAYER = f"    def _run_layer(self, layer, x):\n        x = layer(x)\n        {SYNC}\n        return x / scale\n"
LAYER_ONLY = "    def _run_layer(self, layer, x):\n        return layer(x)\n"
LOOP = "    def forward(self, x):\n        for layer in self.layers:\n            x = self._run_layer(layer, x)\n"


def _review(repo, base: str, head: str):
    return review(ReviewRequest(repo=str(repo.path), diff=f"{base}..{head}", use_cache=False))


def _syncs(result) -> list[tuple]:
    return [(f.path, f.span.line, f.definition, f.status, f.moved_from)
            for f in result.findings if f.rule_id == "host-sync-in-hot-path"]


def test_a_sync_moved_from_a_per_layer_function_into_forward_is_an_improvement(repo):
    repo.write(MODEL, HEADER + PER_LAYER + "\n" + LOOP + "        return x\n")
    base = repo.commit("sync per layer")
    repo.write(MODEL, HEADER + LAYER_ONLY + "\n" + LOOP + f"        {SYNC}\n        return x / scale\n")
    head = repo.commit("sync once per forward")
    result = _review(repo, base, head)

    origin = BaseLocation(MODEL, "Model._run_layer")
    assert _syncs(result) == [(MODEL, 12, "Model.forward", "pre-existing", origin)]
    assert not result.failing
    (moved,) = result.moved_to_run_less
    assert (moved.path, moved.line, moved.definition, moved.moved_from) == (MODEL, 12, "Model.forward", origin)
    assert "called in a loop" in moved.why
    assert "1 improvement: code moved to run less often" in render_text(result).splitlines()[-1]
    assert "1 improvement: code moved to run less often" in render_markdown(result).split("\n\n")[1]
    assert "moved from model_executor/model.py Model._run_layer" in render_text(result, show_preexisting=True)
    document = json.loads(render_json(result))
    assert document["summary"]["moved_to_run_less"] == 1
    assert document["moved_to_run_less"][0]["moved_from"] == {"path": MODEL, "definition": "Model._run_layer"}
    (record,) = [r for r in document["findings"] if r["rule"] == "host-sync-in-hot-path"]
    assert record["moved_from"] == {"path": MODEL, "definition": "Model._run_layer"}


def test_a_sync_moved_out_of_a_loop_in_its_function_is_an_improvement(repo):
    forward = "    def forward(self, x):\n        for layer in self.layers:\n            x = layer(x)\n"
    repo.write(MODEL, HEADER + forward + f"            {SYNC}\n        return x\n")
    base = repo.commit("sync per layer")
    repo.write(MODEL, HEADER + forward + f"        {SYNC}\n        return x / scale\n")
    head = repo.commit("sync once")
    result = _review(repo, base, head)
    assert _syncs(result) == [(MODEL, 9, "Model.forward", "pre-existing", BaseLocation(MODEL, "Model.forward"))]
    assert [m.why for m in result.moved_to_run_less] == ["out of a loop"]


def test_a_sync_moved_into_a_loop_stays_new(repo):
    """The look-alike of the move above, the other way: the code now runs per layer."""
    forward = "    def forward(self, x):\n        for layer in self.layers:\n            x = layer(x)\n"
    repo.write(MODEL, HEADER + forward + f"        {SYNC}\n        return x / scale\n")
    base = repo.commit("sync once")
    repo.write(MODEL, HEADER + forward + f"            {SYNC}\n        return x\n")
    head = repo.commit("sync per layer")
    result = _review(repo, base, head)
    assert _syncs(result) == [(MODEL, 9, "Model.forward", "new", None)]
    assert result.moved_to_run_less == ()


NESTED = (
    "    def forward(self, x):\n        def norm(y):\n            return y / y.sum().item()\n\n"
    "        return norm(x)\n"
)
HOISTED = "    def forward(self, x):\n        return norm(x)\n"


def test_a_function_moved_out_of_a_nested_def_is_pre_existing(repo):
    repo.write(MODEL, HEADER + NESTED)
    base = repo.commit("nested")
    repo.write(MODEL, "import torch\nfrom torch import nn\n\n\ndef norm(y):\n    return y / y.sum().item()\n\n\n"
                      "class Model(nn.Module):\n" + HOISTED)
    head = repo.commit("hoist norm")
    result = _review(repo, base, head)
    origin = BaseLocation(MODEL, "Model.forward.<locals>.norm")
    assert _syncs(result) == [(MODEL, 6, "norm", "pre-existing", origin)]
    assert result.moved_to_run_less == ()


def test_a_copy_beside_an_original_that_stays_is_new(repo):
    repo.write(MODEL, HEADER + PER_LAYER + "\n" + LOOP + "        return x\n")
    base = repo.commit("sync per layer")
    repo.write(MODEL, HEADER + PER_LAYER + "\n" + LOOP + f"        {SYNC}\n        return x / scale\n")
    head = repo.commit("sync in forward too")
    result = _review(repo, base, head)
    assert _syncs(result) == [(MODEL, 14, "Model.forward", "new", None)]
    assert result.moved_to_run_less == ()


HELPERS = "model_executor/helpers.py"
KEEP = "def unrelated(a, b):\n    c = a + b\n    d = c * 2\n    return d\n"
SCALED = "def scaled(x):\n    return x / x.abs().max().item()\n"
USER = "from torch import nn\n\nfrom .helpers import scaled\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n        return scaled(x)\n"


def test_code_moved_to_another_file_of_the_change_is_pre_existing(repo):
    repo.write(MODEL, "import torch\n\n\n" + KEEP + "\n\n" + SCALED)
    repo.write("model_executor/runner.py", USER.replace(".helpers", ".model"))
    base = repo.commit("scaled in model")
    repo.write(MODEL, "import torch\n\n\n" + KEEP)
    repo.write(HELPERS, "import torch\n\n\n" + SCALED)
    repo.write("model_executor/runner.py", USER)
    head = repo.commit("move scaled to helpers")
    result = _review(repo, base, head)
    assert _syncs(result) == [(HELPERS, 5, "scaled", "pre-existing", BaseLocation(MODEL, "scaled"))]


def test_only_base_files_of_the_change_are_searched(repo, monkeypatch):
    """The same code in a file the change leaves alone is not where the new code came from."""
    repo.write(HELPERS, "import torch\n\n\n" + SCALED)
    repo.write(MODEL, "import torch\n\n\n" + KEEP)
    base = repo.commit("base")
    repo.write(MODEL, "import torch\n\n\n" + KEEP + "\n\n" + SCALED)
    head = repo.commit("copy scaled")
    read: list[list[str]] = []
    real = moves.read_base_sources
    monkeypatch.setattr(moves, "read_base_sources", lambda change, paths: read.append(list(paths)) or real(change, paths))
    result = _review(repo, base, head)
    assert _syncs(result) == [(MODEL, 11, "scaled", "new", None)]
    assert read == [[MODEL]]
