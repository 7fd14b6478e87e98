"""Pre-existing detection: moved code is recognised while the base is reviewed only
where a kept finding's identity can occur."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rltrefactor.findings import preexisting
from rltrefactor.api import ReviewRequest, review
from rltrefactor.source.syntax import definitions

HOT = "model_executor/runner.py"
# Longer than the moved function, so that git's diff keeps it and moves the other.
HELPER = "def helper(a, b):\n    c = a + b\n    d = c * 2\n    e = d - a\n    f = e / 3\n    return f\n"
SYNC_FN = "def {name}(x):\n    y = x * 2\n    return y.sum().item()\n"


def _statuses(repo, base: str, head: str, *, whole_base: bool = False, monkeypatch=None) -> list[tuple]:
    if whole_base:
        monkeypatch.setattr(preexisting, "identity_lines", lambda *args, **kwargs: None)
    result = review(ReviewRequest(repo=str(repo.path), diff=f"{base}..{head}", use_cache=False))
    return [(f.path, f.span.line, f.rule_id, f.status) for f in result.findings if f.area == "device-residency"]


def _both_ways(repo, base: str, head: str, monkeypatch) -> list[tuple]:
    """Statuses with the narrowed base review, checked against a whole-base-file review."""
    narrowed = _statuses(repo, base, head)
    assert narrowed == _statuses(repo, base, head, whole_base=True, monkeypatch=monkeypatch)
    return narrowed


def _module(*functions: str) -> str:
    return "import torch\n\n\n" + "\n\n".join(functions)


def test_function_moved_within_the_file_is_pre_existing(repo, monkeypatch):
    repo.write(HOT, _module(SYNC_FN.format(name="forward"), HELPER))
    base = repo.commit("base")
    repo.write(HOT, _module(HELPER, "def other():\n    return 2\n", SYNC_FN.format(name="forward")))
    head = repo.commit("move forward below helper")
    statuses = _both_ways(repo, base, head, monkeypatch)
    assert statuses and {s[-1] for s in statuses} == {"pre-existing"}


def test_reindented_code_is_pre_existing(repo, monkeypatch):
    """A ``with`` block runs its body every time: no condition around the code changed."""
    repo.write(HOT, _module(SYNC_FN.format(name="forward")))
    base = repo.commit("base")
    repo.write(HOT, _module("def forward(x):\n    y = x * 2\n    with torch.no_grad():\n        return y.sum().item()\n"))
    head = repo.commit("re-indent")
    statuses = _both_ways(repo, base, head, monkeypatch)
    assert statuses and {s[-1] for s in statuses} == {"pre-existing"}


GUARDED = (
    "def sample(lens):\n    if lens is None:\n        lens_cpu = torch.zeros(4)\n    else:\n"
    "        lens_cpu = lens.to(\"cpu\")\n    return lens_cpu\n"
)


def test_a_removed_guard_makes_the_finding_new(repo, monkeypatch):
    """At the base the copy ran only when ``lens`` was given; at the head it runs on every call."""
    repo.write(HOT, _module(GUARDED))
    base = repo.commit("base")
    repo.write(HOT, _module("def sample(lens):\n    lens_cpu = lens.to(\"cpu\")\n    return lens_cpu\n"))
    head = repo.commit("drop the guard")
    assert _both_ways(repo, base, head, monkeypatch) == [(HOT, 5, "host-sync-in-hot-path", "new")]


def test_a_guarded_statement_moved_and_rewrapped_under_the_same_guard_is_pre_existing(repo, monkeypatch):
    repo.write(HOT, _module(GUARDED))
    base = repo.commit("base")
    moved = (
        "def sample(lens):\n    scale = 2\n    if lens is None:  # nothing measured yet\n"
        "        lens_cpu = torch.zeros(4)\n    else:\n        lens_cpu = lens.to(\n            \"cpu\"\n        )\n"
        "    return lens_cpu * scale\n"
    )
    repo.write(HOT, _module(HELPER, moved))
    head = repo.commit("move, re-wrap, comment")
    statuses = _both_ways(repo, base, head, monkeypatch)
    assert statuses and {s[-1] for s in statuses} == {"pre-existing"}


def test_code_in_a_renamed_file_is_pre_existing(repo, monkeypatch):
    repo.write(HOT, _module(HELPER, SYNC_FN.format(name="forward")))
    base = repo.commit("base")
    repo.git("mv", HOT, "model_executor/runner_v2.py")
    repo.write("model_executor/runner_v2.py", _module(SYNC_FN.format(name="forward"), HELPER, "def added():\n    return 3\n"))
    head = repo.commit("rename and edit")
    statuses = _both_ways(repo, base, head, monkeypatch)
    assert statuses and {(s[0], s[-1]) for s in statuses} == {("model_executor/runner_v2.py", "pre-existing")}


def test_module_level_code_moved_down_is_pre_existing(repo, monkeypatch):
    statement = "total = torch.ones(2).sum().item()\n"
    repo.write(HOT, "import torch\n\n" + statement + "\n\n" + HELPER)
    base = repo.commit("base")
    repo.write(HOT, "import torch\n\n\n" + HELPER + "\n\n" + statement)
    head = repo.commit("move a module-level statement")
    assert {s[-1] for s in _both_ways(repo, base, head, monkeypatch)} <= {"pre-existing"}


def test_code_of_a_renamed_function_is_moved_code(repo, monkeypatch):
    """The fingerprint names the enclosing definition, but code that left ``forward`` for
    ``forward_step`` is the base's code (``moves``): pre-existing, naming where it stood."""
    repo.write(HOT, _module(SYNC_FN.format(name="forward"), HELPER))
    base = repo.commit("base")
    repo.write(HOT, _module(HELPER, SYNC_FN.format(name="forward_step")))
    head = repo.commit("rename and move forward")
    statuses = _both_ways(repo, base, head, monkeypatch)
    assert statuses and {s[-1] for s in statuses} == {"pre-existing"}
    result = review(ReviewRequest(repo=str(repo.path), diff=f"{base}..{head}", use_cache=False))
    assert {(f.definition, f.moved_from.definition) for f in result.findings if f.moved_from} == {("forward_step", "forward")}


def test_a_second_copy_of_a_finding_is_new(repo, monkeypatch):
    repo.write(HOT, _module(SYNC_FN.format(name="forward")))
    base = repo.commit("base")
    doubled = "def forward(x):\n    y = x * 2\n    z = y.sum().item()\n    return y.sum().item() + z\n"
    repo.write(HOT, _module(doubled))
    head = repo.commit("sync twice")
    by_rule: dict[str, list[str]] = {}
    for _, _, rule_id, status in _both_ways(repo, base, head, monkeypatch):
        by_rule.setdefault(rule_id, []).append(status)
    assert by_rule and all(sorted(s) == ["new", "pre-existing"] for s in by_rule.values())


def test_a_copy_added_beside_an_unchanged_one_is_new(repo, monkeypatch):
    """The head is matched only around the changed lines; the unchanged copy with the
    same identity must still be counted there, or the added one would pass as moved."""
    repo.write(HOT, _module("def forward(x):\n    y = x * 2\n    a = y.sum().item()\n    return a\n"))
    base = repo.commit("base")
    added = "def forward(x):\n    y = x * 2\n    a = y.sum().item()\n    b = 1\n    c = y.sum().item()\n    return a + c\n"
    repo.write(HOT, _module(added))
    head = repo.commit("read it again")
    assert _both_ways(repo, base, head, monkeypatch) == [(HOT, 8, "host-sync-in-hot-path", "new")]


@pytest.mark.parametrize("scope", ["changed-functions", "files"])
def test_in_a_wider_scope_the_added_copy_is_the_new_one(repo, scope):
    """Where the unchanged copy is reported too, the copy on the changed line is the new
    hit and the unchanged one stays pre-existing, whatever their order."""
    repo.write(HOT, _module("def forward(x):\n    y = x * 2\n    a = y.sum().item()\n    return a\n"))
    base = repo.commit("base")
    added = "def forward(x):\n    y = x * 2\n    a = y.sum().item()\n    b = 1\n    c = y.sum().item()\n    return a + c\n"
    repo.write(HOT, _module(added))
    head = repo.commit("read it again")
    result = review(ReviewRequest(repo=str(repo.path), diff=f"{base}..{head}", scope=scope, use_cache=False))
    statuses = [(f.span.line, f.status) for f in result.findings if f.rule_id == "host-sync-in-hot-path"]
    assert statuses == [(6, "pre-existing"), (8, "new")]


def _large_module(count: int) -> str:
    return _module(*(SYNC_FN.format(name=f"step_{i}") for i in range(count)))


def test_one_function_change_in_a_large_file_reviews_only_that_function_at_the_base(repo, monkeypatch):
    text = _large_module(400)
    repo.write(HOT, text)
    base = repo.commit("base")
    edited = text.replace(
        SYNC_FN.format(name="step_200"),
        "def step_200(x):\n    y = x * 3\n    w = x.cpu()\n    return y.sum().item()  # read once\n",
    )
    repo.write(HOT, edited)
    head = repo.commit("edit one function")

    seen: list = []
    real = preexisting.identity_lines
    monkeypatch.setattr(preexisting, "identity_lines", lambda *args, **kwargs: seen.append(real(*args, **kwargs)) or seen[-1])
    statuses = _statuses(repo, base, head)
    monkeypatch.undo()
    assert statuses == _statuses(repo, base, head, whole_base=True, monkeypatch=monkeypatch)
    status_at = {line: status for _, line, _, status in statuses}
    assert status_at[_line_of(edited, "    return y.sum().item()  # read once", "step_200")] == "pre-existing"
    assert status_at[_line_of(edited, "    w = x.cpu()", "step_200")] == "new"
    # The head is matched again inside ``step_200`` only, where the kept identities may
    # also start on lines the change did not touch, and so is the base.
    for lines, source in zip(seen, (edited, text), strict=True):
        (function,) = [d for d in definitions(source).definitions if d.qualname == "step_200"]
        assert lines and all(function.start_line <= line <= function.end_line for line in lines)


def _line_of(text: str, needle: str, function: str) -> int:
    start = text.index(f"def {function}(")
    return text.count("\n", 0, text.index(needle, start)) + 1


@pytest.mark.parametrize(
    "definition, base_line, expected",
    [("step_1", 11, {11}), ("step_0", 6, {6}), ("missing", 6, set())],
)
def test_base_lines_are_the_first_word_inside_the_named_definition(definition, base_line, expected):
    from rltrefactor.types import Finding, Span

    base = _module(SYNC_FN.format(name="step_0"), SYNC_FN.format(name="step_1"))
    head = "\n\n" + base  # two lines added at the top
    line = base_line + 2
    finding = Finding(
        "host-sync-in-hot-path", "device-residency", "t", "warning", HOT, Span(line, 12, line, 26),
        "", "", "fp", definition=definition, snippet=head.split("\n")[line - 1],
    )
    assert preexisting.identity_lines(base, [finding], head) == frozenset(expected)
    # Without the head text the definition's lines are kept whole; a module-level
    # finding then needs the whole base file.
    assert preexisting.identity_lines(base, [finding], None) >= frozenset(expected)
    module_level = replace(finding, definition="<module>")
    assert preexisting.identity_lines(base, [module_level], None) is None
    assert preexisting.identity_lines(base, [module_level], head) == frozenset()
