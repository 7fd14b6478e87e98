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
  Python values onto a device; each classified by ``copies.classify`` from its tensors
  (direction, pinned / pageable / device memory on each side, bytes, blocking mode). A
  d2h copy also blocks the host; it is still counted once, as a copy. A non_blocking
  upload from pageable memory past ``PAGEABLE_NON_BLOCKING_WAIT_BYTES`` waits for the
  stream: it is counted as a sync.
- alloc: any other op output that does not alias an input (per the op schema), and
  tensors built from Python values on the host (``lift_fresh``).
- race (cuda runs only): a host access to the host side of a non-blocking copy still in
  flight (``races.py``); its direction names the copying line.

A check that runs on the CPU stands in for a device: host reads and ``.cpu()`` on host
tensors count as they would on cuda. On a cuda run, host-only work is not a sync.
"""

from __future__ import annotations

import sys
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

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
from .copies import CopyKind, classify
from .races import CopySide, RaceTracker, race_direction
from .wrapped_apis import wrapped_apis

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
    category: str  # "sync" | "copy" | "alloc" | "race"
    op: str  # "aten.nonzero", "Tensor.cpu", "torch.cuda.synchronize"
    # copies and hidden syncs: ``CopyKind.label`` ("h2d pageable->device non_blocking"),
    # "to-host" for ``.cpu()`` of a host tensor; races: ``race_direction``; else ""
    direction: str
    site: Site


# (category, op, direction, bytes, the copy's kind when it is one)
Classified = tuple[str, str, str, int, "CopyKind | None"]


def _device_type(value: object) -> str | None:
    return value.device.type if isinstance(value, torch.Tensor) else None


def copy_kind(source: torch.Tensor, destination: torch.Tensor, non_blocking: bool) -> CopyKind:
    """What a copy from ``source`` into ``destination`` costs, from the tensors themselves;
    its size is what lands in ``destination`` (a copy that converts the dtype writes more or less)."""
    return classify(source.device.type, _pinned(source), destination.device.type, _pinned(destination),
                    non_blocking, destination.nbytes)


def _pinned(tensor: torch.Tensor) -> bool:
    return tensor.device.type == "cpu" and tensor.is_pinned()


def host_range(tensor: torch.Tensor) -> tuple[int, int] | None:
    """The host bytes [start, end) a tensor (or view) spans; None for device or empty tensors."""
    if tensor.device.type != "cpu" or tensor.numel() == 0:
        return None
    start = tensor.data_ptr()
    last = sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride()))
    return start, start + (last + 1) * tensor.element_size()


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


def _host_operands(func: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[tuple[torch.Tensor, bool]]:
    """(host tensor, written) for each tensor operand whose data the op touches; none for views."""
    schema = func._schema
    writes = [bool(a.alias_info is not None and a.alias_info.is_write) for a in schema.arguments]
    if not any(writes) and schema.returns and all(r.alias_info is not None for r in schema.returns):
        return  # a view reads no data
    for index, argument in enumerate(schema.arguments):
        value = args[index] if index < len(args) else kwargs.get(argument.name)
        for tensor in tree_leaves(value):
            if isinstance(tensor, torch.Tensor) and tensor.device.type == "cpu":
                yield tensor, writes[index]


class OpCounter(TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch leaves the mode unannotated
    """Counts classified events per (category, op, direction, site) during ``with``."""

    def __init__(self, frames: RepoFrames, device: torch.device) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # as above
        self.frames = frames
        self.stand_in = device.type == "cpu"
        self.counts: Counter[EventKey] = Counter()
        self.bytes: Counter[EventKey] = Counter()
        # Only a device run has copies in flight; a stand-in run copies synchronously.
        self.races: RaceTracker | None = None if self.stand_in else RaceTracker()
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

    def host_access(self, tensor: torch.Tensor, write: bool, access: str, frame: FrameType) -> None:
        """The host touches ``tensor``'s memory: a race with the copies in flight over it."""
        span = host_range(tensor) if self.races is not None and self.races.in_flight else None
        if span is None or self.races is None:
            return
        before = len(self.races.races)
        self.races.accessed(*span, write=write, site=self.frames.site(frame), access=access)
        for race in self.races.races[before:]:
            key = EventKey("race", access, race_direction(race), race.site)
            self.counts[key] += 1

    def waited_for_stream(self) -> None:
        if self.races is not None:
            self.races.stream_synchronized(torch.cuda.current_stream().cuda_stream)

    def __torch_dispatch__(
        self, func: OpOverload, types: Sequence[type], args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        caller = sys._getframe(1)
        event = None
        if self.races is not None and self.races.in_flight and not self._device_copy(func, args):
            for tensor, written in _host_operands(func, args, kwargs):
                self.host_access(tensor, written, "aten." + func._schema.name.split("::", 1)[-1], caller)
        out = func(*args, **kwargs)
        if not self._quiet:
            event = self._classify(func, args, kwargs, out)
            if event is not None:
                self.record(*event[:4], frame=caller)
        if self.races is not None:
            self._track(event, args, out, caller)
        return out

    def _device_copy(self, func: OpOverload, args: tuple[Any, ...]) -> bool:
        """A copy between host and device: its host side is read or written by the stream, in order."""
        name = func._schema.name.split("::", 1)[-1]
        devices = {_device_type(a) for a in args[:2]} - {None}
        return (name == "copy_" or name in _COPY_SELF_TO_OUT) and len(devices) > 1

    def _track(self, event: Classified | None, args: tuple[Any, ...], out: object, caller: FrameType) -> None:
        """Copies that stay in flight after returning; what waits for the stream covers them."""
        assert self.races is not None
        kind = event[4] if event is not None else None
        # A hidden sync waits for the stream too, but only past a size: it covers nothing.
        if (event is not None and event[0] == "sync" and kind is None) or (
                kind is not None and kind.direction == "d2h" and not kind.non_blocking):
            self.waited_for_stream()
        if kind is None or not kind.in_flight_after_return:
            return
        if kind.direction == "h2d":
            host = args[1] if len(args) > 1 and _device_type(args[0]) != "cpu" else args[0]
        else:
            host = args[0] if _device_type(args[0]) == "cpu" else out
        span = host_range(host) if isinstance(host, torch.Tensor) else None
        if span is not None:
            side: CopySide = "download" if kind.direction == "d2h" else "upload"
            self.races.issued(side, *span, torch.cuda.current_stream().cuda_stream, self.frames.site(caller))

    def _classify(self, func: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any], out: object) -> Classified | None:
        name = func._schema.name.split("::", 1)[-1]
        op = "aten." + name
        src = _device_type(args[0]) if args else None
        if self._is_sync(name, args, src):
            return "sync", op, "", 0, None
        non_blocking = bool(kwargs.get("non_blocking", args[2] if name == "copy_" and len(args) > 2 else False))
        kind = None
        if name == "copy_" and len(args) > 1 and isinstance(args[1], torch.Tensor):
            kind = copy_kind(args[1], args[0], non_blocking)
        elif name in _COPY_SELF_TO_OUT and isinstance(out, torch.Tensor):
            kind = copy_kind(args[0], out, non_blocking)
        elif name in _LIFT_OPS and isinstance(out, torch.Tensor):
            if out.device.type == "cpu":
                return "alloc", op, "", out.untyped_storage().nbytes(), None
            # the values came from Python objects on the host: a staged, blocking upload
            kind = CopyKind("h2d", "pageable", "device", False, out.nbytes)
        if kind is not None:
            return ("sync" if kind.hidden_sync else "copy"), op, kind.label, kind.nbytes, kind
        tensors, nbytes = _fresh_bytes(func, out)
        return ("alloc", op, "", nbytes, None) if tensors else None

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


@contextmanager
def counting(frames: RepoFrames, device: torch.device) -> Iterator[OpCounter]:
    """Count one measured run; the Python APIs are restored even if the body raises."""
    counter = OpCounter(frames, device)
    with wrapped_apis(counter), counter:
        yield counter
