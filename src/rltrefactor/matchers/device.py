"""Device-residency matchers that patterns cannot express."""

from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from .base import FileContext, Match
from .context import in_cold_code
from .imports import dotted_name
from .options import Option

# Receivers whose names say they already live on the host (vLLM/SGLang conventions:
# ``x_cpu``, ``buf.np``, ``host_...``); reducing them never waits for the device.
HOST_NAMES = r"\bnp\b|numpy|_np\b|\bcpu|_cpu\b|\bhost|_host\b|\.tolist\(\)"


class TensorToHostConversion:
    """int()/float()/bool() or a branch condition applied to a visibly device-side reduction."""

    reads = "header"

    OPTIONS = {
        "reductions": Option(
            "strings",
            ("any", "all", "sum", "max", "min", "amax", "amin", "mean", "argmax", "argmin", "count_nonzero", "prod", "norm"),
            "tensor methods whose result is a 0-d tensor the host would have to read",
        ),
        "host-returning": Option("strings", ("torch.equal", "torch.allclose"), "torch functions that return a Python bool"),
        "host-receivers": Option("regex", HOST_NAMES, "receivers that already live on the host"),
    }

    def __init__(self, rule_id: str, options: dict) -> None:
        self.rule_id = rule_id
        self.reductions = frozenset(options["reductions"])
        self.host_returning = frozenset(options["host-returning"])
        self.host = re.compile(options["host-receivers"])
        # ``sum(`` covers both ``x.sum(`` and ``torch.sum(``.
        self.prefilter = tuple(f"{name}(" for name in sorted(self.reductions)) + tuple(
            name.rpartition(".")[2] + "(" for name in sorted(self.host_returning)
        )

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for call in ctx.nodes(cst.Call):
            if ctx.qualified_name(call.func) in ("int", "float", "bool") and len(call.args) == 1:
                if self._device_value(call.args[0].value, ctx) and not in_cold_code(call, ctx):
                    yield Match(call, {"X": ctx.code(call.args[0].value), "CONVERSION": ctx.code(call.func)})
        for kind in (cst.If, cst.While, cst.IfExp):
            for branch in ctx.nodes(kind):
                # One branch reads one value, so it is reported once.
                for operand in _truth_operands(branch.test):
                    if self._device_value(operand, ctx) and not in_cold_code(operand, ctx):
                        yield Match(operand, {"X": ctx.code(operand), "CONVERSION": "a branch condition"})
                        break

    def _device_value(self, expr: cst.BaseExpression, ctx: FileContext) -> bool:
        if not isinstance(expr, cst.Call):
            return False
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in self.reductions:
            receiver = expr.func.value
            if dotted_name(receiver) in ("np", "numpy", "math", "builtins"):
                return False
            return ctx.qualified_name(receiver) not in ("numpy",) and not self.host.search(ctx.code(receiver))
        name = ctx.qualified_name(expr.func)
        return name in self.host_returning or (name is not None and name.startswith("torch.") and name.rpartition(".")[2] in self.reductions)


def _truth_operands(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """Sub-expressions whose value the branch turns into a Python bool."""
    if isinstance(test, cst.BooleanOperation):
        yield from _truth_operands(test.left)
        yield from _truth_operands(test.right)
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yield from _truth_operands(test.expression)
    elif isinstance(test, cst.Comparison):
        yield test.left
        for target in test.comparisons:
            yield target.comparator
    else:
        yield test
