"""``value-transferred-twice``: unpacked transfers whose target binds one name twice, what
the finding says about them, and the look-alikes that are not transfers."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitrepo import GitRepo
from rltrefactor.api import ReviewRequest, review
from rltrefactor.matching.matchers.residency.transfers import ValueTransferredTwice

from .helpers import hits

MATCHER = ValueTransferredTwice("value-transferred-twice", {})


def _lines(code: str) -> list[int]:
    return [line for line, _ in hits(MATCHER, code)]


@pytest.mark.parametrize("statement", [
    "a, b, a = jax.tree.map(jax.device_put, (x, y, z))",
    "a, b, a = jax.tree.map(functools.partial(jax.device_put, device=dev), (x, y, z))",
    "a, b, a = place((x, y, z), devices=jax.local_devices())",
    "a, b, a = place([x, y, z], jax.sharding.PositionalSharding(devs))",
    "a, b, a = place(target_device, (x, y, z))",
    "a, b, a = [t.npu() for t in (x, y, z)]",
    "a, b, a = jax.device_put(x, s), jax.device_put(y, s), jax.device_put(z, s)",
    "a, b, a = torch.as_tensor(x, device=d), y.to(d), z.xpu()",
])
def test_each_transfer_shape_with_a_repeated_target_is_reported(statement):
    code = f"import jax, functools, torch\n\ndef step(x, y, z, s, d, dev, devs, target_device):\n    {statement}\n"
    assert _lines(code) == [4]


@pytest.mark.parametrize("statement", [
    "a, b, a = combine((x, y, z))",  # not a placement
    "a, b, a = jax.device_put((x, y), s)",  # the result is not unpacked element by element
    "a, b, a = x.to(torch.float16), y.to(torch.float16), z.to(dtype=torch.float16)",  # conversions
    "a, b, a = [t.npu() for t in (x, y, z) if t is not None]",  # a filtered comprehension need not line up
    "a, *b, a = jax.device_put((x, y, z), s)",  # a star breaks the positions
    "a = b = jax.device_put((x, y), s)",
    "a, b = jax.device_put((x, x), s)",  # two buffers of one array may be meant
    "_, b, _ = jax.device_put((x, y, z), s)",
    "self.a, other.a = jax.device_put((x, y), s)",
    "a[0], a[0] = jax.device_put((x, y), s)",  # subscripts are not followed
])
def test_look_alikes_are_left_alone(statement):
    code = f"import jax, torch\n\ndef step(self, other, x, y, z, s, a):\n    {statement}\n"
    assert _lines(code) == []


def test_the_finding_says_the_same_array_crosses_twice_when_both_sides_repeat_it():
    code = "import jax\n\ndef step(ids, pos, s):\n    ids, pos, ids = jax.device_put((ids, pos, ids), s)\n"
    [(line, bindings)] = hits(MATCHER, code)
    assert line == 4 and bindings["X"] == "ids" and bindings["CALL"] == "jax.device_put"
    assert bindings["WHAT"] == "`ids` is transferred twice on every run (elements 1 and 3) and the first copy is thrown away"
    assert bindings["FIX"] == "list `ids` once among the transferred values and once in the target"


def test_the_finding_says_which_transfer_is_lost_when_the_sources_differ():
    code = ("import torch\n\ndef step(self, dev):\n"
            "    self.ids, self.pos, self.ids = (\n"
            "        t.to(dev, non_blocking=True) for t in (self.ids_cpu, self.pos_cpu, self.slots_cpu))\n")
    [(line, bindings)] = hits(MATCHER, code)
    assert line == 4 and bindings["X"] == "self.ids"
    assert bindings["WHAT"] == ("the transfer of `self.ids_cpu` (element 1) is thrown away and "
                                "`self.ids` holds `self.slots_cpu` (element 3)")


# The only placement evidence (``self.mesh``) lies on a line the change leaves alone.
RUNNER = """\
from engine.utils import place


class Runner:
    def prepare(self, ids, pos, rows):
        (ids, pos,
         rows) = place(
            self.mesh,
            (ids, pos,
             rows),
        )
        return ids, pos, rows
"""


def test_a_change_that_adds_the_name_to_both_sides_is_reported_on_its_line(tmp_path: Path):
    repo = GitRepo(tmp_path / "repo")
    repo.write("engine/runner.py", RUNNER)
    repo.commit("base")
    repo.write("engine/runner.py", RUNNER.replace("         rows) = place(", "         rows, rows) = place(").replace(
        "             rows),", "             rows, rows),"))
    repo.commit("head")
    result = review(ReviewRequest(repo=str(repo.path), diff="HEAD~1..HEAD", use_cache=False, jobs=1,
                                  overrides={"select": ("value-transferred-twice",)}))
    assert [(f.rule_id, f.span.line, f.severity) for f in result.findings] == [("value-transferred-twice", 7, "error")]
