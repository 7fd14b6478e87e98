"""Device-residency matchers that patterns cannot express."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Iterable, Iterator

import libcst as cst

from ....library.names import bundled_names
from ...prefilter import AllOf, Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..companions import residency_companions
from ..context import comparison_sides, in_per_step_function, subtree, truth_conditions
from ..imports import dotted_name
from ..options import Option
from .locations import on_host, shown_on_host
from .pinned import is_pinned

# Receivers whose names say they already live on the host (vLLM/SGLang conventions:
# ``x_cpu``, ``buf.np``, ``host_...``); reducing them never waits for the device.
# The one spelling of host-data names, from the bundled name lists (``rules/names.yaml``).
HOST_NAMES = bundled_names().pattern_text("host-names")


_CONVERSION = re.compile(r"(?:int|float|bool)\s*\(")
_BRANCH = re.compile(r"(?:if|while)\b")


class TensorToHostConversion:
    """int()/float()/bool() or a branch condition applied to a visibly device-side reduction."""

    # Residency is inferred from how the receivers were assigned.
    reach = MatcherReach(reads="header", companions=residency_companions, companion_lines="assignments")

    OPTIONS: ClassVar[dict[str, Option]] = {
        "reductions": Option(
            "strings",
            ("any", "all", "sum", "max", "min", "amax", "amin", "mean", "argmax", "argmin", "count_nonzero", "prod", "norm"),
            "tensor methods whose result is a 0-d tensor the host would have to read",
        ),
        "host-returning": Option("strings", ("torch.equal", "torch.allclose"), "torch functions that return a Python bool"),
        "host-receivers": Option("regex", HOST_NAMES, "receivers that already live on the host"),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.reductions = frozenset(options["reductions"])
        self.host_returning = frozenset(options["host-returning"])
        self.host = re.compile(options["host-receivers"])
        # ``sum(`` covers both ``x.sum(`` and ``torch.sum(``. A reduction is read on the
        # host where ``int()``/``float()``/``bool()`` converts it or a branch tests it:
        # its statement holds one of those too.
        names = sorted(self.reductions | {name.rpartition(".")[2] for name in self.host_returning})
        reduction = re.compile("(?:" + "|".join(re.escape(name) for name in names) + r")\(")
        self.prefilter: Prefilter = (
            AllOf((reduction, _CONVERSION), within="statement"),
            AllOf((reduction, _BRANCH), within="statement"),
        )

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for call in ctx.nodes(cst.Call):
            if ctx.qualified_name(call.func) in ("int", "float", "bool") and len(call.args) == 1:
                if self._holds_device_value(call.args[0].value, ctx):
                    yield Match(call, {"X": ctx.code(call.args[0].value), "CONVERSION": ctx.code(call.func)})
        kind: type[cst.If | cst.While | cst.IfExp]
        for kind in (cst.If, cst.While, cst.IfExp):
            for branch in ctx.nodes(kind):
                # One branch reads one value, so it is reported once.
                for operand in _truth_operands(branch.test):
                    if self._device_value(operand, ctx):
                        yield Match(operand, {"X": ctx.code(operand), "CONVERSION": "a branch condition"})
                        break

    def _holds_device_value(self, expr: cst.BaseExpression, ctx: FileContext) -> bool:
        """A reduction, or a comparison or arithmetic on one (``bool(t.max() > n)``)."""
        if isinstance(expr, cst.Comparison):
            return any(self._holds_device_value(o, ctx) for o in [expr.left, *(t.comparator for t in expr.comparisons)])
        if isinstance(expr, cst.BinaryOperation):
            return self._holds_device_value(expr.left, ctx) or self._holds_device_value(expr.right, ctx)
        return self._device_value(expr, ctx)

    def _device_value(self, expr: cst.BaseExpression, ctx: FileContext) -> bool:
        if not isinstance(expr, cst.Call):
            return False
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in self.reductions and ctx.qualified_name(func.value) != "torch":
            receiver = func.value
            if dotted_name(receiver) in ("np", "numpy", "math", "builtins"):
                return False
            return ctx.qualified_name(receiver) not in ("numpy",) and not self._on_host(receiver, ctx)
        name = ctx.qualified_name(expr.func)
        reads = name in self.host_returning or (
            name is not None and name.startswith("torch.") and name.rpartition(".")[2] in self.reductions
        )
        # ``torch.sum(t)``, ``torch.equal(a, b)``: host inputs give a host result.
        return reads and not any(self._on_host(arg.value, ctx) for arg in expr.args if arg.keyword is None)

    def _on_host(self, expr: cst.BaseExpression, ctx: FileContext) -> bool:
        return bool(self.host.search(ctx.code(expr))) or on_host(expr, ctx)


def _truth_operands(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """Sub-expressions whose value the branch turns into a Python bool: its conditions,
    and both sides of a comparison among them."""
    for condition in truth_conditions(test):
        if isinstance(condition, cst.Comparison):
            yield from comparison_sides(condition)
        else:
            yield condition


_ZERO_FACTORIES = frozenset({"torch.zeros", "torch.zeros_like"})
_HOST_FACTORIES = frozenset({"torch.zeros", "torch.empty", "torch.ones", "torch.full"})
# Callees that are kernels: extension modules, torch.ops, fused/kernel/triton names, ``k[grid](...)``.
KERNEL_CALLEES = (
    r"(?i)(^|\.)(ext|ops|_c|\w+_ext|\w+_ops|\w+_cuda|\w+_C|kernels?)\.|torch\.ops\.|kernel|fused|triton|_op$|\]$"
)


class ZeroFilledKernelOutput:
    """``buf = torch.zeros(..., device=dev)`` whose first use hands it to a kernel as an output.

    Reports only when the next statement that mentions the buffer is a kernel call taking
    it as a plain argument; any other use first (a read, an in-place update, a branch)
    means the zeros may matter, and the buffer is left alone."""

    reach = MatcherReach(reads="function")
    prefilter: Prefilter = ("zeros",)
    OPTIONS: ClassVar[dict[str, Option]] = {
        "kernel-callees": Option("regex", KERNEL_CALLEES, "callees that are kernels writing their output arguments"),
    }

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id
        self.kernel = re.compile(options["kernel-callees"])

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for block in ctx.nodes(cst.IndentedBlock):
            if ctx.enclosing_function(block) is None:
                continue
            pending: dict[str, cst.Call] = {}
            for statement in block.body:
                used = _names_in(statement) & pending.keys()
                if used:
                    for name in self._overwritten(statement, used, ctx):
                        yield Match(pending[name], {"X": name})
                    for name in used:
                        del pending[name]
                target, zeros = _zeros_assignment(statement, ctx)
                if target is not None and zeros is not None:
                    pending[target] = zeros

    def _overwritten(self, statement: cst.CSTNode, names: set[str], ctx: FileContext) -> set[str]:
        """The names this statement passes, as plain arguments, to a kernel call and uses nowhere else."""
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
            return set()
        expr = statement.body[0]
        if not (isinstance(expr, cst.Expr) and isinstance(expr.value, cst.Call)):
            return set()
        call = expr.value
        if not self.kernel.search(ctx.code(call.func).strip()):
            return set()
        plain = {a.value.value for a in call.args if isinstance(a.value, cst.Name)}
        elsewhere = _names_in(call.func)
        accumulated = _accumulated_arguments(call, ctx)
        return {n for n in names if n in plain and n not in elsewhere and n not in accumulated}


def _accumulated_arguments(call: cst.Call, ctx: FileContext) -> set[str]:
    """Names passed to a kernel of this module that updates the receiving parameter with
    an atomic (``kernels.accumulating_kernels``): it adds to what is there, so the zeros
    are its starting value."""
    func = call.func.value if isinstance(call.func, cst.Subscript) else call.func
    kernel = ctx.accumulating_kernels.get(func.value) if isinstance(func, cst.Name) else None
    if kernel is None:
        return set()
    accumulated: set[str] = set()
    for position, arg in enumerate(call.args):
        if not isinstance(arg.value, cst.Name) or arg.star:
            continue
        param = arg.keyword.value if arg.keyword is not None else kernel.params[position] if position < len(kernel.params) else None
        if param in kernel.accumulated:
            accumulated.add(arg.value.value)
    return accumulated


def _names_in(node: cst.CSTNode) -> set[str]:
    return {n.value for n in subtree(node) if isinstance(n, cst.Name)}


def _zeros_assignment(statement: cst.CSTNode, ctx: FileContext) -> tuple[str | None, cst.Call | None]:
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None, None
    assign = statement.body[0]
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name)):
        return None, None
    value = assign.value
    if not isinstance(value, cst.Call) or ctx.qualified_name(value.func) not in _ZERO_FACTORIES or on_host(value, ctx):
        return None, None
    if ctx.qualified_name(value.func) == "torch.zeros" and not any(a.keyword and a.keyword.value == "device" for a in value.args):
        return None, None
    return assign.targets[0].target.value, value


class PerStepHostStaging:
    """A host tensor allocated in a per-step function and filled element by element in a loop:
    an ad-hoc staging buffer in pageable memory, rebuilt every step."""

    reach = MatcherReach(reads="function")
    prefilter: Prefilter = ("zeros(", "empty(", "ones(", "full(")
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for function in ctx.nodes(cst.FunctionDef):
            if not in_per_step_function(function.body, ctx):
                continue
            allocations = {}
            for node in subtree(function.body):
                if isinstance(node, cst.FunctionDef):
                    continue
                if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                    value = node.value
                    if (
                        isinstance(value, cst.Call)
                        and ctx.qualified_name(value.func) in _HOST_FACTORIES
                        and shown_on_host(value, ctx)
                        and not is_pinned(value, ctx)
                    ):
                        allocations[node.targets[0].target.value] = value
            if not allocations:
                continue
            filled = _filled_in_loops(function.body, allocations.keys())
            for name, call in allocations.items():
                if name in filled:
                    yield Match(call, {"X": name})


def _filled_in_loops(body: cst.CSTNode, names: Iterable[str]) -> set[str]:
    """Names written element-wise (``x[i] = v``, ``x[i].copy_(v)``) inside a loop."""
    wanted = set(names)
    found: set[str] = set()
    for loop in subtree(body):
        if not isinstance(loop, (cst.For, cst.While)):
            continue
        for node in subtree(loop.body):
            target = None
            if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Subscript):
                target = node.target.value
            elif (
                isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "copy_"
                and isinstance(node.func.value, cst.Subscript)
            ):
                target = node.func.value.value
            if isinstance(target, cst.Name) and target.value in wanted:
                found.add(target.value)
    return found
