"""A step's batch metadata rebuilt in every layer: ``cu_seqlens``, position ids, masks from lengths.

``cu_seqlens = F.pad(torch.cumsum(seq_lens, 0), (1, 0))`` in a layer's ``forward`` (a
function ``layer_loops`` proves runs once per element of a stack of layers), or in the
body of the loop over the layers itself, computes the same tensor in every layer: its
inputs are the batch's own metadata (a parameter, or an attribute of one, named as
lengths or positions: ``seq_lens``, ``attn_metadata.query_lens``), tensor shapes, the
device and literals, none of which changes from one layer to the next. It belongs
before the loop, computed once per step and passed down.

Built means a prefix sum (``cumsum``), a ``repeat_interleave`` or a comparison against a
``torch.arange`` (a mask from lengths); reads of the metadata alone (``seq_lens.max()``)
are not. Anything that can differ per layer makes the value the layer's own and is left
alone: the layer's attributes (``self.sliding_window``, ``self.num_heads``), any other
parameter's value (a layer index, the carried hidden state), a name the loop binds, a
call to anything but ``torch``, a builtin or a method of such values. Values of shapes
and literals only are ``tensor-rebuilt-per-layer``'s and ``constant-tensor-rebuilt-per-call``'s.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Iterator

import libcst as cst

from ....context.execution import COLD_KINDS
from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..context import parameter_names, plain_assignments, subtree
from ..options import Option
from .layer_loops import per_iteration_functions
from .threading_loops import LayerLoop

_METADATA = (
    r"^(cu_)?seq_?lens(_\w+)?$|^(\w+_)?(seq|query|context|kv|prompt|prefix|input|token|q|k)_?(lens|lengths)$"
    r"|^(lens|lengths|seq_len_list|position_ids|positions|pos_ids|seq_start_loc|query_start_loc)$"
    r"|^(num|n)_(seqs|sequences|tokens)$|^current_(sequences|tokens)$"
)
_BUILDERS = frozenset({"cumsum", "repeat_interleave"})
_NUMBER_CALLS = frozenset({"len", "int", "max", "min", "sum", "float"})
_SHAPE_CALLS = frozenset({"size", "numel", "dim"})
_FREE_ATTRIBUTES = frozenset({"shape", "device", "dtype", "ndim", "is_cuda"})
_DEPTH = 4  # names bound to names bound to ...: followed this far
# A prefix sum, a ``repeat_interleave``, or an ``arange`` compared on its own line (a mask from lengths).
_TOKEN = re.compile(r"cumsum\(|repeat_interleave\(|arange\([^\n]*[<>]")


class StepMetadataPerLayer:
    """Batch metadata (prefix sums, masks from lengths) computed in a function or loop run once per layer."""

    reach = MatcherReach(reads="function", never_in_setup=True, never_in_cold=True)
    prefilter: Prefilter = (_TOKEN,)
    OPTIONS: ClassVar[dict[str, Option]] = {
        "metadata-names": Option(
            "regex", _METADATA,
            "names (of a parameter, or of an attribute of one) that hold the step's batch metadata",
        ),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.metadata = re.compile(options["metadata-names"])

    def find(self, ctx: FileContext) -> Iterator[Match]:
        loops: dict[str, LayerLoop] | None = None
        for assign in ctx.nodes(cst.Assign):
            function = ctx.enclosing_function(assign)
            if function is None or _builder(assign.value, ctx) is None:
                continue
            where = ctx.function_at(assign)
            if where is None or _cold(where.qualname, ctx):
                continue
            if loops is None:
                loops = dict(per_iteration_functions(ctx.model))
            loop = loops.get(where.qualname)
            layer_loop = _layer_loop(assign, ctx)
            if loop is not None and not _cold(loop.caller, ctx):
                where_text = f"`{loop.caller}` runs this function once per element of `{loop.iterable}`"
            elif layer_loop is not None:
                where_text = f"this loop over `{layer_loop}` runs it once per layer"
            else:
                continue
            reads = _Reads(function, self.metadata, ctx)
            if reads.step_level(assign.value, 0) and reads.metadata:
                target = assign.targets[0].target
                name = target.value if isinstance(target, cst.Name) else "this value"
                yield Match(assign.value, {"X": name, "WHERE": where_text, "FROM": ", ".join(sorted(reads.metadata))})


def _cold(qualname: str, ctx: FileContext) -> bool:
    return any(f.qualname == qualname and f.kind in COLD_KINDS for f in ctx.execution.functions)


def _builder(expr: cst.BaseExpression, ctx: FileContext) -> cst.CSTNode | None:
    """The ``cumsum``/``repeat_interleave`` call, or the comparison against ``torch.arange``, that ``expr`` holds."""
    for node in subtree(expr):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _BUILDERS:
            return node
        if isinstance(node, cst.Comparison) and any(_is_arange(n, ctx) for n in subtree(node)):
            return node
    return None


def _is_arange(node: cst.CSTNode, ctx: FileContext) -> bool:
    return isinstance(node, cst.Call) and ctx.qualified_name(node.func) == "torch.arange"


def _layer_loop(assign: cst.Assign, ctx: FileContext) -> str | None:
    """The iterable of the ``for`` loop around ``assign`` (in its own function) whose body threads
    a state through its element: ``for layer in self.layers: h = layer(h, cu_seqlens)``."""
    for ancestor in ctx.ancestors(assign):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        if isinstance(ancestor, cst.For) and isinstance(ancestor.target, cst.Name):
            element = ancestor.target.value
            if any(_threads(node, element) for node in subtree(ancestor.body)):
                return cst.Module([]).code_for_node(ancestor.iter)
    return None


def _threads(node: cst.CSTNode, element: str) -> bool:
    """``h = element(h, ...)`` or ``h = element.forward(h, ...)``: the element called on a state it rebinds."""
    if not (isinstance(node, cst.Assign) and isinstance(node.value, cst.Call)):
        return False
    func = node.value.func
    callee = func.value if isinstance(func, cst.Attribute) else func
    if not (isinstance(callee, cst.Name) and callee.value == element):
        return False
    targets = {n.value for t in node.targets for n in subtree(t.target) if isinstance(n, cst.Name)}
    return any(isinstance(a.value, cst.Name) and a.value.value in targets for a in node.value.args)


class _Reads:
    """Whether an expression's value is the same in every layer, and which metadata it reads."""

    def __init__(self, function: cst.FunctionDef, metadata: re.Pattern[str], ctx: FileContext) -> None:
        self.function = function
        self.params = parameter_names(function)
        self.pattern = metadata
        self.ctx = ctx
        self.metadata: set[str] = set()

    def step_level(self, expr: cst.BaseExpression, depth: int) -> bool:
        if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
            return True
        if isinstance(expr, cst.Name):
            return self._name(expr.value, depth)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr, depth)
        if isinstance(expr, cst.Subscript):
            return self.step_level(expr.value, depth) and all(self._slice(e.slice, depth) for e in expr.slice)
        if isinstance(expr, cst.Call):
            return self._call(expr, depth)
        if isinstance(expr, cst.UnaryOperation):
            return self.step_level(expr.expression, depth)
        if isinstance(expr, cst.BinaryOperation):
            return self.step_level(expr.left, depth) and self.step_level(expr.right, depth)
        if isinstance(expr, cst.Comparison):
            return self.step_level(expr.left, depth) and all(self.step_level(c.comparator, depth) for c in expr.comparisons)
        if isinstance(expr, (cst.Tuple, cst.List)):
            return all(isinstance(e, cst.Element) and self.step_level(e.value, depth) for e in expr.elements)
        return False

    def _slice(self, index: cst.BaseSlice, depth: int) -> bool:
        if isinstance(index, cst.Index):
            return isinstance(index.value, cst.Name) and index.value.value == "None" or self.step_level(index.value, depth)
        parts = (index.lower, index.upper, index.step) if isinstance(index, cst.Slice) else ()
        return all(part is None or self.step_level(part, depth) for part in parts)

    def _name(self, name: str, depth: int) -> bool:
        if name in ("True", "False", "None"):
            return True
        if name in self.params:
            if self.pattern.search(name):
                self.metadata.add(name)
                return True
            return False
        bindings = plain_assignments(self.function, name)
        if bindings is None:
            return False  # bound by a loop, a ``with``, an augmented assignment: may differ per layer
        if not bindings:
            return name.isupper()  # a module constant
        return depth < _DEPTH and all(self.step_level(value, depth + 1) for value in bindings)

    def _attribute(self, expr: cst.Attribute, depth: int) -> bool:
        if expr.attr.value in _FREE_ATTRIBUTES:
            return True  # a shape, the device or the dtype: the same in every layer
        if (self.ctx.qualified_name(expr) or "").startswith("torch."):
            return True  # ``torch.int32``
        root: cst.BaseExpression = expr
        while isinstance(root, cst.Attribute):
            root = root.value
        if not (isinstance(root, cst.Name) and root.value in self.params - {"self", "cls"}):
            return False
        if self.pattern.search(expr.attr.value):
            self.metadata.add(cst.Module([]).code_for_node(expr))
            return True
        return False

    def _call(self, call: cst.Call, depth: int) -> bool:
        arguments = all(not a.star and self.step_level(a.value, depth) for a in call.args)
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _SHAPE_CALLS:
            return True
        if isinstance(func, cst.Name) and func.value == "len":
            return True
        if isinstance(func, cst.Name) and func.value in _NUMBER_CALLS:
            return arguments
        if (self.ctx.qualified_name(func) or "").startswith("torch."):
            return arguments
        if isinstance(func, cst.Attribute) and not func.attr.value.endswith("_"):
            return arguments and self.step_level(func.value, depth)  # ``seq_lens.max()``, ``x.to(device)``
        return False
