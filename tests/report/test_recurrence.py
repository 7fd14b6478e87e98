"""The loop-semantics checklist's evidence: code that iterates a recurrence, read from its
structure; names and keyword arguments alone are no evidence."""

from __future__ import annotations

import pytest

from rltrefactor.context.recurrence import changes_recurrence, recurrence_spans

LOOPED = """\
class Runner:
    def setup(self):
        self.depths = 4

    def execute(self, hidden, metadata):
        done = hidden.new_zeros(hidden.shape[0], dtype=bool)
        for depth in range(self.max_loop_depth):
            updated = self.model.run_depth(hidden, depth=depth, cache=self.caches[depth])
            hidden = torch.where(done.unsqueeze(-1), hidden, updated)
            done = done | (self.model.exit_probability(hidden) > 0.5)
        return hidden
"""


@pytest.mark.parametrize("code", [
    "def f(self, h, n):\n    for d in range(n):\n        h = self.block(h)\n    return h\n",
    "def f(h, block, n):\n    for _ in range(n):\n        h = h + block(h, depth=_)\n    return h\n",
    "def f(self, h):\n    done = False\n    while not done:\n        h = self.core(h)\n        done = self.halt(h)\n    return h\n",
    "async def f(self, h, n):\n    for d in range(n):\n        h, cache = await self.step(h, cache)\n",
])
def test_a_recurrence_over_depths_is_evidence(code):
    assert recurrence_spans(code) == ((1, code.count("\n")),)


@pytest.mark.parametrize("code", [
    "engine = Engine(depth=32, num_loops=4, exit_depth=2)\n",  # a keyword naming depths
    "def f(self, h):\n    for layer in self.layers:\n        h = layer(h)\n    return h\n",  # a layer stack
    "def f(self, h, n):\n    for i in range(n):\n        h = self.layers[i](h)\n    return h\n",  # indexed stack
    "import torch\ndef f(xs, buf, n):\n    for i in range(n):\n        buf = torch.cat([buf, xs[i]])\n",  # accumulator
    "def f(self, best, n):\n    for depth in range(n):\n        best = max(best, self.score(depth))\n",  # builtin
    "def f(x):\n    for _ in range(3):\n        x = x.unsqueeze(0)\n",  # a method of the value
    "def f(self, n):\n    for depth in range(n):\n        x = self.make(depth)\n        y = self.use(x)\n",  # fresh
    "def f(self, xs, h):\n    for x in xs:\n        h = self.cell(x, h)\n",  # a loop over items, not depths
    "def broken(:\n",
    # Seen in ordinary engine commits: a write into a buffer slot, and a counter passed along.
    "def f(self, n):\n    for i in range(n):\n        self.out[i] = self.model(self.inp[i], i)\n",
    "def f(self, n, size):\n    offset = 0\n    for i in range(n):\n        info = Query(i, offset=offset)\n        offset += size\n",
])
def test_look_alikes_are_no_evidence(code):
    assert recurrence_spans(code) == ()


def test_only_changed_lines_inside_the_recurring_definition_count():
    assert recurrence_spans(LOOPED) == ((5, 11),)
    assert changes_recurrence([(LOOPED, frozenset({9}))])
    assert not changes_recurrence([(LOOPED, frozenset({3}))])  # the same file, another method
    assert changes_recurrence([(LOOPED, None)])  # a full scan: every line


def test_a_change_is_read_in_the_members_it_touches_with_the_file_s_imports():
    """Only the touched members are parsed; what they need of the file (its imports,
    the class around them) stays, and line numbers hold."""
    decorated = "import torch\nfrom blocks import core\n\n\n@register\n" + LOOPED.replace(
        "        return hidden\n", "        return hidden\n\n    def other(self, h, n):\n        for _ in range(n):\n            h = torch.relu(h)\n        return h\n"
    )
    assert changes_recurrence([(decorated, frozenset({13}))])  # inside ``execute``
    assert not changes_recurrence([(decorated, frozenset({7}))])  # ``setup``, beside it
    assert not changes_recurrence([(decorated, frozenset({19}))])  # ``other`` calls a function of the imported ``torch``
    assert changes_recurrence([(decorated, frozenset({8, 19}))]) is False
    assert changes_recurrence([(decorated, frozenset({8, 13}))])  # two members, one of them recurring


def test_the_summary_adds_loop_semantics_only_for_a_change_inside_the_recurrence(repo, cli):
    repo.write("engine/runner.py", LOOPED)
    repo.write("engine/config.py", "def build():\n    return dict(depth=16)\n")
    repo.commit("base")
    repo.write("engine/config.py", "def build():\n    return dict(depth=32, num_loops=4)\n")
    keyword = cli("review", "--diff", "HEAD", "--format", "markdown", cwd=repo.path)
    assert "loop-depth-vs-token-position" not in keyword.out
    repo.write("engine/runner.py", LOOPED.replace("self.depths = 4", "self.depths = 8"))
    elsewhere = cli("review", "--diff", "HEAD", "--format", "markdown", cwd=repo.path)
    assert "loop-depth-vs-token-position" not in elsewhere.out  # same file, not the loop's method
    repo.write("engine/runner.py", LOOPED.replace("> 0.5", ">= 0.5"))
    inside = cli("review", "--diff", "HEAD", "--format", "markdown", cwd=repo.path)
    assert "### Manual checklist" in inside.out and "loop-depth-vs-token-position" in inside.out
