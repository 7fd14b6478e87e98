"""Which branch conditions hold only when type checking, compiling, debugging or run as a script."""

from __future__ import annotations

import libcst as cst
import pytest

from rltrefactor.matching.matchers.context import is_cold_condition, is_never_true, runs_cold

from .helpers import context


@pytest.mark.parametrize(
    "test",
    [
        '__name__ == "__main__"',
        "TYPE_CHECKING",
        "logger.isEnabledFor(logging.DEBUG) and x.isnan().any()",
        "torch.compiler.is_compiling()",
        "self.debug",
    ],
)
def test_cold_conditions(test: str) -> None:
    assert is_cold_condition(cst.parse_expression(test))


@pytest.mark.parametrize(
    "test",
    [
        # The name of an object's type is read on every call, not only when run as a script.
        'not any(m.__class__.__name__ == "ThunderModule" for m in model.modules())',
        'type(layer).__name__ == "FusedMoE"',
        'fn.__name__ in self.hooks',
        "x.is_cuda and n > 0",
    ],
)
def test_hot_conditions(test: str) -> None:
    assert not is_cold_condition(cst.parse_expression(test))


@pytest.mark.parametrize("test", ["False", "0", "None", "self.bc is not None and False", "False and x.any()",
                                  "(False) or 0"])
def test_conditions_false_as_written(test: str) -> None:
    assert is_never_true(cst.parse_expression(test))


@pytest.mark.parametrize("test", ["True", "1", "x and y", "False or x.any()", "not False", "self.enabled is False"])
def test_conditions_that_may_hold(test: str) -> None:
    assert not is_never_true(cst.parse_expression(test))


def test_a_cache_rebuilt_only_when_missing_or_stale_runs_cold_and_its_look_alikes_do_not() -> None:
    code = """
    class Decoder:
        def output(self, n):
            if self.out is None or self.out.shape[1] != 2 * n:
                self.out = upload(n)
            if self.out is None or n > self.limit:
                self.out = upload(n)
            if self.spare is None or self.spare.shape[0] < n:
                other = upload(n)
            if self.bc is not None and False:
                upload(n)
            if self.ready or self.out is None:
                self.out = upload(n)
            return self.out
    """
    ctx = context(code)
    calls = [c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "upload"]
    cold = sorted(ctx.span(c).line for c in calls if runs_cold(c, ctx))
    # Line 6's second operand is not the cache; line 8 does not rebuild what it tests;
    # line 12's ``self.ready`` is not the cache either.
    assert cold == [5, 11]


def test_a_cache_built_in_a_conditional_expression_runs_cold_and_its_look_alikes_do_not() -> None:
    code = """
    class Attention:
        def forward(self, x, n):
            self.mask = upload(n) if self.mask is None else self.mask
            self.rope = self.rope if self.rope is not None else upload(n)
            self.buf = upload(n) if self.buf is None or self.buf.shape[0] < n else self.buf
            self.buf = upload(n) if self.buf is None or n > self.limit else self.buf
            other = upload(n) if self.mask is None else self.mask
            self.mask = self.mask if self.mask is None else upload(n)
            self.rope = upload(n) if self.mask is None else self.rope
            return x
    """
    ctx = context(code)
    calls = [c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "upload"]
    cold = sorted(ctx.span(c).line for c in calls if runs_cold(c, ctx))
    # Line 7's second operand is not the cache; line 8 does not keep what it builds;
    # line 9 builds when the cache is present; line 10 tests another attribute.
    assert cold == [4, 5, 6]
