"""A baseline is taken with the analysis a review makes (the call index included): on an
unchanged tree a review right after it finds every entry again, and its footers say how
many findings the baseline held back."""

from __future__ import annotations

import json
import textwrap

import pytest

# ``host_lens`` returns a host tensor: only the call index, reading prep.py, knows that the
# first ``.item()`` below reads host memory (no sync), where a per-file reading reports it.
PREP = """
    import numpy as np
    import torch


    def host_lens(data):
        lens = torch.from_numpy(np.frombuffer(data, dtype=np.int32))
        return lens
"""
RUNNER = """
    from eng.prep import host_lens


    class ModelRunner:
        def execute_model(self, data, logits):
            lens = host_lens(data)
            longest = lens.max().item()
            token = logits.argmax().item()
            return self.model(data, longest, token)
"""


@pytest.fixture
def engine_repo(repo):
    repo.write("setup.py", "from setuptools import setup\n\nsetup(name='eng')\n")
    repo.commit("base")
    repo.write("eng/__init__.py", "")
    repo.write("eng/prep.py", textwrap.dedent(PREP))
    repo.write("eng/runner.py", textwrap.dedent(RUNNER))
    repo.commit("engine")
    return repo


def _entries(path):
    return json.loads(path.read_text())["entries"]


def test_a_baseline_records_what_a_review_of_the_change_finds(engine_repo, cli, tmp_path):
    baseline = tmp_path / "baseline.json"
    assert cli("baseline", "-o", str(baseline), cwd=engine_repo.path).code == 0
    reviewed = cli("review", "--diff", "HEAD~1..HEAD", "--scope", "files", "--format", "json", cwd=engine_repo.path)
    found = [(f["rule"], f["path"], f["definition"]) for f in reviewed.json()["findings"]]
    assert found  # the sync on `logits` is found either way
    assert sorted(found) == sorted((e["rule"], e["path"], e["definition"]) for e in _entries(baseline))


@pytest.mark.parametrize("review", [
    ("--diff", "HEAD~1..HEAD", "--scope", "files"),  # the last change, its files read in full
    (".",),  # a full scan
])
def test_an_unchanged_tree_reviewed_after_its_baseline_has_nothing_stale(engine_repo, cli, tmp_path, review):
    baseline = tmp_path / "baseline.json"
    cli("baseline", "-o", str(baseline), cwd=engine_repo.path)
    held = len(_entries(baseline))
    assert held >= 1
    document = cli("review", *review, "--baseline", str(baseline), "--format", "json", cwd=engine_repo.path).json()
    assert document["baseline"]["stale"] == [] and document["baseline"]["matched"] == held
    assert document["findings"] == []
    text = cli("review", *review, "--baseline", str(baseline), cwd=engine_repo.path)
    assert text.code == 0 and "stale" not in text.err
    assert f" · {held} held back by the baseline · " in text.out.splitlines()[-1]
    markdown = cli("review", *review, "--baseline", str(baseline), "--format", "markdown", cwd=engine_repo.path)
    noun = "finding" if held == 1 else "findings"
    assert f" · {held} {noun} held back by the baseline." in markdown.out


def test_without_a_baseline_the_footers_say_nothing_of_one(engine_repo, cli):
    text = cli("review", "--diff", "HEAD~1..HEAD", cwd=engine_repo.path)
    markdown = cli("review", "--diff", "HEAD~1..HEAD", "--format", "markdown", cwd=engine_repo.path)
    assert text.code == 1 and "held back" not in text.out + markdown.out
