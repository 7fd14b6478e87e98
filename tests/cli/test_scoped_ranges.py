"""Range and staged reviews limited to paths: the part of the change under them, read
like the whole range (pre-existing detection and the baseline included)."""

from __future__ import annotations

HOT = "model_executor/runner.py"
OTHER = "worker/step.py"
SYNCING = "import torch\n\n\ndef forward(x):\n    y = x * 2\n    return y.sum().item()\n"
# The same code, indented under a new context manager: the finding existed at the base.
MOVED = "import torch\n\n\ndef forward(x):\n    y = x * 2\n    with torch.no_grad():\n        return y.sum().item()\n"
NEW_SYNC = "import torch\n\n\ndef step(x):\n    return x.max().item()\n"


def _range(repo):
    repo.write(HOT, SYNCING)
    repo.write(OTHER, "def step(x):\n    return x\n")
    base = repo.commit("base")
    repo.write(HOT, MOVED)
    repo.write(OTHER, NEW_SYNC)
    return base, repo.commit("head")


def _statuses(result):
    return [(f["path"], f["status"]) for f in result.json()["findings"] if f["rule"] == "host-sync-in-hot-path"]


def test_a_path_scoped_range_keeps_an_old_finding_pre_existing(repo, cli):
    base, head = _range(repo)
    scoped = cli("review", "--diff", f"{base}..{head}", "model_executor", "--format", "json", cwd=repo.path)
    assert scoped.code == 0, scoped.err
    assert _statuses(scoped) == [(HOT, "pre-existing")]
    whole = cli("review", "--diff", f"{base}..{head}", "--format", "json", cwd=repo.path)
    assert whole.code == 1 and sorted(_statuses(whole)) == [(HOT, "pre-existing"), (OTHER, "new")]


def test_a_path_scoped_range_reads_paths_from_the_current_directory(repo, cli):
    base, head = _range(repo)
    scoped = cli("review", "--diff", f"{base}..{head}", ".", "--format", "json", cwd=repo.path / "worker")
    assert scoped.code == 1 and _statuses(scoped) == [(OTHER, "new")]


def test_a_path_scoped_range_uses_the_baseline(repo, cli):
    base, head = _range(repo)
    recorded = cli("baseline", "--diff", f"{base}..{head}", "worker", "-o", "baseline.json", cwd=repo.path)
    assert recorded.code == 0, recorded.err
    result = cli("review", "--diff", f"{base}..{head}", "worker", "--baseline", "baseline.json", cwd=repo.path)
    assert result.code == 0, result.out
    assert "stale" not in result.out + result.err


def test_staged_changes_limited_to_a_path(repo, cli):
    repo.write(HOT, "import torch\n")
    repo.write(OTHER, "def step(x):\n    return x\n")
    repo.commit("base")
    repo.write(HOT, SYNCING)
    repo.write(OTHER, NEW_SYNC)
    repo.git("add", "-A")
    staged = cli("review", "--staged", "worker", "--format", "json", cwd=repo.path)
    assert staged.code == 1 and _statuses(staged) == [(OTHER, "new")]


def test_paths_do_not_limit_a_patch_file(repo, cli):
    repo.write(HOT, SYNCING)
    repo.commit("base")
    result = cli("review", "--diff-file", "-", "model_executor", cwd=repo.path, stdin="")
    assert result.code == 2
    assert "PATHS limit only --diff or --staged" in result.err and "\n" not in result.err.strip()


def test_a_path_outside_the_repository_is_an_input_error(repo, cli, tmp_path):
    base, head = _range(repo)
    result = cli("review", "--diff", f"{base}..{head}", str(tmp_path), cwd=repo.path)
    assert result.code == 2 and "outside the reviewed repository" in result.err
