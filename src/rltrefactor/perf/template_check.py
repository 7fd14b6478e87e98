"""Micro-checks for rltrefactor's perf hook: the template of ``rltrefactor perf scaffold``.

``rltrefactor perf scaffold PATH::QUALNAME`` writes a check of one function from this
file (its guidance and imports) into your repository's ``perf_hooks/`` directory; the
examples below show the two forms of the decorator.

How the hook uses it (``rltrefactor perf --diff origin/main`` or ``review --perf``):

1. At the head revision it imports every ``perf_hooks/*.py`` file with the repository
   root on ``sys.path`` (so ``import my_engine`` works), calls each micro-check with a
   ``torch.device``, runs the returned body once (warm-up, traced to learn which of your
   functions it exercises), then three more times while counting syncs, copies and
   allocations per source line.
2. It keeps the checks whose traced run went through a function the change touched (or
   whose ``covers=`` names one), and runs the same checks at the base revision.
3. Added syncs, copies and allocations become findings at the line that caused them.

Rules for a good micro-check:

- Setup (building the engine, inputs, warm caches) happens in the decorated function
  and is not measured; the returned zero-argument callable is the one step you care
  about (a decode step, one loop depth, one sampler call).
- Keep inputs tiny: the hook counts work, it does not time it; a check should run in
  milliseconds on a CPU so CI can run it.
- The body must do the same work every time it is called (no growing state, no random
  control flow): the three counted runs must agree, or the check is reported instead of
  compared.
- Build everything on ``device``: the same check then runs on CPU in CI and on CUDA on a
  GPU machine.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from rltrefactor.perf import micro_check


@micro_check  # device="auto": cuda when available, else cpu
def matmul_step(device: torch.device) -> Callable[[], object]:
    # Replace with your engine: e.g. build an engine, add two requests, schedule a batch.
    weight = torch.randn(16, 16, device=device)
    hidden = torch.randn(4, 16, device=device)
    out = torch.empty(4, 16, device=device)

    def step() -> object:
        return torch.matmul(hidden, weight, out=out)

    return step


# Pin a check to the functions it exercises when tracing cannot see them (code run in
# another process, or through a compiled graph): "path.py::Qual.name", "path.py", or
# "Qual.name". When given, covers= replaces the traced coverage.
@micro_check(device="cpu", covers=["my_engine/scheduler.py::Scheduler.schedule"])
def scheduler_step(device: torch.device) -> Callable[[], object]:
    values = torch.arange(8, device=device)
    return lambda: values.sum()
