"""``rltrefactor perf scaffold PATH::QUALNAME`` writes a micro-check of one function from
the template installed with the package, where the hook finds it; the check imports,
is discovered, and runs once its placeholders are filled in. It refuses, in one line,
what it cannot scaffold, and never overwrites a file unless told to."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from rltrefactor.api import ScaffoldRequest, scaffold
from rltrefactor.errors import ConfigError
from rltrefactor.perf.scaffold import TEMPLATE
from rltrefactor.perf.sides import run_side
from rltrefactor.perf.skeleton import call_skeleton

PROJECT = Path(__file__).resolve().parents[2]
ENGINE = PROJECT / "examples" / "demo_engine"

TICKS = """\
import torch


def tick(device):
    return torch.ones(2, device=device) * 2


def outer():
    def inner():
        return 1
    return inner


async def serve(request):
    return request
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """A copy of the demo engine with its own checks taken away."""
    root = tmp_path_factory.mktemp("scaffold") / "loopy-engine"
    shutil.copytree(ENGINE, root, ignore=shutil.ignore_patterns("__pycache__", "perf_hooks"))
    (root / "loopy" / "ticks.py").write_text(TICKS)
    return root


def test_the_cli_writes_a_check_into_the_hooks_directory_and_says_what_to_fill_in(engine, cli):
    result = cli("perf", "scaffold", "loopy/sample/sampler.py::Sampler.forward", cwd=engine)
    assert result.code == 0, result.err
    assert result.out == ("rltrefactor: wrote perf_hooks/sampler_forward.py: micro-check "
                          "perf_hooks.sampler_forward:sampler_forward of loopy/sample/sampler.py::Sampler.forward; "
                          "fill in its set-up (logits, temperatures), then run rltrefactor perf --diff REF\n")
    text = (engine / "perf_hooks" / "sampler_forward.py").read_text()
    ast.parse(text)
    assert "from loopy.sample.sampler import Sampler\n" in text
    assert "from rltrefactor.perf import micro_check\n" in text  # the template's imports
    assert "How the hook uses it" in text  # and its guidance
    assert ('    logits = _fill_in("logits")  # torch.Tensor\n'
            '    temperatures = _fill_in("temperatures")  # torch.Tensor\n'
            "    sampler = Sampler()\n"
            "    return lambda: sampler.forward(logits, temperatures)\n") in text


def test_scaffolded_checks_are_discovered_and_run_on_cpu_once_filled_in(engine):
    scaffold(ScaffoldRequest("loopy/sample/sampler.py::Sampler.forward", repo=str(engine), force=True))
    sampler = engine / "perf_hooks" / "sampler_forward.py"
    sampler.write_text(sampler.read_text()
                       .replace('_fill_in("logits")', "torch.randn(8, 64, device=device)")
                       .replace('_fill_in("temperatures")', "torch.tensor([0.0, 0.7] * 4, device=device)"))
    assert scaffold(ScaffoldRequest("loopy/ticks.py::tick", repo=str(engine))).placeholders == ()
    assert [p.name for p in scaffold(ScaffoldRequest("loopy/engine.py::LLMEngine.step", repo=str(engine))).placeholders] == ["config"]
    side = run_side(str(engine), "perf_hooks", ["--device", "cpu", "--trace"], checks=None, timeout=60)
    # A check named as the function it imports would hide it: the name takes a prefix.
    assert sorted(side.loaded) == ["perf_hooks.check_tick:check_tick", "perf_hooks.llm_engine_step:llm_engine_step",
                                   "perf_hooks.sampler_forward:sampler_forward"]
    ran = side.results["perf_hooks.sampler_forward:sampler_forward"]
    assert ran.deterministic and ("loopy/sample/sampler.py", "Sampler.forward") in ran.coverage
    assert ("loopy/ticks.py", "tick") in side.results["perf_hooks.check_tick:check_tick"].coverage
    [unfilled] = side.errors
    assert unfilled.check == "perf_hooks.llm_engine_step:llm_engine_step"
    assert "NotImplementedError: set-up not filled in: config; replace _fill_in('config')" in unfilled.message


@pytest.mark.parametrize(("target", "message"), [
    ("loopy/missing.py::step",
     r"^loopy/missing.py: perf scaffold: no such file in the repository at .* \(got loopy/missing.py::step\); "
     r"give the path relative to the repository root"),
    ("loopy/engine.py::LLMEngine.stepp",
     r"^loopy/engine.py: perf scaffold: LLMEngine.stepp is not defined there \(no stepp in LLMEngine\); "
     r"did you mean LLMEngine.step\?$"),
    ("loopy/engine.py::nowhere_at_all",
     r"^loopy/engine.py: perf scaffold: nowhere_at_all is not defined there \(no nowhere_at_all in the module's "
     r"top level\); name a function or method as the perf report lists it$"),
    ("loopy/engine.py::LLMEngine",
     r"^loopy/engine.py: perf scaffold: LLMEngine is a class, not a function; name one of its methods "
     r"\(LLMEngine.add_request, "),
    ("loopy/ticks.py::outer.<locals>.inner",
     r"^loopy/ticks.py: perf scaffold: outer.<locals>.inner is defined inside a function, where no check can "
     r"call it; scaffold the function that defines it, outer$"),
    ("loopy/ticks.py::serve",
     r"^loopy/ticks.py: perf scaffold: serve is a coroutine function \(async def\): calling it only makes a "
     r"coroutine, and a micro-check's body must run the work itself; scaffold the function that awaits it"),
    ("loopy/engine.py",
     r"^loopy/engine.py: perf scaffold: expected PATH::QUALNAME \(got 'loopy/engine.py'\); write the function "),
    ("loopy/README.md::x", r"^loopy/README.md: perf scaffold: no such file"),
    ("README.md::x", r"^README.md: perf scaffold: not a Python file \(got README.md::x\); name a .py file$"),
])
def test_what_cannot_be_scaffolded_is_refused_in_one_line(engine, target, message):
    with pytest.raises(ConfigError, match=message):
        scaffold(ScaffoldRequest(target, repo=str(engine)))


def test_an_existing_check_file_is_never_overwritten_unless_forced(engine, cli):
    target = engine / "perf_hooks" / "kv_cache_manager_publish_block_tables.py"
    target.parent.mkdir(exist_ok=True)
    target.write_text("# my own check\n")
    refused = cli("perf", "scaffold", "loopy/core/kv_manager.py::KVCacheManager.publish_block_tables", cwd=engine)
    assert refused.code == 2 and refused.out == ""
    assert refused.err == ("rltrefactor: perf_hooks/kv_cache_manager_publish_block_tables.py: perf scaffold: the file "
                           "exists (got loopy/core/kv_manager.py::KVCacheManager.publish_block_tables); pass --force "
                           "to overwrite it, or rename the existing file first\n")
    assert target.read_text() == "# my own check\n"
    forced = cli("perf", "scaffold", "loopy/core/kv_manager.py::KVCacheManager.publish_block_tables", "--force",
                 cwd=engine)
    assert forced.code == 0, forced.err
    assert "kv_cache_manager = KVCacheManager(config)\n" in target.read_text()


def test_the_configured_hooks_directory_is_where_the_check_goes(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.rltrefactor]\nperf-hooks = "tools/checks"\n')
    (tmp_path / "src" / "eng").mkdir(parents=True)
    (tmp_path / "src" / "eng" / "ops.py").write_text("def tick():\n    return 1\n")
    written = scaffold(ScaffoldRequest("src/eng/ops.py::tick", repo=str(tmp_path)))
    assert written.path == "tools/checks/check_tick.py" and written.check == "tools.checks.check_tick:check_tick"
    assert "from eng.ops import tick\n" in (tmp_path / "tools" / "checks" / "check_tick.py").read_text()  # src/ is on the path


SHAPES = """\
import dataclasses
import torch


@dataclasses.dataclass
class Batch:
    ids: torch.Tensor
    size: int = 4

    def total(self, *, scale, bias=0):
        return self.ids.sum() * scale

    @staticmethod
    def make(n, device: torch.device):
        return torch.zeros(n, device=device)

    @classmethod
    def empty(cls, device):
        return cls(torch.zeros(0, device=device))

    @property
    def count(self):
        return self.ids.numel()


class Outer:
    class Inner:
        def __call__(self, x):
            return x
"""


@pytest.mark.parametrize(("qualname", "imported", "owner", "call", "placeholders"), [
    ("Batch.total", "Batch", "batch = Batch(ids=ids)", "batch.total(scale=scale)", ["ids", "scale"]),
    ("Batch.make", "Batch", "", "Batch.make(n, device)", ["n"]),
    ("Batch.empty", "Batch", "", "Batch.empty(device)", []),
    ("Batch.count", "Batch", "batch = Batch(ids=ids)", "batch.count", ["ids"]),
    ("Outer.Inner.__call__", "Outer", "inner = Outer.Inner()", "inner(x)", ["x"]),
])
def test_the_call_skeleton_follows_the_definition(qualname, imported, owner, call, placeholders):
    skeleton = call_skeleton(ast.parse(SHAPES), qualname)
    assert (skeleton.imported, skeleton.owner, skeleton.call) == (imported, owner, call)
    assert [p.name for p in skeleton.placeholders] == placeholders


def test_the_docs_and_the_no_checks_error_point_at_the_command_not_a_repository_file():
    readme = (PROJECT / "perf_hooks" / "README.md").read_text()
    assert "rltrefactor perf scaffold PATH::QUALNAME" in readme
    assert "cp " not in readme  # no copying of a file the installed package may not ship where a repository keeps it
    assert Path(TEMPLATE).is_file() and Path(TEMPLATE).parent.name == "perf"
