"""Reads on a portable path: code a function runs only where its tensors are off the CUDA
device, or only where an optional kernel is missing.

Engines dispatch CUDA tensors to a kernel and keep a plain PyTorch path for the rest::

    if not req_to_token.is_cuda:          # CPU, MPS, a test: the portable loop
        for b in range(bs): n = int(seq_lens[b]) ...

    if probs.is_cuda:
        return _triton_rejection(probs, counter)
    n = counter.item()                    # reached only off CUDA

    if top_k_renorm_prob is not None:     # a kernel this platform may not have
        return top_k_renorm_prob(probs, top_ks)
    max_top_k = int(top_ks.max().item())  # reached only where it is missing

How often such a read runs is how often the step's tensors are off CUDA, or the platform
lacks the kernel: the function does not show it, so the finding's frequency is unknown,
never per step. A test of the tensors on the host (``x.is_cpu``) is more: the read waits
for no device at all (``locations.in_host_branch``). An optional kernel is a global name
the function does not bind, tested against ``None`` (or called in the branch that leaves):
a configuration flag (``if not self.use_triton:``) picks a path the step may always take.
"""

from __future__ import annotations

import libcst as cst

from ..base import FileContext
from ..fallbacks import literal_value
from ..guard_bodies import guard_body
from ..once import tested_against_none
from ..walk import binds, subtree

# Device types other than CUDA a test may name: a branch taken on one runs off CUDA.
_OTHER_DEVICES = frozenset({"mps", "npu", "xpu", "hpu", "mlu", "musa", "meta"})


def portable_path(node: cst.CSTNode, ctx: FileContext) -> str:
    """Where alone ``node`` runs, as a clause (``the tensors are off the CUDA device
    (`x.is_cuda` is false)``), when an enclosing branch or an earlier exit of its function
    limits it to a portable path; "" where none does."""
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            return ""
        if isinstance(ancestor, (cst.If, cst.IfExp)) and child in (ancestor.body, ancestor.orelse):
            found = _branch_clause(ancestor, taken_on_true=child is ancestor.body, ctx=ctx)
            if found:
                return found
        if isinstance(ancestor, cst.IndentedBlock) and isinstance(child, cst.BaseStatement):
            found = _after_exit(ancestor, child, ctx)
            if found:
                return found
        child = ancestor
    return ""


def _branch_clause(branch: cst.If | cst.IfExp, *, taken_on_true: bool, ctx: FileContext) -> str:
    test = branch.test
    cuda = _cuda_test(test, holds=not taken_on_true)
    if cuda is not None:
        return f"the tensors are off the CUDA device (`{ctx.code(cuda).strip()}` is {str(taken_on_true).lower()})"
    kernel = _missing_kernel(test, taken_on_true=taken_on_true, ctx=ctx, node=branch)
    return f"the optional kernel `{kernel}` is missing" if kernel else ""


def _after_exit(block: cst.IndentedBlock, statement: cst.BaseStatement, ctx: FileContext) -> str:
    """A clause for ``statement`` when an earlier statement of its block leaves (``return``,
    ``raise``) on CUDA tensors or with an optional kernel: ``if x.is_cuda: return kernel(x)``."""
    for earlier in block.body:
        if earlier is statement:
            return ""
        if not isinstance(earlier, cst.If) or earlier.orelse is not None:
            continue
        cuda = _cuda_test(earlier.test, holds=True)
        kernel = "" if cuda is not None else _missing_kernel(earlier.test, taken_on_true=False, ctx=ctx, node=earlier)
        if cuda is None and not kernel:
            continue
        body = guard_body(earlier, ctx)  # read from the whole file: a region may drop the ``return``
        if body is None or not body.exits:
            continue
        if cuda is not None:
            return f"the tensors are off the CUDA device (`{ctx.code(cuda).strip()}` is false: the function left earlier)"
        return f"the optional kernel `{kernel}` is missing"
    return ""


def _cuda_test(test: cst.BaseExpression, *, holds: bool) -> cst.BaseExpression | None:
    """The test (or the operand of it) that tells the tensors are on CUDA when ``holds``
    (``x.is_cuda``, ``x.device.type == "cuda"``; any operand of an ``or`` that is false as a
    whole), or off CUDA when not (``not x.is_cuda``, ``x.device.type != "cuda"``,
    ``x.device.type == "mps"``; any operand of an ``and`` that is true as a whole)."""
    if isinstance(test, cst.BooleanOperation):
        joins = cst.Or if holds else cst.And
        if isinstance(test.operator, joins):
            return _cuda_test(test.left, holds=holds) or _cuda_test(test.right, holds=holds)
        return None
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test if _cuda_test(test.expression, holds=not holds) is not None else None
    if isinstance(test, cst.Attribute) and test.attr.value == "is_cuda":
        return test if holds else None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and _device_type(test.left):
        target = test.comparisons[0]
        kind = literal_value(target.comparator)
        if not isinstance(kind, str):
            return None
        equal = isinstance(target.operator, cst.Equal)
        if not equal and not isinstance(target.operator, cst.NotEqual):
            return None
        if kind == "cuda":
            return test if equal is holds else None
        # ``== "mps"`` runs off CUDA; ``== "cpu"`` is the host path, dropped before (``in_host_branch``).
        return test if (equal and not holds and kind in _OTHER_DEVICES) else None
    return None


def _device_type(expr: cst.BaseExpression) -> bool:
    """``x.device.type``."""
    return (isinstance(expr, cst.Attribute) and expr.attr.value == "type"
            and isinstance(expr.value, cst.Attribute) and expr.value.attr.value == "device")


def _missing_kernel(test: cst.BaseExpression, *, taken_on_true: bool, ctx: FileContext, node: cst.CSTNode) -> str:
    """The global name the branch runs without: ``K`` of ``K is None`` (taken on true) or of
    ``K is not None`` / ``K`` whose body calls ``K`` (taken on false), where no enclosing
    function binds ``K``."""
    if taken_on_true:
        tested = tested_against_none(test, cst.Is)
    else:
        tested = tested_against_none(test, cst.IsNot)
        if tested is None and isinstance(test, cst.Name) and isinstance(node, (cst.If, cst.IfExp)) \
                and _calls(node.body, test.value):
            tested = test  # ``if K: return K(x)``: a truth test of a kernel it calls
    if not isinstance(tested, cst.Name) or tested.value in ("True", "False", "None"):
        return ""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.FunctionDef) and binds(ancestor, tested.value):
            return ""
    return tested.value


def _calls(body: cst.CSTNode, name: str) -> bool:
    return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == name for n in subtree(body))
