"""Which branch conditions hold only when type checking, compiling, debugging or run as a script."""

from __future__ import annotations

import libcst as cst
import pytest

from rltrefactor.matchers.context import is_cold_condition


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
