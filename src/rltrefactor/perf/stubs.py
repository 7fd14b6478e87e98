"""Import stubs for modules a runner machine does not have (``perf-stubs``): GPU-only
packages such as ``flash_attn`` or ``triton`` that engine modules import at the top.

``install_stubs`` puts a finder first on ``sys.meta_path`` (in the runner process, before
any of the repository's code is imported): a stubbed module and each of its submodules
import as a ``StubModule``, whatever is installed. Every attribute of a stub is a stub.
What a module or class body does with them (decorators such as ``@triton.jit``,
``triton.Config(...)``, a class deriving from a stub) yields further stubs, so the module
imports and defines its names; a call made from a function, as when a check reaches the
stubbed code, raises ``StubbedModuleError`` naming the module.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import inspect
import sys
from types import ModuleType
from typing import Any, Sequence


class StubbedModuleError(RuntimeError):
    """A stub was called where the real module's behaviour was needed."""


class Stub:
    """A name read from a stubbed module: ``flash_attn.flash_attn_func``."""

    def __init__(self, name: str, stubbed: str, target: str = "") -> None:
        self._name = name  # what the code wrote, for messages
        self._stubbed = stubbed  # the ``perf-stubs`` entry this name falls under
        self._target = target or name  # what a decorator stub stands for: the decorated function

    def __getattr__(self, attr: str) -> Stub:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)  # protocols (copy, pickle, inspect) see a plain object
        return Stub(f"{self._name}.{attr}", self._stubbed)

    def __getitem__(self, key: object) -> Stub:
        return self  # ``kernel[grid](...)``: the call that follows decides

    def __call__(self, *args: object, **kwargs: object) -> Stub:
        self._refuse_at_run_time("called")
        if len(args) == 1 and not kwargs and callable(args[0]):  # a decorator: name what it decorated
            target = args[0]._target if isinstance(args[0], Stub) else getattr(args[0], "__qualname__", "?")
            return Stub(f"{target} (decorated by {self._name})", self._stubbed, target)
        return Stub(f"{self._name}(...)", self._stubbed)

    def __iter__(self) -> Any:
        self._refuse_at_run_time("iterated over")
        return iter(())

    def __instancecheck__(self, instance: object) -> bool:
        return False  # nothing is made by a module that is not there

    def __subclasscheck__(self, subclass: type) -> bool:
        return False

    def __mro_entries__(self, bases: tuple[object, ...]) -> tuple[type, ...]:
        return (_stub_class(self._name, self._stubbed),)

    def __repr__(self) -> str:
        return f"<stub {self._name}>"

    def _refuse_at_run_time(self, how: str) -> None:
        """Return when a module or class body uses the stub; raise for any other code."""
        if not sys._getframe(2).f_code.co_flags & inspect.CO_OPTIMIZED:
            return
        raise StubbedModuleError(
            f"{self._name} was {how}, but {self._stubbed} is an import stub here (perf-stubs under "
            f"[tool.rltrefactor]); run this code where {self._stubbed} is installed, or keep it out of the check"
        )


class StubModule(ModuleType):
    """A stubbed module (a package, so its submodules import as stubs too)."""

    def __init__(self, name: str, stubbed: str) -> None:
        super().__init__(name, f"import stub of {stubbed} (perf-stubs)")
        self.__path__: list[str] = []
        self._stubbed = stubbed

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)  # ``from m import *``, ``__version__`` checks: not there
        return Stub(f"{self.__name__}.{attr}", self._stubbed)


class StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the stubbed modules and their submodules; leaves every other name alone."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)

    def stubbed(self, fullname: str) -> str | None:
        """The entry ``fullname`` falls under (itself or a parent package), or None."""
        return next((n for n in self.names if fullname == n or fullname.startswith(n + ".")), None)

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if self.stubbed(fullname) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return StubModule(spec.name, self.stubbed(spec.name) or spec.name)

    def exec_module(self, module: ModuleType) -> None:
        return None


def install_stubs(names: Sequence[str]) -> StubFinder | None:
    """Put a finder for ``names`` first on ``sys.meta_path``; None when there are none."""
    if not names:
        return None
    finder = StubFinder(names)
    sys.meta_path.insert(0, finder)
    return finder


def _stub_class(name: str, stubbed: str) -> type:
    """The base a class deriving from a stub gets: constructing one raises."""

    def __init__(self: object, *args: object, **kwargs: object) -> None:
        Stub(name, stubbed)._refuse_at_run_time("constructed")

    return type(name.rpartition(".")[2] or name, (), {"__init__": __init__, "__module__": name.rpartition(".")[0]})
