"""What a new adopter reads when something goes wrong: each message says what happened and
what to do next."""

from __future__ import annotations

HOT = "model_executor/runner.py"
CLEAN = "import torch\n\n\ndef forward(x):\n    return x * 2\n"
SYNCING = "import torch\n\n\ndef forward(x):\n    y = x * 2\n    return y.sum().item()\n"


def _base(repo):
    repo.write(HOT, CLEAN)
    return repo.commit("base")


def _invalid(document):
    return [f for f in document["findings"] if f["rule"] == "invalid-suppression"]


def test_a_misspelt_rule_id_in_a_suppression_gets_the_closest_id_not_the_no_reason_sentence(repo, cli):
    _base(repo)
    repo.write(HOT, SYNCING.replace(".item()\n", ".item()  # rltrefactor: ignore[host-sync-in-hotpath] once per request\n"))
    (finding,) = _invalid(cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path).json())
    assert finding["impact"] == (
        "This suppression names unknown rule 'host-sync-in-hotpath': it silences nothing, so the finding it was "
        "meant for still reports."
    )
    assert finding["fix"] == "Write 'host-sync-in-hot-path' for 'host-sync-in-hotpath'."
    repo.write(HOT, CLEAN + "Z = 1  # rltrefactor: ignore[zzzz] because\n")
    (far,) = _invalid(cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path).json())
    assert far["fix"] == "Check 'zzzz' with 'rltrefactor rules list'."


def test_a_root_commit_says_it_has_no_parent_and_the_command_it_names_reviews_it(repo, cli):
    repo.write(HOT, SYNCING)
    root = repo.commit("first")
    result = cli("review", "--diff", f"{root}^..{root}", cwd=repo.path)
    empty_tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    assert result.code == 2
    assert result.err == (
        f"rltrefactor: {repo.path}: revision '{root}^': commit {root[:12]} is the first of its history and has no "
        f"parent; review everything it adds with: rltrefactor review --diff {empty_tree}..{root}\n"
    )
    named = result.err.split("with: ", 1)[1].split()
    reviewed = cli(*named[1:], "--format", "json", cwd=repo.path)
    assert reviewed.code == 1, reviewed.err
    document = reviewed.json()
    assert [(f["rule"], f["line"], f["status"]) for f in document["findings"]] == [("host-sync-in-hot-path", 6, "new")]
    assert document["reviewed"]["base"] is None


def test_an_unknown_parent_of_a_missing_commit_is_still_an_unknown_revision(repo, cli):
    repo.write(HOT, CLEAN)
    repo.commit("first")
    result = cli("review", "--diff", "nosuchbranch^..HEAD", cwd=repo.path)
    assert result.code == 2 and "unknown revision 'nosuchbranch^'; fetch it" in result.err


def test_baseline_help_says_it_scans_the_whole_repository_without_a_change_source(capsys):
    import pytest

    from rltrefactor.cli import main

    with pytest.raises(SystemExit):
        main(["baseline", "--help"])
    assert "With no change source (no PATH, --diff, --diff-file or --staged) it scans the whole repository." in (
        " ".join(capsys.readouterr().out.split())
    )
