"""The perf hook: micro-checks run at base and head, device work compared per line.

Importing this package never imports torch: ``micro_check`` is plain Python, and the
counting runs in a subprocess (``rltrefactor.perf.runner``). The API functions load
their modules on first use.
"""

from __future__ import annotations

from typing import Any

from .checks import MicroCheckSpec, micro_check

__all__ = ["MicroCheckSpec", "PerfPlan", "confirm", "micro_check", "perf_findings", "plan", "run_perf"]

_LAZY = {
    "PerfPlan": "hook",
    "plan": "hook",
    "run_perf": "hook",
    "perf_findings": "delta_findings",
    "confirm": "delta_findings",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rltrefactor.perf' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)
