"""The Python APIs wrapped for one measured run (imports torch).

``Tensor.cpu``/``tolist`` dispatch no op on a host tensor and ``synchronize`` never
dispatches one, so the counter sees them only through these wrappers; ``Tensor.numpy``
and ``Event.record`` are wrapped for the race check alone (a host view of a buffer, and
where an event stands in its stream). Every wrapper is undone when the run ends.
"""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager, contextmanager
from types import FrameType
from typing import Any, Callable, Iterator, Protocol

import torch

from .races import RaceTracker


class OpCounter(Protocol):
    """What the wrappers tell the counter (``counting.OpCounter``)."""

    stand_in: bool
    races: RaceTracker | None

    def record(self, category: str, op: str, direction: str, nbytes: int, frame: FrameType) -> None: ...

    def quiet(self) -> AbstractContextManager[None]: ...

    def host_access(self, tensor: torch.Tensor, write: bool, access: str, frame: FrameType) -> None: ...

    def waited_for_stream(self) -> None: ...


def _wrap_tensor_method(
    counter: OpCounter, name: str, category: str, direction: str
) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``category`` "": the method is wrapped only to see host accesses (``numpy``)."""
    original = getattr(torch.Tensor, name)

    def wrapper(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        host = self.device.type == "cpu"
        if host and name != "cpu":  # ``.cpu()`` of a host tensor returns it untouched
            counter.host_access(self, name == "numpy", f"Tensor.{name}", sys._getframe(1))  # a numpy view may be written
        if category == "copy" and not host:
            return original(self, *args, **kwargs)  # dispatches _to_copy, counted there
        with counter.quiet():
            result = original(self, *args, **kwargs)
        if category and (counter.stand_in or not host):
            counter.record(category, f"Tensor.{name}", direction, self.nbytes, sys._getframe(1))
            if not host:
                counter.waited_for_stream()
        return result

    return original, wrapper


Cover = Callable[[RaceTracker, tuple[Any, ...]], None]


def _wrap_sync(counter: OpCounter, label: str, original: Callable[..., Any], available: bool,
               cover: Cover) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        counter.record("sync", label, "", 0, sys._getframe(1))
        # On a host without the device the call stands in for one and does nothing.
        result = original(*args, **kwargs) if available else None
        if counter.races is not None:
            cover(counter.races, args)
        return result

    return wrapper


def _wrap_event_record(counter: OpCounter, original: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(event: object, stream: Any = None) -> Any:
        result = original(event, stream)
        if counter.races is not None:
            on = stream if stream is not None else torch.cuda.current_stream()
            counter.races.event_recorded(id(event), on.cuda_stream)
        return result

    return wrapper


def _device(races: RaceTracker, args: tuple[Any, ...]) -> None:
    races.device_synchronized()


def _event(races: RaceTracker, args: tuple[Any, ...]) -> None:
    races.event_synchronized(id(args[0]))


def _stream(races: RaceTracker, args: tuple[Any, ...]) -> None:
    races.stream_synchronized(args[0].cuda_stream)


def _sync_targets() -> list[tuple[object, str, str, bool, Cover]]:
    cuda = torch.cuda.is_available()
    targets: list[tuple[object, str, str, bool, Cover]] = [
        (torch.cuda, "synchronize", "torch.cuda.synchronize", cuda, _device)]
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "synchronize"):
        present = accelerator.current_accelerator() is not None
        targets.append((accelerator, "synchronize", "torch.accelerator.synchronize", present, _device))
    targets.append((torch.cuda.Event, "synchronize", "torch.cuda.Event.synchronize", cuda, _event))
    targets.append((torch.cuda.Stream, "synchronize", "torch.cuda.Stream.synchronize", cuda, _stream))
    return targets


_TENSOR_METHODS = (("cpu", "copy", "to-host"), ("tolist", "sync", ""), ("numpy", "", ""))


@contextmanager
def wrapped_apis(counter: OpCounter) -> Iterator[None]:
    """The wrappers in place for the ``with`` body, the originals back even if it raises."""
    saved: list[tuple[object, str, Callable[..., Any]]] = []
    for name, category, direction in _TENSOR_METHODS:
        original, wrapper = _wrap_tensor_method(counter, name, category, direction)
        saved.append((torch.Tensor, name, original))
        setattr(torch.Tensor, name, wrapper)
    for owner, attr, label, available, cover in _sync_targets():
        original = getattr(owner, attr)
        saved.append((owner, attr, original))
        setattr(owner, attr, _wrap_sync(counter, label, original, available, cover))
    saved.append((torch.cuda.Event, "record", torch.cuda.Event.record))
    setattr(torch.cuda.Event, "record", _wrap_event_record(counter, torch.cuda.Event.record))
    try:
        yield
    finally:
        for owner, attr, original in reversed(saved):
            setattr(owner, attr, original)
