"""The call index: contexts proven by call chains across files, cached by blob."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from rltrefactor.api import ReviewRequest, review
from rltrefactor.context.calls.index import CallIndex, build_index
from rltrefactor.config import Config
from rltrefactor.config import Declared
from rltrefactor.context.execution import execution_map
from rltrefactor.source.syntax import parse_fresh
from rltrefactor.types import ChangeSet, Revision
from tests.gitrepo import GitRepo


ON = "[tool.rltrefactor]\ncall-index = true\n"


def _repo(tmp_path: Path, files: dict[str, str], pyproject: str = ON) -> tuple[GitRepo, str]:
    repo = GitRepo(tmp_path / "repo")
    repo.write("pyproject.toml", pyproject)
    for path, text in files.items():
        repo.write(path, textwrap.dedent(text))
    return repo, repo.commit()


def _index(tmp_path: Path, files: dict[str, str], cache: str | None = None, config: Config = Config()) -> CallIndex:
    repo, head = _repo(tmp_path, files)
    return build_index(ChangeSet(str(repo.path), Revision("git", head), ()), config, cache)


def _context(index: CallIndex, path: str, qualname: str) -> tuple[str, str] | None:
    told = index.for_file(path)
    return told.verdict(qualname) if told is not None else None


MODEL = {
    "eng/__init__.py": "",
    "eng/ops.py": """
        import torch
        def fused_scale(x):
            return x * 2
        def unused_helper(x):
            return x
        """,
    "eng/model.py": """
        from eng.ops import fused_scale
        class Model:
            def forward(self, x):
                return self._body(x)
            def _body(self, x):
                return self._inner(x)
            def _inner(self, x):
                return fused_scale(x)
        """,
}


def test_a_wrapper_in_another_module_called_from_forward_is_per_step_with_the_chain(tmp_path: Path) -> None:
    index = _index(tmp_path, MODEL)
    kind, evidence = _context(index, "eng/ops.py", "fused_scale") or ("", "")
    assert kind == "per-step"
    assert evidence == "per step: `Model.forward` → `Model._body` → `Model._inner` → `fused_scale`"
    assert _context(index, "eng/model.py", "Model._body") == ("per-step", "per step: `Model.forward` → `Model._body`")
    assert _context(index, "eng/ops.py", "unused_helper") is None  # nothing reaches it: no verdict


def test_module_aliases_and_imported_modules_resolve(tmp_path: Path) -> None:
    index = _index(tmp_path, {
        "eng/__init__.py": "",
        "eng/ops.py": "def scale(x):\n    return x\ndef shift(x):\n    return x\ndef other(x):\n    return x\n",
        "eng/model.py": """
            import eng.ops as O
            from eng import ops
            from . import ops as relative
            class Model:
                def forward(self, x):
                    return O.scale(ops.shift(relative.other(x)))
            """,
    })
    for name in ("scale", "shift", "other"):
        assert (_context(index, "eng/ops.py", name) or ("",))[0] == "per-step", name


def test_receivers_typed_by_assignment_or_annotation(tmp_path: Path) -> None:
    index = _index(tmp_path, {
        "runner.py": """
            class ModelRunner:
                def gather(self):
                    pass
                def scatter(self):
                    pass
            class Worker:
                def collect(self):
                    pass
            """,
        "engine.py": """
            from runner import ModelRunner, Worker
            class Engine:
                def __init__(self):
                    self.runner: ModelRunner = make_runner()
                def forward(self, other: "ModelRunner"):
                    self.runner.gather()
                    other.scatter()
                    w = Worker()
                    w.collect()
            """,
    })
    for qualname in ("ModelRunner.gather", "ModelRunner.scatter", "Worker.collect"):
        assert (_context(index, "runner.py", qualname) or ("",))[0] == "per-step", qualname


def test_a_method_name_unique_in_the_repository_resolves_and_shared_or_builtin_names_do_not(tmp_path: Path) -> None:
    index = _index(tmp_path, {
        "layers.py": """
            class Mixer:
                def mix(self, x):
                    return x
                def append(self, x):
                    return x
            class Padder:
                def pad(self, x):
                    return x
            class A:
                def blend(self, x):
                    return x
            class B:
                def blend(self, x):
                    return x
            """,
        "model.py": """
            import numpy as np
            class Model:
                def forward(self, x):
                    np.pad(x)
                    self.layers[0].mix(x)
                    self.layers[1].blend(x)
                    self.items.append(x)
            """,
    })
    assert (_context(index, "layers.py", "Mixer.mix") or ("",))[0] == "per-step"
    assert _context(index, "layers.py", "A.blend") is None
    assert _context(index, "layers.py", "Mixer.append") is None
    assert _context(index, "layers.py", "Padder.pad") is None  # `np` is an imported module: its `pad` is not ours


def test_a_serving_loop_body_is_per_step_and_what_runs_before_it_is_not(tmp_path: Path) -> None:
    index = _index(tmp_path, {
        "server.py": """
            class Server:
                def serve(self):
                    self.open_sockets()
                    while True:
                        item = self.queue.get()
                        self.handle(item)
                def open_sockets(self):
                    pass
                def handle(self, item):
                    pass
            async def drain(queue):
                while not done:
                    queue.flush_all()
            def collect(queue):
                results = []
                while not queue.empty():
                    results.append(merge(queue.get()))
                return results
            def consume(queue):
                while not stopping:
                    handle_one(queue.get())
            def merge(item):
                return item
            def handle_one(item):
                return item
            """,
    })
    assert _context(index, "server.py", "Server.handle") == ("per-step", "per step: `Server.serve` → `Server.handle`")
    assert _context(index, "server.py", "Server.open_sockets") is None
    assert _context(index, "server.py", "drain") is None  # a loop that never waits is not a serving loop
    # a loop that drains a queue ends when it is empty; one that waits until told to stop serves
    assert _context(index, "server.py", "merge") is None
    assert _context(index, "server.py", "handle_one") == ("per-step", "per step: `consume` → `handle_one`")


def test_a_coroutines_loop_leaves_how_often_its_callees_run_unknown_and_a_threads_loop_is_no_root(tmp_path: Path) -> None:
    # A coroutine's loop may serve requests (a front end's) rather than steps; a loop a
    # thread runs beside the step is not waited for. The engine's own loop is a root.
    index = _index(tmp_path, {
        "server.py": """
            import threading
            class Frontend:
                async def handle_loop(self):
                    while True:
                        request = await self.queue.get()
                        self.tokenize(request)
                def tokenize(self, request):
                    pass
            class Transfer:
                def start(self):
                    threading.Thread(target=self.transfer_worker, daemon=True).start()
                def transfer_worker(self):
                    while True:
                        self.send(self.queue.get())
                def send(self, chunk):
                    pass
            class EngineCore:
                def run_busy_loop(self):
                    while True:
                        self.step_once(self.queue.get())
                def step_once(self, work):
                    pass
            """,
    })
    kind, evidence = _context(index, "server.py", "Frontend.tokenize")
    assert kind == "unknown" and "runs a coroutine's loop" in evidence, evidence
    assert _context(index, "server.py", "Transfer.send") is None
    assert _context(index, "server.py", "EngineCore.step_once") == (
        "per-step", "per step: `EngineCore.run_busy_loop` → `EngineCore.step_once`")


def test_a_closure_built_by_a_cached_factory_runs_per_call(tmp_path: Path) -> None:
    index = _index(tmp_path, {
        "ops.py": """
            import functools
            @functools.cache
            def make_op(width):
                def op(x):
                    return x * width
                return op
            @functools.cache
            def make_table(width):
                def row(i):
                    return i
                return [row(i) for i in range(width)]
            register("scale", make_op(4))
            """,
    })
    assert (_context(index, "ops.py", "make_op.<locals>.op") or ("",))[0] == "per-step"
    assert (_context(index, "ops.py", "make_op") or ("",))[0] == "one-time"
    assert (_context(index, "ops.py", "make_table.<locals>.row") or ("",))[0] != "per-step"


def test_a_function_reached_only_from_construction_is_one_time_unless_an_unresolved_call_may_reach_it(tmp_path: Path) -> None:
    index = _index(tmp_path, {
        "cache.py": """
            class KVCache:
                def __init__(self):
                    self._build_tables()
                    self._fill_slots()
                    self.resize()
                def _build_tables(self):
                    pass
                def _fill_slots(self):
                    pass
                def resize(self):
                    pass
            def elsewhere(obj):
                obj._fill_slots()
            """,
    })
    assert _context(index, "cache.py", "KVCache._build_tables") == (
        "one-time", "one-time, only called from code that is: `KVCache.__init__` → `KVCache._build_tables`")
    assert _context(index, "cache.py", "KVCache._fill_slots") is None
    # A public method may be called from outside the repository: its callers here prove nothing.
    assert _context(index, "cache.py", "KVCache.resize") is None


def test_callees_reached_only_from_tests_are_offline(tmp_path: Path) -> None:
    index = _index(tmp_path, {
        "eng/util.py": "def _make_fixture():\n    return 1\ndef shared():\n    return 2\ndef make_inputs():\n    return 3\n",
        "eng/model.py": "from eng.util import shared\nclass M:\n    def forward(self):\n        return shared()\n",
        "tests/test_util.py": "from eng.util import _make_fixture, make_inputs, shared\ndef test_it():\n    _make_fixture()\n    make_inputs()\n    shared()\n",
    })
    assert (_context(index, "eng/util.py", "_make_fixture") or ("",))[0] == "offline"
    assert _context(index, "eng/util.py", "make_inputs") is None  # public: the package's users may call it
    assert (_context(index, "eng/util.py", "shared") or ("",))[0] == "per-step"
    assert (_context(index, "tests/test_util.py", "test_it") or ("",))[0] == "offline"


def test_a_call_chain_outranks_a_name_word_and_the_name_word_stays_without_a_caller(tmp_path: Path) -> None:
    index = _index(tmp_path, {
        "worker.py": """
            class Worker:
                def idle_step(self):
                    self._make_dummy_batch_meta()
                def _make_dummy_batch_meta(self):
                    pass
                def _make_dummy_weights(self):
                    pass
            """,
        "engine.py": """
            from worker import Worker
            class Engine:
                def loop(self, worker: Worker):
                    while True:
                        self.queue.get()
                        worker.idle_step()
            """,
    })
    assert _context(index, "worker.py", "Worker._make_dummy_batch_meta") == (
        "per-step", "per step: `Engine.loop` → `Worker.idle_step` → `Worker._make_dummy_batch_meta`")
    assert (_context(index, "worker.py", "Worker._make_dummy_weights") or ("",))[0] == "one-time"


def test_functions_that_return_host_tensors_only_make_their_callers_values_host(tmp_path: Path) -> None:
    index = _index(tmp_path, {
        "prep.py": """
            import numpy as np
            import torch
            def host_lens(data):
                lens = torch.from_numpy(np.frombuffer(data, dtype=np.int32))
                return lens
            def via(data):
                return host_lens(data)
            def either(data, device):
                if device is None:
                    return data.cpu()
                return data.to(device)
            """,
        "runner.py": """
            from prep import host_lens, via, either
            def step(data):
                a = host_lens(data)
                b = via(data)
                c = either(data, None)
            """,
    })
    told = index.for_file("runner.py")
    assert told is not None and told.host_calls == frozenset({"host_lens", "via"})


def test_host_values_are_followed_through_casts_views_moves_and_numpy_calls(tmp_path: Path) -> None:
    index = _index(tmp_path, {
        "prep.py": """
            import numpy as np
            import torch
            def merged(offsets):
                starts = np.fromiter(offsets, dtype=np.int64)
                return starts[1:] - starts[:-1]
            def moved(buf):
                work_device = torch.device("cpu")
                return buf.detach().to(device=work_device).contiguous().view(torch.int64)
            def cast(buf):
                return buf.to("cpu").to(torch.int32)
            def placed(buf, device):
                return buf.to(device).contiguous()
            def viewed(buf):
                return buf.contiguous()[1:] * 2
            """,
        "runner.py": """
            import torch
            from prep import merged, moved, cast, placed, viewed
            def read_slot(buf, lens, slot):
                return int(buf[slot].item()) + int(lens[slot])
            def step(data, offsets, device):
                a = merged(offsets)
                b = moved(data)
                c = cast(data)
                d = placed(data, device)
                e = viewed(data)
                read_slot(data.to("cpu").view(torch.int64), d, 0)
            """,
    })
    told = index.for_file("runner.py")
    assert told is not None and told.host_calls == frozenset({"merged", "moved", "cast"})
    assert {parameter for function, parameter in told.host_params if function == "read_slot"} == {"buf"}


def test_a_move_to_a_written_host_device_is_host_and_a_dtype_is_a_cast(tmp_path: Path) -> None:
    index = _index(tmp_path, {
        "prep.py": """
            import torch
            def moved(buf):
                return buf.to(torch.device("cpu"))
            def cast(buf):
                return buf.to(torch.int64)
            """,
        "runner.py": """
            from prep import moved, cast
            def step(data):
                a = moved(data)
                b = cast(data)
            """,
    })
    told = index.for_file("runner.py")
    assert told is not None and told.host_calls == frozenset({"moved"})


def test_the_cache_reparses_only_changed_blobs(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    repo, head = _repo(tmp_path, MODEL)
    first = build_index(ChangeSet(str(repo.path), Revision("git", head), ()), Config(), cache)
    again = build_index(ChangeSet(str(repo.path), Revision("git", head), ()), Config(), cache)
    assert (first.parsed, again.parsed, again.indexed) == (3, 0, 3)
    assert again.files == first.files
    repo.write("eng/ops.py", "def fused_scale(x):\n    return x\n")
    changed = build_index(ChangeSet(str(repo.path), Revision("worktree"), ()), Config(), cache)
    assert changed.parsed == 1
    assert (_context(changed, "eng/ops.py", "fused_scale") or ("",))[0] == "per-step"


def test_the_execution_map_takes_the_index_verdict_over_the_files_own() -> None:
    text = "def fused_scale(x):\n    return x.item()\ndef _warmup_table():\n    pass\n"
    alone = execution_map(parse_fresh(text))
    assert [(f.qualname, f.kind) for f in alone.functions] == [("fused_scale", "unknown"), ("_warmup_table", "one-time")]
    from rltrefactor.context.calls.index import FileContexts

    told = FileContexts("ops.py", (("fused_scale", "per-step", "per step: `M.forward` → `fused_scale`"),
                                   ("_warmup_table", "per-step", "per step: `M.step` → `_warmup_table`")), frozenset({"f"}))
    proven = execution_map(parse_fresh(text), repository=told)
    assert [(f.qualname, f.kind) for f in proven.functions] == [("fused_scale", "per-step"), ("_warmup_table", "per-step")]
    assert proven.host_calls == frozenset({"f"})


def test_the_configuration_outranks_a_call_chain_in_the_execution_map() -> None:
    text = "def fused_scale(x):\n    return x.item()\ndef _warmup_table():\n    pass\n"
    from rltrefactor.context.calls.index import FileContexts

    told = FileContexts("ops.py", (("fused_scale", "per-step", "per step: `M.forward` → `fused_scale`"),
                                   ("_warmup_table", "one-time", "only `M.__init__` calls it")), frozenset())
    declared = Declared(hot_functions=("_warmup_table",), cold_functions=("fused_scale",))
    proven = execution_map(parse_fresh(text), declared, told)
    assert [(f.qualname, f.kind) for f in proven.functions] == [("fused_scale", "one-time"), ("_warmup_table", "per-step")]
    assert "cold-functions" in proven.functions[0].evidence


def test_configured_functions_start_and_stop_call_chains(tmp_path: Path) -> None:
    files = {**MODEL, "eng/loop.py": "from eng.ops import unused_helper\ndef drive(x):\n    return unused_helper(x)\n"}
    index = _index(tmp_path, files, config=Config(hot_functions=("drive",), cold_functions=("_body",)))
    assert _context(index, "eng/ops.py", "unused_helper") == ("per-step", "per step: `drive` → `unused_helper`")
    assert (_context(index, "eng/model.py", "Model._body") or ("",))[0] == "one-time"
    assert (_context(index, "eng/ops.py", "fused_scale") or ("",))[0] != "per-step"


def test_turned_off_no_index_is_built_and_the_file_alone_decides(tmp_path: Path) -> None:
    files = {
        "eng/__init__.py": "",
        "eng/ops.py": "def total(x):\n    return x\n",
        "eng/model.py": "from eng.ops import total\nclass Model:\n    def forward(self, x):\n        return total(x)\n",
    }
    repo, base = _repo(tmp_path, files, pyproject="[tool.rltrefactor]\ncall-index = false\n")
    repo.write("eng/ops.py", "def total(x):\n    n = x.sum().item()\n    return n\n")
    head = repo.commit()
    result = review(ReviewRequest(repo=str(repo.path), diff=f"{base}..{head}", cache_dir=str(tmp_path / "cache")))
    found = [(f.rule_id, f.span.line, f.execution) for f in result.findings if f.rule_id == "host-sync-in-hot-path"]
    assert found == [("host-sync-in-hot-path", 2, "unknown")]
    assert not any((tmp_path / "cache").glob("callindex-v*"))


@pytest.mark.parametrize("with_caller", [True, False])
def test_a_review_reports_per_step_code_in_another_module_with_the_chain(tmp_path: Path, with_caller: bool) -> None:
    files = {
        "eng/__init__.py": "",
        "eng/ops.py": "def total(x):\n    return x\n",
        "eng/model.py": "from eng.ops import total\nclass Model:\n    def forward(self, x):\n        return total(x)\n",
    }
    if not with_caller:
        files["eng/model.py"] = "class Model:\n    def forward(self, x):\n        return x\n"
    repo, base = _repo(tmp_path, files)
    repo.write("eng/ops.py", "def total(x):\n    n = x.sum().item()\n    return n\n")
    head = repo.commit()
    result = review(ReviewRequest(repo=str(repo.path), diff=f"{base}..{head}", cache_dir=str(tmp_path / "cache")))
    found = [f for f in result.findings if f.rule_id == "host-sync-in-hot-path"]
    assert len(found) == 1
    if with_caller:
        assert found[0].execution == "per-step"
        assert "`Model.forward` → `total`" in found[0].execution_evidence
    else:
        assert found[0].execution == "unknown"


@pytest.mark.parametrize(("added", "built"), [("    n = x.sum().item()\n", True), ("    n = 1\n", False)])
def test_the_index_is_built_only_when_a_rule_that_depends_on_where_code_runs_may_hit(
    tmp_path: Path, added: str, built: bool
) -> None:
    repo, base = _repo(tmp_path, {"ops.py": "def total(x):\n    return x\n"})
    repo.write("ops.py", "def total(x):\n" + added + "    return x\n")
    head = repo.commit()
    review(ReviewRequest(repo=str(repo.path), diff=f"{base}..{head}", cache_dir=str(tmp_path / "cache")))
    assert any((tmp_path / "cache").glob("callindex-v*")) is built


@pytest.mark.parametrize(("callee", "reported"), [("host_lens", False), ("either", True)])
def test_a_value_returned_as_a_host_tensor_by_another_module_is_no_device_sync(
    tmp_path: Path, callee: str, reported: bool
) -> None:
    repo, base = _repo(tmp_path, {
        "prep.py": """
            import numpy as np
            import torch
            def host_lens(data):
                return torch.from_numpy(np.frombuffer(data, dtype=np.int32))
            def either(data, device):
                if device is None:
                    return data.cpu()
                return data.to(device)
            """,
        "runner.py": "from prep import host_lens, either\nclass Runner:\n    def step(self, data):\n        return 0\n",
    })
    repo.write("runner.py", "from prep import host_lens, either\nclass Runner:\n    def step(self, data):\n"
               f"        lens = {callee}(data)\n        return lens.tolist()\n")
    head = repo.commit()
    result = review(ReviewRequest(repo=str(repo.path), diff=f"{base}..{head}", cache_dir=str(tmp_path / "cache")))
    assert any(f.rule_id == "host-sync-in-hot-path" for f in result.findings) is reported


def test_a_state_dict_parameter_is_one_time_unless_a_call_chain_shows_per_step(tmp_path: Path) -> None:
    index = _index(tmp_path, {
        "lora.py": """
            def merge_adapter(weight, state_dict):
                return weight + state_dict["delta"]
            def bf16_hook(module, state_dict, *args, **kwargs):
                for key, value in state_dict.items():
                    state_dict[key] = value.cpu()
            """,
        "layer.py": """
            from lora import merge_adapter
            class Layer:
                def forward(self, x):
                    return merge_adapter(x, self.adapter)
            """,
    })
    assert _context(index, "layer.py", "Layer.forward") is not None
    assert _context(index, "lora.py", "merge_adapter") == ("per-step", "per step: `Layer.forward` → `merge_adapter`")
    assert _context(index, "lora.py", "bf16_hook") == (
        "one-time", "takes a checkpoint's `state_dict`: it converts weights when a checkpoint is saved or loaded")


def test_a_launchers_main_block_is_the_programs_entry_point_not_offline_code(tmp_path: Path) -> None:
    index = _index(tmp_path, {
        "train/trainer.py": """
            class Trainer:
                def train(self):
                    for batch in self.loader:
                        self.step_metrics(batch)
                def step_metrics(self, batch):
                    return batch
            """,
        "train/launch.py": """
            from train.trainer import Trainer
            def build_trainer():
                return Trainer()
            if __name__ == "__main__":
                build_trainer().train()
            """,
    })
    assert (_context(index, "train/trainer.py", "Trainer.train") or ("",))[0] not in ("offline", "one-time")
    assert (_context(index, "train/launch.py", "build_trainer") or ("",))[0] not in ("offline", "one-time")


def test_a_function_only_import_time_code_calls_stays_one_time(tmp_path: Path) -> None:
    # The look-alike: a module's import-time call runs once, whoever imports it.
    index = _index(tmp_path, {
        "eng/registry.py": "def _build_table():\n    return {}\nTABLE = _build_table()\n",
    })
    assert (_context(index, "eng/registry.py", "_build_table") or ("",))[0] == "one-time"


def test_a_protocol_model_outranks_a_chain_the_index_reads_from_a_name(tmp_path: Path) -> None:
    processor = textwrap.dedent("""
        from transformers import ProcessorMixin
        class ImageProcessor(ProcessorMixin):
            def __call__(self, images):
                return images
        """)
    index = _index(tmp_path, {
        "eng/processing.py": processor,
        "eng/runner.py": "from eng.processing import ImageProcessor\nclass Runner:\n    def execute_model(self, batch):\n"
                         "        return ImageProcessor()(batch)\n",
    })
    told = index.for_file("eng/processing.py")
    found = execution_map(parse_fresh(processor), Declared(), told)
    kinds = {f.qualname: (f.kind, f.basis) for f in found.functions}
    assert kinds["ImageProcessor.__call__"] == ("per-request", "protocol")


def test_how_a_method_reads_a_self_attribute_decides_whether_its_instance_escapes() -> None:
    from rltrefactor.context.calls.facts import read_facts
    from rltrefactor.source.treesitter import parse

    facts = read_facts(parse(textwrap.dedent('''\
        class Model:
            def embed(self, x):
                if self.visual is None or isinstance(self.tower, Stub):
                    return x
                y = self.visual(x) + self.visual.dtype.itemsize
                run_sharded(self.encoder, x)
                for block in self.blocks:
                    y = block(y)
                return self.heads[0](y)

            def keep(self):
                self.runner = Runner(self.visual)
                self.towers = [self.tower]
                return self.encoder

            def choose(self, x):
                if self.audio or self.video is not None:
                    tower = self.audio if x.is_audio else self.video
                    return tower(x)
        ''')))
    uses = {f.qualname: f.instance_uses for f in facts.functions}
    # calls, member reads and tests run nothing new; an argument, a loop, a subscript hand
    # the instance on within the call; a class built with it or a container keeps it; a
    # return hands it to the caller (an escape, unless a property returns it)
    assert sorted(uses["Model.embed"]) == ["blocks", "encoder", "heads"]
    assert sorted(uses["Model.keep"]) == ["encoder^", "tower!", "visual!"]
    # a test of the value is no use; the value a conditional expression gives is
    assert sorted(uses["Model.choose"]) == ["audio!", "video!"]


@pytest.mark.parametrize(("before", "after", "inert"), [
    (b"    def f(self, x: ", b") -> None:", True),
    (b"    y: Optional[", b"] = None", True),
    (b'    x: "', b'" = None', True),  # a forward reference
    (b"        if isinstance(m, ", b"):", True),
    (b"from .tower import Block, ", b"", True),
    (b"class Derived(", b"):", True),  # placed by its bases
    (b'REGISTRY = {"tower": ', b"}", False),  # a dict's value, not an annotation
    (b"EntryClass = [", b"]", False),  # a list, not a subscript
    (b'    names = ["', b'"]', False),  # a name a registry may load with getattr
    (b"    return ", b"", False),
    (b"    tower = ", b".from_config(config)", False),  # a class method may build one
], ids=["parameter", "subscript", "forward-reference", "isinstance", "import", "derived", "dict-value",
        "list", "string", "returned", "class-method"])
def test_which_mentions_of_a_class_name_make_or_hand_on_no_instance(before: bytes, after: bytes, inert: bool) -> None:
    from rltrefactor.context.calls.instances import _inert_mention

    assert _inert_mention(before, after, imported=True) is inert


NESTED_IMPORTS = '''\
import os
if _is_xpu:
    from sgl_kernel import topk_sigmoid
else:
    try:
        from sglang.kernels.ops.moe.moe_topk_sigmoid import topk_sigmoid
    except ImportError:
        pass
if _is_musa:
    from sglang.srt.hardware_backend.musa.kernels.topk import topk_sigmoid
def fused_topk():
    import torch
'''


def test_a_files_facts_come_in_source_order_every_run() -> None:
    # The query cursor hands nested captures over in an order that varies from run to
    # run; a name bound by several imports must resolve the same way each time (the last
    # binding in the source, as when every branch runs).
    from rltrefactor.context.calls.facts import read_facts
    from rltrefactor.source.treesitter import parse

    bindings = {tuple(target for name, target, _ in read_facts(parse(NESTED_IMPORTS)).imports if name == "topk_sigmoid")
                for _ in range(20)}
    assert bindings == {("sgl_kernel.topk_sigmoid", "sglang.kernels.ops.moe.moe_topk_sigmoid.topk_sigmoid",
                         "sglang.srt.hardware_backend.musa.kernels.topk.topk_sigmoid")}


def test_a_dataclass_lists_its_fields_in_order_and_writes_are_read_with_their_receivers() -> None:
    from rltrefactor.context.calls.facts import facts_from_json, facts_to_json, read_facts
    from rltrefactor.source.treesitter import parse

    facts = read_facts(parse(textwrap.dedent('''\
        import dataclasses
        from dataclasses import dataclass, field
        from typing import ClassVar, NamedTuple, Optional

        @dataclass(frozen=True)
        class Meta:
            lens: torch.Tensor
            ids: Optional[list[torch.Tensor]] = None
            count: int = 0
            extra: list = field(default_factory=list)
            buffer: torch.Tensor = torch.zeros(4)
            kind: ClassVar[str] = "meta"

        class Pair(NamedTuple):
            left: torch.Tensor
            right: int

        class Plain:
            value: torch.Tensor

        def fill(meta: Meta, batch, name, x):
            meta.lens = x.cpu()
            batch.ids = [t.cpu() for t in x]
            batch.count = 3
            a.left, b.right = 1, 2
            setattr(meta, "buffer", x)
            setattr(meta, name, x)
            return dataclasses.replace(meta, lens=x.cuda(), count=None)
        ''')))
    classes = {c.qualname: c for c in facts.classes}
    assert classes["Meta"].fields == ("lens", "ids", "count", "extra", "buffer!")
    assert classes["Meta"].tensor_fields == ("lens", "ids", "buffer")
    assert classes["Pair"].fields == ("left", "right") and classes["Plain"].fields == ()
    writes = {(attribute, kind, receiver) for attribute, kind, _, receiver in facts.field_writes}
    assert writes == {("lens", "h", "meta"), ("ids", "h", "batch"), ("left", "-", "a"), ("right", "-", "b"),
                      ("buffer", "-", "meta"), ("*", "-", "meta"), ("lens", "-", "meta")}
    assert facts_from_json(facts_to_json(facts)) == facts


DATACLASS_ENGINE = {
    "eng/__init__.py": "",
    "eng/meta.py": """
        from dataclasses import dataclass
        import torch

        @dataclass
        class Meta:
            lens: torch.Tensor
            ids: torch.Tensor | None = None

        @dataclass
        class Other:
            lens: torch.Tensor
        """,
    "eng/runner.py": """
        import torch
        from eng.meta import Meta, Other

        class Runner:
            def build(self, lens_np, ids):
                return Meta(torch.from_numpy(lens_np), ids=ids)

            def build_again(self, lens_np):
                return Meta(lens=torch.from_numpy(lens_np))

            def relabel(self, other: Other, device):
                other.lens = other.lens.to(device)
        """,
    "eng/model.py": """
        class Model:
            def forward(self, meta):
                return meta.lens.tolist(), meta.ids
        """,
}


def test_the_index_tells_a_file_the_dataclass_fields_every_construction_fills_on_the_host(tmp_path: Path) -> None:
    told = _index(tmp_path, DATACLASS_ENGINE).for_file("eng/model.py")
    # ``ids`` is passed a value no one places; a write to another class's ``lens`` is not Meta's.
    assert told is not None and told.host_class_fields == frozenset({"eng.meta.Meta.lens"})


def test_an_unplaced_write_of_the_field_name_leaves_it_unknown(tmp_path: Path) -> None:
    files = dict(DATACLASS_ENGINE)
    files["eng/runner.py"] = files["eng/runner.py"].replace(
        "other.lens = other.lens.to(device)", "other.lens = other.lens.to(device)\n                meta = self.build_again(None)\n"
        "                meta.lens = meta.lens.to(device)")
    told = _index(tmp_path, files).for_file("eng/model.py")
    assert told is not None and told.host_class_fields == frozenset()
