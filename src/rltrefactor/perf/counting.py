"""Counting what one run of a micro-check body does on the device (imports torch).

Every aten op that reaches the dispatcher passes through ``OpCounter``; a few Python
APIs that do not dispatch an op on a host tensor (``Tensor.cpu``/``tolist``) or never
dispatch one (``synchronize``) are wrapped for the measured run. Each event gets ONE
category, the costliest that applies (sync > copy > alloc), so one added line yields
one finding:

- sync: host reads of device values (``_local_scalar_dense`` from ``item``/``int``/
  ``bool``, ``tolist``), ops whose output shape depends on data (``nonzero``,
  ``masked_select``, ``unique``, boolean-mask ``index``/``index_put``, ...), and
  explicit ``synchronize`` calls.
- copy: ``copy_``, ``_to_copy``, ``clone`` (also from ``contiguous``), data lifted from
  Python values onto a device; direction h2d / d2h / d2d / host. A d2h copy also blocks
  the host; it is still counted once, as a copy.
- alloc: any other op output that does not alias an input (per the op schema), and
  tensors built from Python values on the host (``lift_fresh``).

A check that runs on the CPU stands in for a device: host reads and ``.cpu()`` on host
tensors count as they would on cuda. On a cuda run, host-only work is not a sync.
"""

from __future__ import annotations

import sys
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

import torch

# The only use of torch's private APIs (the perf extra pins the torch they are tested with).
TESTED_TORCH = "2.13"
try:
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves
except ImportError as exc:
    raise ImportError(
        f"torch {torch.__version__} is untested: its private dispatch API differs ({exc}); "
        f"the perf hook is tested with torch {TESTED_TORCH}.x: install 'torch=={TESTED_TORCH}.*'"
    ) from None

from .attribution import RepoFrames, Site

if TYPE_CHECKING:
    from torch._ops import OpOverload

_SYNC_OPS = frozenset({
    "_local_scalar_dense", "item", "is_nonzero", "equal", "nonzero", "argwhere",
    "masked_select", "_unique", "_unique2", "unique_dim", "unique_consecutive",
    "unique_dim_consecutive", "bincount", "masked_scatter_backward",
})
_MASK_INDEX_OPS = frozenset({"index", "_unsafe_index", "index_put", "index_put_", "_index_put_impl_"})
_COPY_SELF_TO_OUT = frozenset({"_to_copy", "clone", "_copy_from", "_copy_from_and_resize"})
_LIFT_OPS = frozenset({"lift_fresh", "lift_fresh_copy"})


@dataclass(frozen=True)
class EventKey:
    category: str  # "sync" | "copy" | "alloc"
    op: str  # "aten.nonzero", "Tensor.cpu", "torch.cuda.synchronize"
    direction: str  # copies: "h2d" | "d2h" | "d2d" | "host" | "to-host"; else ""
    site: Site


def _device_type(value: object) -> str | None:
    return value.device.type if isinstance(value, torch.Tensor) else None


def _direction(src: str | None, dst: str | None) -> str:
    if src == "cpu" and dst == "cpu":
        return "host"
    if src == "cpu":
        return "h2d"
    return "d2h" if dst == "cpu" else "d2d"


def _has_mask(indices: Iterable[object] | None) -> bool:
    return any(
        isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8)
        for i in (indices or ())
    )


def _fresh_bytes(func: OpOverload, out: object) -> tuple[int, int]:
    """(tensors, bytes) of outputs that do not alias an input, per the op schema."""
    if any(r.alias_info is not None for r in func._schema.returns):
        return 0, 0
    tensors = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
    sizes = [t.untyped_storage().nbytes() for t in tensors]
    sizes = [s for s in sizes if s > 0]  # an empty tensor asks the allocator for nothing
    return len(sizes), sum(sizes)


class OpCounter(TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch leaves the mode unannotated
    """Counts classified events per (category, op, direction, site) during ``with``."""

    def __init__(self, frames: RepoFrames, device: torch.device) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # as above
        self.frames = frames
        self.stand_in = device.type == "cpu"
        self.counts: Counter[EventKey] = Counter()
        self.bytes: Counter[EventKey] = Counter()
        self._quiet = 0

    def record(self, category: str, op: str, direction: str, nbytes: int, frame: FrameType) -> None:
        key = EventKey(category, op, direction, self.frames.site(frame))
        self.counts[key] += 1
        self.bytes[key] += nbytes

    @contextmanager
    def quiet(self) -> Iterator[None]:
        """Ops dispatched inside a wrapped API belong to that API's one event."""
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    def __torch_dispatch__(
        self, func: OpOverload, types: Sequence[type], args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if not self._quiet:
            event = self._classify(func, args, out)
            if event is not None:
                self.record(*event, frame=sys._getframe(1))
        return out

    def _classify(self, func: OpOverload, args: tuple[Any, ...], out: object) -> tuple[str, str, str, int] | None:
        name = func._schema.name.split("::", 1)[-1]
        op = "aten." + name
        src = _device_type(args[0]) if args else None
        if self._is_sync(name, args, src):
            return "sync", op, "", 0
        if name == "copy_" and len(args) > 1:
            return "copy", op, _direction(_device_type(args[1]), src), args[1].nbytes
        if name in _COPY_SELF_TO_OUT and isinstance(out, torch.Tensor):
            return "copy", op, _direction(src, out.device.type), out.nbytes
        if name in _LIFT_OPS and isinstance(out, torch.Tensor):
            if out.device.type != "cpu":  # the values came from Python objects on the host
                return "copy", op, "h2d", out.nbytes
            return "alloc", op, "", out.untyped_storage().nbytes()
        tensors, nbytes = _fresh_bytes(func, out)
        return ("alloc", op, "", nbytes) if tensors else None

    def _is_sync(self, name: str, args: tuple[Any, ...], src: str | None) -> bool:
        on_device = self.stand_in or (src is not None and src != "cpu")
        if not on_device:
            return False
        if name in _SYNC_OPS:
            return True
        if name in _MASK_INDEX_OPS and len(args) > 1:
            return _has_mask(args[1])
        if name == "repeat_interleave" and isinstance(args[0], torch.Tensor):
            return True  # output length is the sum of the repeats tensor
        return False


def _wrap_tensor_method(
    counter: OpCounter, name: str, category: str, direction: str
) -> tuple[Callable[..., Any], Callable[..., Any]]:
    original = getattr(torch.Tensor, name)

    def wrapper(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        host = self.device.type == "cpu"
        counts = counter.stand_in or not host
        if category == "copy" and not host:
            return original(self, *args, **kwargs)  # dispatches _to_copy, counted there
        with counter.quiet():
            result = original(self, *args, **kwargs)
        if counts:
            counter.record(category, f"Tensor.{name}", direction, self.nbytes, sys._getframe(1))
        return result

    return original, wrapper


def _wrap_sync(counter: OpCounter, label: str, original: Callable[..., Any], available: bool) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        counter.record("sync", label, "", 0, sys._getframe(1))
        # On a host without the device the call stands in for one and does nothing.
        return original(*args, **kwargs) if available else None

    return wrapper


def _sync_targets() -> list[tuple[object, str, str, bool]]:
    cuda = torch.cuda.is_available()
    targets: list[tuple[object, str, str, bool]] = [(torch.cuda, "synchronize", "torch.cuda.synchronize", cuda)]
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "synchronize"):
        present = accelerator.current_accelerator() is not None
        targets.append((accelerator, "synchronize", "torch.accelerator.synchronize", present))
    targets.append((torch.cuda.Event, "synchronize", "torch.cuda.Event.synchronize", cuda))
    targets.append((torch.cuda.Stream, "synchronize", "torch.cuda.Stream.synchronize", cuda))
    return targets


@contextmanager
def counting(frames: RepoFrames, device: torch.device) -> Iterator[OpCounter]:
    """Count one measured run; the Python APIs are restored even if the body raises."""
    counter = OpCounter(frames, device)
    saved: list[tuple[object, str, Callable[..., Any]]] = []
    for name, category, direction in (("cpu", "copy", "to-host"), ("tolist", "sync", "")):
        original, wrapper = _wrap_tensor_method(counter, name, category, direction)
        saved.append((torch.Tensor, name, original))
        setattr(torch.Tensor, name, wrapper)
    for owner, attr, label, available in _sync_targets():
        original = getattr(owner, attr)
        saved.append((owner, attr, original))
        setattr(owner, attr, _wrap_sync(counter, label, original, available))
    try:
        with counter:
            yield counter
    finally:
        for owner, attr, original in reversed(saved):
            setattr(owner, attr, original)
