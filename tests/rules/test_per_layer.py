"""Functions run once per layer of a block loop, and the tensors of shapes rebuilt in them."""

from __future__ import annotations

import textwrap

from rltrefactor.context.filemodel import FileModel
from rltrefactor.matching.matchers.residency.layer_loops import per_iteration_functions
from rltrefactor.matching.matchers.residency.per_layer import TensorRebuiltPerLayer

from .helpers import hits, lines


def _loops(code: str) -> dict[str, tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
    model = FileModel.read("engine/blocks.py", textwrap.dedent(code))
    return {q: (l.caller, l.iterable, l.carried, l.through) for q, l in per_iteration_functions(model).items()}


def test_a_helper_is_per_layer_through_the_threading_call_and_its_own_helpers() -> None:
    code = """
    class Infer:
        def infer(self, weights, h, extra):
            for i in range(weights.num):
                h, extra = self._block(weights.blocks[i], h, extra)
            return h

        def _block(self, block, h, extra):
            return self._attn(block, h), extra

        def _attn(self, block, h):
            return block(h)
    """
    assert _loops(code) == {
        "Infer._block": ("Infer.infer", "range(weights.num)", ("h", "extra"), ()),
        "Infer._attn": ("Infer.infer", "range(weights.num)", ("h", "extra"), ("Infer._block",)),
    }


def test_no_helper_is_per_layer_when_any_caller_runs_it_otherwise() -> None:
    code = """
    import torch.utils.checkpoint as ckpt

    class Infer:
        def infer(self, blocks, h, other):
            for block in blocks:
                h = self._once_more(block, h)
                h = self._handed(block, h)
                h = self._seen_elsewhere(block, h)
                out = self._not_threaded(block, h)
                h = self._counted(h) + 1
            h = self._once_more(blocks[0], h)
            ckpt.checkpoint(self._handed, blocks[0], h)
            other._seen_elsewhere(blocks[0], h)
            return h

        def _once_more(self, block, h): return block(h)
        def _handed(self, block, h): return block(h)
        def _seen_elsewhere(self, block, h): return block(h)
        def _not_threaded(self, block, h): return block(h)
        def _counted(self, h): return h

    def decode(model, tokens, steps):
        for step in range(steps):
            tokens = _decode_one(model, tokens, step)
        return tokens

    def _decode_one(model, tokens, step):
        return model(tokens)
    """
    # Called outside the loop; handed to checkpoint; called on another receiver; its result not
    # fed back; a loop that does not hand it the element; a counting loop's counter is no element.
    assert _loops(code) == {}


def test_tensors_of_shapes_and_numbers_are_reported_and_their_evidence_named() -> None:
    code = """
    import torch

    class Infer:
        def infer(self, weights, h):
            for block in weights.blocks:
                h = self._block(block, h)
            return h

        def _block(self, block, h):
            b, s, _ = h.shape
            n = s * 2
            bounds = torch.tensor([0, n, h.size(1), len(h), max(s, 1)], dtype=torch.int32)
            lens = torch.as_tensor(-b)
            return block(h, bounds, lens)
    """
    found = hits(TensorRebuiltPerLayer("r", {}), code)
    assert [line for line, _ in found] == [13, 14]
    assert found[0][1] == {"CALLER": "Infer.infer", "ITERABLE": "weights.blocks", "CARRIED": "h", "THROUGH": ""}


def test_values_that_may_differ_per_layer_or_tensors_on_the_device_are_left_alone() -> None:
    code = """
    import torch

    class Infer:
        def infer(self, weights, h):
            for idx, block in enumerate(weights.blocks):
                h = self._block(block, h, idx)
            return h

        def _block(self, block, h, idx):
            a = torch.tensor([idx])
            b = torch.tensor([self.scale, h.shape[0]])
            c = torch.tensor([h.sum().item()])
            d = torch.tensor([0, h.shape[0]], device=h.device)
            e = torch.tensor([0, h.shape[0]]).cuda()
            n = h.shape[0]
            n += 1
            f = torch.tensor([n])
            g = torch.tensor(h.shape[0:2])
            return block(h, a, b, c, d, e, f, g)
    """
    assert lines(TensorRebuiltPerLayer("r", {}), code) == []


def test_the_forward_of_stacked_modules_is_per_layer_with_its_helpers() -> None:
    code = """
    from torch import nn

    class Block(nn.Module):
        def forward(self, h, residual):
            return self._mix(h), residual

        def _mix(self, h):
            return h

    class Gated(nn.Module):
        def __call__(self, h):
            return h

    class Model(nn.Module):
        def __init__(self, n):
            self.blocks = nn.ModuleList([Block() for _ in range(n)])
            self.gates = [Gated() for _ in range(n)]

        def forward(self, h):
            residual = None
            for i, block in enumerate(self.blocks):
                h, residual = block(h, residual)
            for gate in self.gates[1:]:
                h = gate(h)
            return h
    """
    assert _loops(code) == {
        "Block.forward": ("Model.forward", "enumerate(self.blocks)", ("h", "residual"), ()),
        "Block._mix": ("Model.forward", "enumerate(self.blocks)", ("h", "residual"), ("Block.forward",)),
        "Gated.__call__": ("Model.forward", "self.gates[1:]", ("h",), ()),
    }


def test_stacked_modules_built_or_called_one_by_one_are_not_per_layer() -> None:
    code = """
    from torch import nn

    class Block(nn.Module):
        def forward(self, h):
            return h

    class Head(nn.Module):
        def forward(self, h):
            return h

    class Mixed(nn.Module):
        def forward(self, h):
            return h

    class Model(nn.Module):
        def __init__(self, n):
            self.blocks = nn.ModuleList([Block() for _ in range(n)])
            self.final = Block()
            self.heads = nn.ModuleList([Head() for _ in range(n)])
            self.mixed = [Mixed() for _ in range(n)]

        def forward(self, h):
            for block in self.blocks:
                h = block(h)
            for head in self.heads:
                h = head(h)
            h = self.heads[0](h)
            for mixed in self.mixed:
                out = mixed(h)
            return self.final(h)
    """
    # Block is also built alone; a Head is also called alone; Mixed's results are not fed back.
    assert _loops(code) == {}


def test_a_loop_in_cold_code_makes_no_finding() -> None:
    code = """
    import torch

    class Loader:
        def load_weights(self, weights, h):
            for block in weights.blocks:
                h = self._probe(block, h)
            return h

        def _probe(self, block, h):
            return block(h, torch.tensor([0, h.shape[0]]))
    """
    assert lines(TensorRebuiltPerLayer("r", {}), code, hot=False) == []
    assert lines(TensorRebuiltPerLayer("r", {}), code.replace("load_weights", "run_blocks"), hot=False) == [11]
