"""The type engine's owner: hover texts read as types, host types told from device ones,
and an engine that cannot answer turned off with one line, never a failed review."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from rltrefactor.context import typeengine
from rltrefactor.context.typeengine import TypeEngine, hover_type
from rltrefactor.library.names import bundled_names
from rltrefactor.matching.matchers.residency.type_names import is_host_type, is_tensor_type

HOST_TYPES = bundled_names().entry("host-types").values


def _hover(text: str) -> dict:
    return {"contents": {"kind": "markdown", "value": f"```python\n{text}\n```"}}


@pytest.mark.parametrize(("hover", "expected"), [
    ("(variable) m: numpy.ndarray", "numpy.ndarray"),
    ("(attribute) scale: torch._tensor.Tensor", "torch._tensor.Tensor"),
    ("(parameter) ids: list[int]", "list[int]"),
    ("(function) build: def build(n: Unknown) -> ndarray: ...", "ndarray"),
    ("(method) run: def run(\n    self: Runner,\n    x: Tensor\n) -> tuple[int, float]: ...", "tuple[int, float]"),
    ("(variable) m: Unknown", None),
    ("(function) build: def build(n: int) -> Any: ...", None),
    ("(class) Runner: class Runner", None),
])
def test_hover_text_gives_the_type(hover, expected):
    assert hover_type(_hover(hover)) == expected


def test_no_reply_is_unknown():
    assert hover_type(None) is None
    assert hover_type({"contents": []}) is None


@pytest.mark.parametrize(("answer", "host"), [
    ("numpy.ndarray", True),
    ("ndarray[tuple[int, int], dtype[float64]]", True),
    ("list[int]", True),
    ("tuple[int, ...]", True),
    ("int | None", True),
    ("Optional[ndarray]", True),
    ("dict[str, list[float]]", True),
    ("BatchFeature", True),
    ("torch._tensor.Tensor", False),
    ("Tensor | None", False),
    ("list[Tensor]", False),
    ("dict[str, Tensor]", False),
    ("Runner", False),
    ("torch._tensor.Tensor & int", True),
    ("list[Tensor & int]", True),
    ("torch._tensor.Tensor & Runner", False),
])
def test_host_types_are_told_from_device_ones(answer, host):
    assert is_host_type(answer, HOST_TYPES) is host


def test_a_missing_engine_is_off_before_any_question(tmp_path, monkeypatch):
    monkeypatch.setattr(typeengine, "_find_executable", lambda python: None)
    engine = TypeEngine(str(tmp_path))
    engine.check()
    assert engine.unavailable is not None and "not installed" in engine.unavailable
    assert engine.type_at("a.py", "x = 1\n", 1, 0) is None and engine.questions == 0


def test_a_project_interpreter_that_is_not_there_turns_the_engine_off(tmp_path):
    engine = TypeEngine(str(tmp_path), python=str(tmp_path / "bin" / "python"))
    engine.check()
    assert engine.unavailable == f"the project's python {tmp_path / 'bin' / 'python'} is not an executable file"


def _silent_engine(tmp_path: Path) -> str:
    """An executable that accepts the connection and never answers."""
    script = tmp_path / "pyrefly"
    script.write_text('#!/bin/sh\n[ "$1" = --version ] && echo "pyrefly 0" && exit 0\nexec sleep 30\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_an_engine_that_gives_no_answer_is_turned_off_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(typeengine, "FIRST_ANSWER_S", 0.5)
    engine = TypeEngine(str(tmp_path), executable=_silent_engine(tmp_path))
    assert engine.type_at("a.py", "x = 1\n", 1, 0) is None
    assert engine.unavailable is not None and "gave no answer to initialize" in engine.unavailable
    assert engine.type_at("a.py", "x = 1\n", 1, 0) is None  # off for the rest of the review, asked nothing


def test_answers_are_kept_on_disk_by_content(tmp_path):
    (tmp_path / "a.py").write_text("import numpy as np\nm = np.zeros(3)\n")
    first = TypeEngine(str(tmp_path), cache_dir=str(tmp_path / "cache"))
    first.check()
    if first.unavailable is not None:
        pytest.fail(f"the pinned type engine must be installed with the package: {first.unavailable}")
    text = (tmp_path / "a.py").read_text()
    answer = first.type_at("a.py", text, 2, 0)
    first.close()
    second = TypeEngine(str(tmp_path), cache_dir=str(tmp_path / "cache"))
    assert second.type_at("a.py", text, 2, 0) == answer and second.questions == 0  # read from disk, asked nothing
    assert answer is not None and "ndarray" in answer


@pytest.mark.parametrize(("answer", "tensor"), [
    ("torch._tensor.Tensor", True),
    ("Tensor | Unknown", True),
    ("torch.nn.parameter.Parameter", True),
    ("Tensor | None", True),
    ("list[Tensor]", False),
    ("Unknown", False),
    ("Tensor | ndarray", False),
])
def test_tensor_types_are_told_from_the_rest(answer, tensor):
    assert is_tensor_type(answer) is tensor


def test_two_versions_of_one_file_are_each_answered_from_their_own_text(tmp_path):
    head = "import numpy as np\nvalue = np.zeros(3)\n"
    base = "import torch\nvalue = torch.zeros(3)\n"
    (tmp_path / "a.py").write_text(head)
    engine = TypeEngine(str(tmp_path))
    engine.check()
    try:
        assert "ndarray" in (engine.type_at("a.py", head, 2, 0) or "")
        assert "Tensor" in (engine.type_at("a.py", base, 2, 0) or "")  # the base, as pre-existing findings ask it
    finally:
        engine.close()


def test_the_repository_stamp_follows_every_python_file_and_nothing_else(repo):
    repo.write("pkg/a.py", "x = 1\n")
    repo.write("pkg/b.py", "y = 2\n")
    repo.commit("base")
    root = str(repo.path)
    first = typeengine.repository_stamp(root)
    assert typeengine.repository_stamp(root) == first
    repo.write("README.md", "not Python\n")
    assert typeengine.repository_stamp(root) == first
    repo.write("pkg/b.py", "y = 3\n")  # changed in the working tree
    changed = typeengine.repository_stamp(root)
    assert changed != first
    repo.write("pkg/c.py", "z = 4\n")  # added, untracked
    assert typeengine.repository_stamp(root) not in (first, changed)


def test_a_warmed_file_answers_the_question_asked_not_the_warm_up(tmp_path):
    text = "import numpy as np\nvalue = np.zeros(3)\nname = 'x'\n"
    (tmp_path / "a.py").write_text(text)
    engine = TypeEngine(str(tmp_path))
    engine.check()
    try:
        engine.warm("a.py", text)  # its reply arrives before the question's, and is read past
        assert engine.type_at("a.py", text, 3, 0) == "Literal['x']"
        assert "ndarray" in (engine.type_at("a.py", text, 2, 0) or "")
    finally:
        engine.close()


def test_past_its_budget_the_engine_turns_off_and_says_how_long_it_had(tmp_path):
    (tmp_path / "a.py").write_text("import numpy as np\nm = np.zeros(3)\n")
    engine = TypeEngine(str(tmp_path), budget_s=0.0)
    engine.check()
    if engine.unavailable is not None:
        pytest.fail(f"the pinned type engine must be installed with the package: {engine.unavailable}")
    engine.type_at("a.py", (tmp_path / "a.py").read_text(), 2, 0)
    assert engine.unavailable == "out of time (0 s of questions in one review)"
    engine.close()


def test_a_review_of_many_files_gives_the_engine_more_time_than_one_of_a_few():
    from rltrefactor.context.typeengine import budget_for

    assert budget_for(1) == budget_for(100)  # a review's floor
    assert budget_for(50_000) > budget_for(5_000) > budget_for(100)
