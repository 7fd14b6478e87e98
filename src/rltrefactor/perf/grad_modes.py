"""``torch.inference_mode`` as ``torch.no_grad`` while the hook measures.

Measured on an H200 (torch 2.11): inside ``inference_mode`` the dispatch counter does not
see every op it sees outside it (the demo engine's decode step dispatched 18 copies to
it under ``inference_mode`` and 30 without, with the same CUDA memcpy calls), so copies
and races added in inference-mode code went unreported. ``no_grad`` computes the same
values without recording autograd history, and every op reaches the counter. The checks
and tests run the repository's code in processes of their own, so the substitution
never leaves the measurement.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any


def measure_through_inference_mode() -> None:
    """Make ``torch.inference_mode`` (decorator and context manager) behave as ``no_grad``
    for the rest of this process; ``inference_mode(False)`` changes nothing."""
    import torch

    class InferenceModeAsNoGrad(torch.no_grad):
        def __new__(cls, mode: Any = True) -> Any:
            if isinstance(mode, bool):  # ``inference_mode()``, ``inference_mode(False)``
                return object.__new__(cls)
            return cls()(mode)  # ``@inference_mode`` without parentheses

        def __init__(self, mode: Any = True) -> None:
            super().__init__()
            self.mode = mode

        def __enter__(self) -> None:
            if self.mode:
                super().__enter__()

        def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None) -> None:
            if self.mode:
                super().__exit__(kind, value, traceback)

        def clone(self) -> Any:
            return self.__class__(self.mode)

    torch.inference_mode = InferenceModeAsNoGrad  # type: ignore[misc,assignment]
    torch.autograd.grad_mode.inference_mode = InferenceModeAsNoGrad  # type: ignore[misc,assignment]
