"""Module kinds read from content, and functions that time themselves or test, read as offline."""

from __future__ import annotations

import textwrap

import pytest

from rltrefactor.context.execution import execution_map
from rltrefactor.context.module_kinds import module_kinds
from rltrefactor.library.names import bundled_names
from rltrefactor.source.syntax import parse_tree


def _kinds(text: str) -> frozenset[str]:
    return module_kinds(parse_tree(textwrap.dedent(text)), bundled_names())


@pytest.mark.parametrize("decorator", ["@triton.jit", "@triton.autotune(configs=[], key=['n'])", "@cute.kernel"])
def test_a_module_defining_kernels_is_a_kernel_module(decorator):
    assert _kinds(f"import triton\n\n{decorator}\ndef _k(x):\n    pass\n") == {"kernel"}


def test_look_alikes_of_kernel_modules():
    # A launcher that imports a kernel, and a jit of another library, define no kernel here.
    assert _kinds("from .kernels import _k\n\ndef launch(x):\n    _k[(1,)](x, num_warps=4)\n") == frozenset()
    assert _kinds("import torch\n\n@torch.jit.script\ndef f(x):\n    return x\n") == frozenset()


def test_a_module_of_settings_read_at_import_is_configuration():
    text = '''
        """Runtime settings."""
        import os

        MAX_BATCH = int(os.environ.get("MAX_BATCH", "8"))
        USE_GRAPHS = os.getenv("USE_GRAPHS", "1") == "1"

        class Limits:
            depth = int(os.environ.get("DEPTH", "4"))
            width = 8
    '''
    assert _kinds(text) == {"configuration"}


def test_look_alikes_of_configuration_modules():
    # One flag read at the top of a module of code is still a read outside configuration.
    code = '''
        import os

        DEBUG = os.getenv("DEBUG") == "1"

        def step(x):
            return x

        class Runner:
            def run(self):
                return os.environ.get("X")
    '''
    assert _kinds(code) == frozenset()
    # Setting variables for child processes reads nothing.
    assert _kinds("import os\n\nos.environ['A'] = '1'\nos.environ['B'] = '2'\n") == frozenset()


SELF_TIMING = textwrap.dedent(
    """\
    import time
    import torch

    def measure_kernel(x):
        torch.cuda.synchronize()
        start = time.perf_counter()
        run(x)
        torch.cuda.synchronize()
        print(time.perf_counter() - start)

    def wait_then_copy(x):
        torch.cuda.synchronize()
        return x.cpu()

    def stamp(x):
        return time.perf_counter(), x

    class Runner:
        def execute_model(self, x):
            torch.cuda.synchronize()
            started = time.perf_counter()
            return x, started

    def bench_attention(x):
        return x

    def testing_helper(x):
        return x
    """
)


def test_timing_is_no_evidence_but_test_or_bench_functions_are_offline():
    kinds = {f.qualname: (f.kind, f.evidence) for f in execution_map(parse_tree(SELF_TIMING)).functions}
    # A sync and a clock read say nothing of how often a function runs: a per-step logger does both.
    assert kinds["measure_kernel"] == ("unknown", "")
    assert kinds["bench_attention"][0] == "offline" and kinds["testing_helper"][0] == "offline"
    # Look-alikes: a wait without a clock, a clock without a wait, and a per-step function that times itself.
    assert kinds["wait_then_copy"][0] == "unknown" and kinds["stamp"][0] == "unknown"
    assert kinds["Runner.execute_model"][0] == "per-step"
