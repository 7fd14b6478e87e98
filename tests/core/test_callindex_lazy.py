"""The call index on by default and read lazily: only the files on the call chains that
reach the reviewed functions are read whole; arguments carry host residency to callees."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from rltrefactor.api import ReviewRequest, review
from rltrefactor.context.calls.contexts import CallContexts
from rltrefactor.context.calls.facts import FileFacts, read_facts
from rltrefactor.context.calls.index import build_index
from rltrefactor.context.calls.instances import Instances
from rltrefactor.context.calls.links import Repository
from rltrefactor.context.calls.texts import RevisionTexts
from rltrefactor.config import Config
from rltrefactor.config import names_for
from rltrefactor.source.syntax import parse_fresh
from rltrefactor.types import ChangeSet, Revision
from tests.gitrepo import GitRepo


def _facts(files: dict[str, str]) -> dict[str, FileFacts]:
    return {path: read_facts(parse_fresh(textwrap.dedent(text))) for path, text in files.items()}


CHAIN = {
    "eng/model.py": """
        from eng.ops import scale
        class Model:
            def forward(self, x):
                return scale(x)
        """,
    "eng/ops.py": """
        def scale(x):
            return _twice(x)
        def _twice(x):
            return x * 2
        """,
    "eng/loader.py": """
        def read_weights(path):
            return open(path).read()
        """,
    "eng/server.py": """
        def serve(port):
            return port
        """,
}


def test_a_context_reads_only_the_files_that_call_the_names_on_its_chain() -> None:
    facts = _facts(CHAIN)
    loaded: list[str] = []

    def load(path: str) -> FileFacts:
        loaded.append(path)
        return facts[path]

    texts = RevisionTexts({path: textwrap.dedent(text).encode() for path, text in CHAIN.items()})
    repository = Repository(texts, load)
    contexts = CallContexts(repository, names_for(()), ((), ()), lambda path: False)
    assert contexts.context("eng/ops.py::_twice") == ("per-step", "per step: `Model.forward` → `scale` → `_twice`")
    assert sorted(set(loaded)) == ["eng/model.py", "eng/ops.py"]  # loader.py and server.py never read


def _repo(tmp_path: Path, files: dict[str, str], pyproject: str = "[tool.rltrefactor]\ncall-index = true\n") -> tuple[GitRepo, str]:
    repo = GitRepo(tmp_path / "repo")
    repo.write("pyproject.toml", pyproject)
    for path, text in files.items():
        repo.write(path, textwrap.dedent(text))
    return repo, repo.commit()


def test_nothing_is_parsed_up_front_and_a_cold_index_reads_only_the_chain(tmp_path: Path) -> None:
    # No cache at all: the files that neither define nor call a name on the chain are never parsed.
    repo, head = _repo(tmp_path, {**CHAIN, "eng/__init__.py": ""})
    index = build_index(ChangeSet(str(repo.path), Revision("git", head), ()), Config(), None, paths=["eng/ops.py"])
    assert index.parsed == 2  # ops.py itself, and model.py (it calls ``scale``): not loader.py or server.py
    told = index.for_file("eng/ops.py")
    assert told is not None and told.verdict("_twice") == ("per-step", "per step: `Model.forward` → `scale` → `_twice`")


def test_after_a_change_unrelated_facts_are_not_read(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    repo, head = _repo(tmp_path, {**CHAIN, "eng/__init__.py": ""})
    build_index(ChangeSet(str(repo.path), Revision("git", head), ()), Config(), str(cache))
    repo.write("eng/ops.py", "def scale(x):\n    return _twice(x)\ndef _twice(x):\n    return x + x\n")
    index = build_index(ChangeSet(str(repo.path), Revision("worktree"), ()), Config(), str(cache), paths=["eng/ops.py"])
    assert index.parsed == 1  # the changed file; model.py's facts come from the cache by blob
    told = index.for_file("eng/ops.py")
    assert told is not None and told.verdict("_twice") == ("per-step", "per step: `Model.forward` → `scale` → `_twice`")


def test_the_index_tells_only_the_functions_that_hold_the_asked_lines(tmp_path: Path) -> None:
    repo, head = _repo(tmp_path, {**CHAIN, "eng/__init__.py": ""})
    change = ChangeSet(str(repo.path), Revision("git", head), ())
    told = build_index(change, Config(), None, paths=["eng/ops.py"], lines={"eng/ops.py": {4}}).for_file("eng/ops.py")
    assert told is not None and [q for q, _, _ in told.functions] == ["_twice"]
    every = build_index(change, Config(), None, paths=["eng/ops.py"]).for_file("eng/ops.py")
    assert every is not None and [q for q, _, _ in every.functions] == ["_twice", "scale"]


# -- residency passed as arguments ------------------------------------------------------------

RUNNER = """
    import numpy as np
    import torch
    from eng.pack import lengths_of
    class Runner:
        def step(self, buf, batch):
            lens = torch.from_numpy(np.frombuffer(buf, dtype=np.int32))
            return lengths_of(lens, batch.starts.pin_memory(), batch)
    """
PACK_BASE = """
    def lengths_of(lens, starts, batch):
        return batch
    """
PACK_HEAD = """
    def lengths_of(lens, starts, batch):
        total = lens.tolist()
        first = starts.to("cpu")
        return batch, total, first
    """


def _reported(tmp_path: Path, extra: dict[str, str]) -> list[tuple[str, int, bool]]:
    """(rule, line, whether line 4 is reported with it: one finding holds a function's repeats)."""
    files = {"eng/__init__.py": "", "eng/runner.py": RUNNER, "eng/pack.py": PACK_BASE, **extra}
    repo, base = _repo(tmp_path, files)
    repo.write("eng/pack.py", textwrap.dedent(PACK_HEAD))
    head = repo.commit()
    result = review(ReviewRequest(repo=str(repo.path), diff=f"{base}..{head}", cache_dir=str(tmp_path / "cache")))
    return sorted((f.rule_id, f.span.line, "line 4" in f.explanation) for f in result.findings if f.path == "eng/pack.py")


def test_a_parameter_every_caller_passes_a_host_tensor_is_a_host_value_in_another_module(tmp_path: Path) -> None:
    assert _reported(tmp_path, {
        "eng/worker.py": """
            import torch
            from eng.pack import lengths_of
            class Worker:
                def execute(self, staged, batch):
                    return lengths_of(lens=staged.cpu(), starts=staged.numpy(), batch=batch)
            """,
    }) == []


@pytest.mark.parametrize("other_caller", [
    # a device tensor passed by one caller
    """
    from eng.pack import lengths_of
    class Worker:
        def execute(self, batch):
            return lengths_of(batch.seq_lens, batch.starts, batch)
    """,
    # a call by that name the index cannot resolve: anything may be passed there
    """
    import scheduler_lib
    class Worker:
        def execute(self, batch, staged):
            return scheduler_lib.lengths_of(staged.cpu(), staged.cpu(), batch)
    """,
])
def test_one_device_argument_or_one_unresolved_call_keeps_the_parameter_unknown(tmp_path: Path, other_caller: str) -> None:
    found = _reported(tmp_path, {"eng/worker.py": other_caller})
    assert found == [("host-sync-in-hot-path", 3, True)]


def test_a_pattern_method_name_does_not_resolve_to_the_one_method_of_that_name(tmp_path: Path) -> None:
    repo, head = _repo(tmp_path, {
        "models/ocr.py": """
            class LayoutModel:
                @classmethod
                def match(cls, spec):
                    return spec.kind == "ocr"
                def _fullscan(self, page):
                    return page
            """,
        "core/worker.py": """
            import re
            _TEST_ENV = re.compile("^TEST_")
            def _strip_test_envs(envs, model):
                model._fullscan(envs)
                return {k: v for k, v in envs.items() if not _TEST_ENV.match(k)}
            """,
    })
    index = build_index(ChangeSet(str(repo.path), Revision("git", head), ()), Config(), None, paths=["models/ocr.py"])
    told = index.for_file("models/ocr.py")
    assert told is not None
    assert told.verdict("LayoutModel.match") is None  # ``_TEST_ENV.match`` is a pattern's, not the model's
    assert told.verdict("LayoutModel._fullscan") == (  # a name no standard type has still resolves
        "offline", "offline, only called from code that is: `_strip_test_envs` → `LayoutModel._fullscan`")


# A module kept in a model whose base, in another file, hands it out (``get_decoder``, which
# a server calls): its instances escape, so the protocol's per step stands, whichever file
# was read first.
LINEAGE = {
    "eng/serve.py": """
        def decode(model, x):
            return model.get_decoder()(x)
        """,
    "eng/models/base_vl.py": """
        from torch import nn
        class VLModelBase(nn.Module):
            def get_decoder(self):
                return self.language_model
        """,
    "eng/models/vl.py": """
        from torch import nn
        from eng.models.base_vl import VLModelBase
        class TextModel(nn.Module):
            def forward(self, x):
                return x
        class VLModel(VLModelBase):
            def __init__(self):
                super().__init__()
                self.language_model = TextModel()
            def embed(self, x):
                return self.language_model(x)
        """,
}


@pytest.mark.parametrize("first", [None, "eng/models/base_vl.py", "eng/models/vl.py"])
def test_what_a_class_derives_from_does_not_depend_on_the_files_read_before(first) -> None:
    facts = _facts(LINEAGE)
    texts = RevisionTexts({path: textwrap.dedent(text).encode() for path, text in LINEAGE.items()})
    repository = Repository(texts, facts.__getitem__)
    if first is not None:
        repository.facts(first)
    assert repository.qualified_bases("eng/models/vl.py", "VLModel")[0] == "eng.models.base_vl.VLModelBase"
    assert Instances(repository).uses(("eng/models/vl.py", "VLModel", "language_model")) is None  # handed out by the base
    contexts = CallContexts(repository, names_for(()), ((), ()), lambda path: False)
    assert contexts.context("eng/models/vl.py::TextModel.forward")[0] == "per-step"
