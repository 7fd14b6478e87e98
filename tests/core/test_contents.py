"""Reading at the head revision, decoding, and the line -> definition map."""

from __future__ import annotations

from rltrefactor.change.changeset import collect_changes
from rltrefactor.change.contents import read_sources
from rltrefactor.source.syntax import definitions
from rltrefactor.types import FileError

NESTED = '''\
import torch


class Runner:
    @torch.no_grad()
    def step(self, batch):
        def inner():
            return 1
        return inner()


async def serve():
    pass
'''


def test_definitions_use_python_qualified_names():
    defs = definitions(NESTED)
    assert defs.enclosing(1).qualname == "<module>"
    assert defs.enclosing(4).qualname == "Runner"
    assert defs.enclosing(5).qualname == "Runner.step"  # the decorator belongs to the method
    assert defs.enclosing(8).qualname == "Runner.step.<locals>.inner"
    assert defs.enclosing(9).qualname == "Runner.step"
    assert defs.enclosing(13).qualname == "serve"


def test_definitions_survive_syntax_errors():
    broken = "def ok():\n    return 1\n\ndef broken(:\n    pass\n"
    assert definitions(broken).enclosing(2).qualname == "ok"


def test_range_contents_come_from_git_not_the_working_tree(repo):
    repo.write("m.py", "a = 1\n")
    a = repo.commit("a")
    repo.write("m.py", "a = 2\n")
    b = repo.commit("b")
    repo.write("m.py", "a = 3  # working tree\n")
    change = collect_changes(str(repo.path), diff=f"{a}..{b}")
    assert read_sources(change, ["m.py"])["m.py"] == "a = 2\n"


def test_staged_contents_come_from_the_index(repo):
    repo.write("m.py", "a = 1\n")
    repo.commit("a")
    repo.write("m.py", "a = 2\n")
    repo.git("add", "m.py")
    repo.write("m.py", "a = 3\n")
    change = collect_changes(str(repo.path), staged=True)
    assert read_sources(change, ["m.py"])["m.py"] == "a = 2\n"


def test_undecodable_and_binary_files_are_reported_not_fatal(repo):
    repo.write("ok.py", "a = 1\n")
    base = repo.commit("base")
    repo.write("latin.py", b"x = '\xe9'\n")
    repo.write("declared.py", b"# -*- coding: latin-1 -*-\nx = '\xe9'\n")
    repo.write("nul.py", b"a = 1\x00\n")
    head = repo.commit("head")
    change = collect_changes(str(repo.path), diff=f"{base}..{head}")
    texts = read_sources(change, ["latin.py", "declared.py", "nul.py"])
    assert isinstance(texts["latin.py"], FileError) and "not valid UTF-8" in texts["latin.py"].message
    assert texts["declared.py"] == "# -*- coding: latin-1 -*-\nx = 'é'\n"
    assert isinstance(texts["nul.py"], FileError) and "binary" in texts["nul.py"].message


def test_symlink_out_of_the_repository_is_never_read(repo, tmp_path):
    secret = tmp_path / "secret.py"
    secret.write_text("password = 'x'\n")
    repo.write("a.py", "a = 1\n")
    repo.commit("base")
    (repo.path / "link.py").symlink_to(secret)
    change = collect_changes(str(repo.path), paths=(str(repo.path / "a.py"),))
    result = read_sources(change, ["link.py"])["link.py"]
    assert isinstance(result, FileError) and "outside the repository" in result.message
