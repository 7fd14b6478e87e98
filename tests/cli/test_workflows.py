"""One API workflow per command: configuration and library loaded once; a closed stdout ends quietly; clear one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rltrefactor import api, config
from rltrefactor.matching import rule_index
from rltrefactor.cli import EXIT_STDOUT_CLOSED, main
from rltrefactor.library import loader

ROOT = Path(__file__).resolve().parents[2]
HOT = "model_executor/runner.py"
SYNCING = "import torch\n\n\ndef forward(x):\n    y = x * 2\n    return y.sum().item()\n"


@pytest.fixture
def loads(monkeypatch):
    """Calls of ``load_config`` and of the rule library's loaders, wherever a command
    makes them: ``rule_index.load_rules`` (what the api calls) and ``load_library``
    called on its own."""
    calls = {"config": 0, "library": 0}
    real_config, real_rules, real_library = config.load_config, rule_index.load_rules, loader.load_library

    def counted_config(*args, **kwargs):
        calls["config"] += 1
        return real_config(*args, **kwargs)

    inside_rules = []

    def counted_rules(*args, **kwargs):
        calls["library"] += 1
        inside_rules.append(True)
        try:
            return real_rules(*args, **kwargs)
        finally:
            inside_rules.pop()

    def counted_library(*args, **kwargs):
        calls["library"] += 0 if inside_rules else 1  # load_rules reading YAML is the same load
        return real_library(*args, **kwargs)

    for module in (api, config):
        monkeypatch.setattr(module, "load_config", counted_config)
    for module in (api, rule_index):
        monkeypatch.setattr(module, "load_rules", counted_rules)
    monkeypatch.setattr(loader, "load_library", counted_library)
    return calls


def _changed(repo):
    repo.write(HOT, "import torch\n\n\ndef forward(x):\n    return x * 2\n")
    repo.commit("base")
    repo.write(HOT, SYNCING)  # no perf_hooks/: the hook refuses, without running anything


@pytest.mark.parametrize("command", [
    ["review", "--diff", "HEAD", "--perf", "--no-cache"],
    ["perf", "--diff", "HEAD"],
    ["baseline", "--no-cache"],
])
def test_each_command_loads_configuration_and_library_once(repo, loads, capsys, monkeypatch, command):
    _changed(repo)
    monkeypatch.chdir(repo.path)
    main([*command, "--repo", str(repo.path)])
    assert loads == {"config": 1, "library": 1}, capsys.readouterr().err


def test_review_perf_says_the_plan_before_the_report(repo, capsys, monkeypatch):
    from rltrefactor.perf import hook
    from rltrefactor.perf.records import PerfSummary

    _changed(repo)
    repo.write("perf_hooks/checks.py", "")
    monkeypatch.setattr(hook, "run_perf", lambda *args, **kwargs: PerfSummary(device="cpu", checks=(), deltas=()))
    monkeypatch.chdir(repo.path)
    main(["review", "--diff", "HEAD", "--perf", "--no-cache"])
    err = capsys.readouterr().err
    assert err.startswith("perf: executing micro-checks from perf_hooks/checks.py\n  base "), err


def test_a_closed_stdout_ends_quietly(tmp_path):
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "rltrefactor", "rules", "list"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment)
    proc.stdout.close()  # the reader leaves before the first line, as `| head -0` would
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == EXIT_STDOUT_CLOSED
    assert err == ""


def test_update_pr_body_refuses_a_directory_in_one_line(repo, cli):
    _changed(repo)
    (repo.path / "pr").mkdir()
    result = cli("review", "--diff", "HEAD", "--update-pr-body", "pr", cwd=repo.path)
    assert result.code == 2
    assert result.err == (
        f"rltrefactor: pr: PR body: is a directory; pass the Markdown file of the PR description, "
        f"e.g. {os.path.join('pr', 'pr-body.md')}\n"
    )
