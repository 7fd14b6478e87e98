"""A function that takes a compiler's graph (``torch.fx.GraphModule``, ``fx.Graph``) is a
graph pass: it runs when a graph is compiled, so per-step rules leave it, and the private
helpers only it calls, alone. A function of the same shape that takes tensors is still
per step. Reviewed end to end with no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

DEEPCOMPILE_PASS = '''from typing import List, Tuple

import torch
from torch.fx import GraphModule


def _mem_budget(device):
    free = torch.tensor([torch.cuda.mem_get_info()[0]], device=device)
    return free.item()


def schedule_prefetch(gm: GraphModule, graph_id: int, graph_order: List[Tuple[int, bool]], device):
    budget = _mem_budget(device)
    sizes = torch.tensor([n.meta.get("size", 0) for n in gm.graph.nodes], device=device)
    return budget, sizes.sum().item()
'''

INDUCTOR_PASS = '''import torch
from torch import fx


class FusionPass:
    def __init__(self, device):
        self.device = device

    def __call__(self, graph: fx.Graph):
        count = torch.zeros(1, device=self.device)
        for node in graph.nodes:
            count += 1
        return count.item()
'''


@pytest.mark.parametrize(("path", "text"), [
    ("runtime/compile/passes/prefetch.py", DEEPCOMPILE_PASS),
    ("compilation/fusion.py", INDUCTOR_PASS),
], ids=["deepcompile-pass", "inductor-pass"])
def test_a_graph_pass_and_its_private_helpers_are_not_per_step(review_new_file, path, text):
    assert review_new_file(path, text) == {}


@pytest.mark.parametrize(("path", "text", "reported"), [
    ("runtime/compile/passes/prefetch.py",
     DEEPCOMPILE_PASS.replace("gm: GraphModule", "gm: torch.Tensor").replace("gm.graph.nodes", "gm"), {8, 14}),
    ("compilation/fusion.py", INDUCTOR_PASS.replace("graph: fx.Graph", "graph: torch.Tensor"), {13}),
], ids=["tensor-argument", "tensor-call"])
def test_the_same_code_taking_tensors_is_still_reported(review_new_file, path, text, reported):
    found = review_new_file(path, text)
    assert reported <= set(found), found


def test_a_class_named_graph_that_is_not_the_compilers_says_nothing(review_new_file):
    text = DEEPCOMPILE_PASS.replace("from torch.fx import GraphModule", "from .scheduling import GraphModule")
    assert {8, 14} <= set(review_new_file("runtime/compile/passes/prefetch.py", text))
