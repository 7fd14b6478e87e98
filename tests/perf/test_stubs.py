"""Import stubs (``perf-stubs``): a module that imports a GPU-only package at the top
imports; calling into the stubbed package from a function raises, naming it."""

from __future__ import annotations

import importlib
import sys

import pytest

from rltrefactor.perf.stubs import StubbedModuleError, StubFinder, StubModule, install_stubs

ENGINE = '''\
import flash_attn
import triton
import triton.language as tl
from flash_attn import flash_attn_func
from flash_attn.ops.rotary import apply_rotary


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=4)], key=["n"])
@triton.jit
def add_kernel(x, n, BLOCK: tl.constexpr):
    pass


class FlashBlock(flash_attn.modules.Block):
    pass


def attend(q):
    return flash_attn_func(q, q, q)


def launch(x):
    add_kernel[(1,)](x, 1)


def kind(x):
    return "flash" if isinstance(x, flash_attn.modules.Block) else "plain"
'''


@pytest.fixture
def stubbed(tmp_path, monkeypatch):
    """``stub_engine`` imported with flash_attn and triton stubbed; everything undone after."""
    (tmp_path / "stub_engine.py").write_text(ENGINE)
    (tmp_path / "flash_attn_extra.py").write_text("REAL = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    finder = install_stubs(["flash_attn", "triton"])
    try:
        yield importlib.import_module("stub_engine")
    finally:
        sys.meta_path.remove(finder)
        for name in set(sys.modules) - before:
            del sys.modules[name]


def test_a_module_importing_stubbed_packages_at_the_top_imports_and_defines_its_names(stubbed):
    assert isinstance(sys.modules["flash_attn"], StubModule)
    assert isinstance(sys.modules["flash_attn.ops.rotary"], StubModule)
    assert repr(stubbed.apply_rotary) == "<stub flash_attn.ops.rotary.apply_rotary>"
    assert repr(stubbed.add_kernel) == "<stub add_kernel (decorated by triton.autotune(...))>"
    assert stubbed.FlashBlock.__mro__[1].__name__ == "Block"


def test_calling_a_stub_from_a_function_raises_naming_the_stubbed_module(stubbed):
    with pytest.raises(StubbedModuleError) as raised:
        stubbed.attend(1)
    assert str(raised.value) == (
        "flash_attn.flash_attn_func was called, but flash_attn is an import stub here (perf-stubs under "
        "[tool.rltrefactor]); run this code where flash_attn is installed, or keep it out of the check")
    with pytest.raises(StubbedModuleError, match=r"^add_kernel \(decorated by triton.autotune\(...\)\) was called, "
                                                 r"but triton is an import stub here"):
        stubbed.launch(1)
    with pytest.raises(StubbedModuleError, match=r"^flash_attn.modules.Block was constructed, but flash_attn"):
        stubbed.FlashBlock()


def test_nothing_is_an_instance_of_a_stub(stubbed):
    assert stubbed.kind(object()) == "plain"


def test_a_module_whose_name_only_starts_alike_is_imported_for_real(stubbed):
    assert importlib.import_module("flash_attn_extra").REAL is True
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("tritonx")


def test_the_finder_names_the_entry_a_module_falls_under():
    finder = StubFinder(["flash_attn", "triton.language"])
    assert [finder.stubbed(n) for n in ("flash_attn", "flash_attn.ops.x", "triton.language.core", "triton",
                                         "flash_attnx")] == ["flash_attn", "flash_attn", "triton.language", None, None]
    assert install_stubs([]) is None
