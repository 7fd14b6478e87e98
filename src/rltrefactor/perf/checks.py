"""The ``@micro_check`` decorator: how a reviewed repository declares its micro-checks.

A micro-check is a function of one argument, ``device`` (a ``torch.device`` picked by
the hook), that does its setup (small inputs, never measured) and returns the zero-arg
callable whose run is measured. This module never imports torch, so the core can import
``rltrefactor.perf`` freely; the device is resolved in the runner subprocess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, overload

DeviceChoice = Literal["auto", "cpu", "cuda"]
DEVICE_CHOICES: tuple[str, ...] = ("auto", "cpu", "cuda")
SPEC_ATTRIBUTE = "__rltrefactor_micro_check__"


@dataclass(frozen=True)
class MicroCheckSpec:
    """What the decorator recorded; ``covers`` overrides coverage found by tracing.

    A ``covers`` entry is ``"path.py::Qual.name"``, ``"path.py"`` (any code in that
    file) or ``"Qual.name"`` (that definition in any file).
    """

    device: DeviceChoice = "auto"
    covers: tuple[str, ...] = ()


Setup = Callable[..., Callable[[], object]]


@overload
def micro_check(function: Setup) -> Setup: ...


@overload
def micro_check(
    *, device: DeviceChoice = "auto", covers: list[str] | tuple[str, ...] = ()
) -> Callable[[Setup], Setup]: ...


def micro_check(
    function: Setup | None = None, *, device: DeviceChoice = "auto", covers: list[str] | tuple[str, ...] = ()
) -> Setup | Callable[[Setup], Setup]:
    """Mark ``function(device) -> body`` as a micro-check; usable bare or with options."""
    if device not in DEVICE_CHOICES:
        raise ValueError(
            f"micro_check: device: must be one of {', '.join(DEVICE_CHOICES)} "
            f"(got {device!r}); use device=\"auto\" to run on cuda when available"
        )
    if isinstance(covers, str):
        raise ValueError(
            f"micro_check: covers: must be a list of strings (got the string {covers!r}); "
            f"write covers=[{covers!r}]"
        )
    spec = MicroCheckSpec(device=device, covers=tuple(covers))

    def mark(target: Setup) -> Setup:
        setattr(target, SPEC_ATTRIBUTE, spec)
        return target

    return mark(function) if function is not None else mark


def spec_of(obj: object) -> MicroCheckSpec | None:
    spec = getattr(obj, SPEC_ATTRIBUTE, None)
    return spec if isinstance(spec, MicroCheckSpec) else None
