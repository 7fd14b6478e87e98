"""PATH arguments: one that names nothing in the repository is a one-line input error
(exit 2), never an empty change that passes; one that names something unchanged is."""

from __future__ import annotations

import pytest

HOT = "model_executor/runner.py"
CLEAN = "import torch\n\n\ndef forward(x):\n    return x * 2\n"
SYNCING = "import torch\n\n\ndef forward(x):\n    y = x * 2\n    return y.sum().item()\n"


def _range(repo):
    repo.write(HOT, CLEAN)
    repo.write("docs/notes.md", "notes\n")
    base = repo.commit("base")
    repo.write(HOT, SYNCING)
    return f"{base}..{repo.commit('head')}"


def _one_line_error(result) -> str:
    assert result.code == 2, result.out + result.err
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err
    return result.err.strip()


def test_a_missing_path_in_a_range_review_is_an_input_error(repo, cli):
    spec = _range(repo)
    error = _one_line_error(cli("review", "--diff", spec, "nothere", cwd=repo.path))
    assert error.startswith("rltrefactor: nothere: no such file or directory at ")
    assert "relative to the current directory" in error and "did you mean" not in error


def test_a_misspelt_path_gets_the_existing_one_it_is_closest_to(repo, cli):
    spec = _range(repo)
    error = _one_line_error(cli("review", "--diff", spec, "model_executr/runer.py", cwd=repo.path))
    assert error.endswith(f"did you mean {HOT}?")
    # Written the way it was typed: from the current directory.
    nested = _one_line_error(cli("review", "--diff", spec, "runer.py", cwd=repo.path / "model_executor"))
    assert nested.endswith("did you mean runner.py?")


def test_a_missing_path_in_a_working_tree_review_is_an_input_error(repo, cli):
    repo.write(HOT, CLEAN)
    repo.commit("base")
    repo.write(HOT, SYNCING)
    error = _one_line_error(cli("review", "--diff", "HEAD", "model_exec", cwd=repo.path))
    assert "model_exec: no such file or directory in the working tree" in error
    assert error.endswith("did you mean model_executor?")
    scan = _one_line_error(cli("review", "model_exec", cwd=repo.path))
    assert scan.endswith("did you mean model_executor?")


def test_a_missing_path_in_a_staged_review_is_an_input_error(repo, cli):
    repo.write(HOT, CLEAN)
    repo.commit("base")
    repo.write(HOT, SYNCING)
    repo.git("add", "-A")
    error = _one_line_error(cli("review", "--staged", "nothere", cwd=repo.path))
    assert "nothere: no such file or directory in the index or the working tree" in error


def test_an_existing_path_without_changes_is_nothing_to_review(repo, cli):
    spec = _range(repo)
    result = cli("review", "--diff", spec, "docs/notes.md", cwd=repo.path)
    assert result.code == 0, result.err
    assert "Nothing to review" in result.out and result.err == ""


def test_an_existing_directory_limits_the_review_to_the_change_under_it(repo, cli):
    spec = _range(repo)
    result = cli("review", "--diff", spec, "model_executor", "--format", "json", cwd=repo.path)
    assert result.code == 1, result.err
    assert [(f["path"], f["line"]) for f in result.json()["findings"]] == [(HOT, 6)]
    assert cli("review", "--diff", spec, "docs", cwd=repo.path).code == 0


def test_a_path_gone_from_the_working_tree_still_names_what_the_review_reads(repo, cli):
    spec = _range(repo)
    repo.git("rm", "-q", "docs/notes.md")
    # Tracked at the reviewed revision of the range:
    ranged = cli("review", "--diff", spec, "docs/notes.md", cwd=repo.path)
    assert ranged.code == 0 and "Nothing to review" in ranged.out, ranged.err
    # Deleted in the working tree: a change under the path.
    deleted = cli("review", "--diff", "HEAD", "docs/notes.md", cwd=repo.path)
    assert deleted.code == 0 and deleted.err == ""


@pytest.mark.parametrize("command", [("baseline", "-o", "baseline.json"), ("perf",)])
def test_baseline_and_perf_check_their_paths_too(repo, cli, command):
    spec = _range(repo)
    error = _one_line_error(cli(*command, "--diff", spec, "model_executr", cwd=repo.path))
    assert "model_executr: no such file or directory" in error and error.endswith("did you mean model_executor?")
    assert not (repo.path / "baseline.json").exists()
