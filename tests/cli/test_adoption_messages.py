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
