"""Where changed code runs: device-residency findings say it, and the review says what it skipped."""

from __future__ import annotations

ENGINE = "engine/runner.py"
BASE = """import torch


class Runner:
    def __init__(self, model):
        self.model = model

    def execute_model(self, batch):
        return self.model(batch)

    def summarize(self, logits):
        return logits


def run_benchmark(runner, batch):
    return runner.execute_model(batch)
"""


def _base(repo):
    repo.write(ENGINE, BASE)
    return repo.commit("base")


def test_unknown_findings_carry_their_context_and_a_step_name_is_no_proof(repo, cli):
    document, by_definition = _syncs_by_definition(repo, cli)
    step = by_definition["Runner.execute_model"]
    # Only its name says ``execute_model`` runs per step, and no per-step code is seen calling
    # it: how often it runs is unknown, and the finding says why.
    said = "only its name says `execute_model` runs per step; no code that runs per step is seen calling it"
    assert step["execution"] == {"context": "unknown", "evidence": said}
    assert step["confidence"] == "medium" and any(said in note for note in step["notes"])
    other = by_definition["Runner.summarize"]
    # How often it runs is unknown, and so is where its parameter lives: a conditional claim.
    assert other["execution"]["context"] == "unknown" and other["confidence"] == "low"
    contexts = {f["definition"]: f["context"] for f in document["changed_functions"]}
    assert contexts == {"Runner.execute_model": "unknown", "Runner.summarize": "unknown"}


def test_one_time_and_offline_changes_are_named_and_not_checked(repo, cli):
    _base(repo)
    repo.write(ENGINE, BASE.replace(
        "        self.model = model\n", "        self.model = model\n        self.vocab = model.vocab.tolist()\n",
    ).replace(
        "    return runner.execute_model(batch)\n",
        "    torch.cuda.synchronize()\n    return runner.execute_model(batch)\n",
    ))
    result = cli("review", "--diff", "HEAD", cwd=repo.path)
    assert result.code == 0, result.out
    assert "Not checked by per-step rules (runs once, per request or offline):" in result.out
    assert "Runner.__init__  one-time" in result.out and "run_benchmark  offline" in result.out
    assert "No changed code runs per step, or might" in result.out and "hot-functions" in result.out
    # Printed as written: a bracketed table name is not taken for a style tag.
    assert "in the configuration ([tool.rltrefactor] or rltrefactor.toml)" in result.out


def test_a_per_step_change_has_no_skip_notice(repo, cli):
    _base(repo)
    repo.write(ENGINE, BASE.replace("        return self.model(batch)\n", "        return self.model(batch) * 2\n"))
    result = cli("review", "--diff", "HEAD", cwd=repo.path)
    assert "Not checked by device-residency" not in result.out and "No changed code runs per step" not in result.out


def test_a_rule_repeated_in_one_function_is_one_finding_naming_the_other_lines(repo, cli):
    _base(repo)
    repo.write(ENGINE, BASE.replace(
        "        return self.model(batch)\n",
        "        a = batch.ids.tolist()\n        b = batch.lens.tolist()\n        return self.model(a, b)\n",
    ))
    document = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path).json()
    (finding,) = [f for f in document["findings"] if f["rule"] == "host-sync-in-hot-path"]
    assert finding["line"] == 9 and finding["also_at"] == [10]
    assert "The same at line 10." in finding["notes"]


def test_one_line_of_code_repeated_across_functions_is_a_finding_in_each(repo, cli):
    """Merging stays within one definition: each method is a place to change."""
    _base(repo)
    repo.write(ENGINE, BASE + """

class Worker:
    def begin(self):
        if self._state not in ("stopped", "draining"):
            self._state = "ready"

    def fail(self):
        if self._state not in ("stopped", "draining"):
            self._state = "unhealthy"

    def other(self):
        if self._state == "ready":
            return True
""")
    document = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path).json()
    found = [(f["line"], f.get("also_at")) for f in document["findings"] if f["rule"] == "string-state-comparison"]
    assert found == [(21, None), (25, None), (29, None)]


def test_configured_hot_functions_make_code_per_step(repo, cli):
    repo.write("pyproject.toml", '[tool.rltrefactor]\nhot-functions = ["summarize"]\n')
    _base(repo)
    repo.write(ENGINE, BASE.replace("        return logits\n", "        return logits.max().item()\n"))
    document = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path).json()
    (finding,) = [f for f in document["findings"] if f["rule"] == "host-sync-in-hot-path"]
    assert finding["execution"]["context"] == "per-step"


DUMMY = """import torch


class Runner:
    def _make_dummy_batch_meta(self, lens):
        return lens

    def forward(self, batch):
        return batch
"""


def _dummy_change(repo, config):
    repo.write("pyproject.toml", config)
    repo.write(ENGINE, DUMMY)
    repo.commit("base")
    repo.write(ENGINE, DUMMY.replace(
        "        return lens\n", "        return torch.tensor([0] + lens, device=self.device)\n",
    ).replace("        return batch\n", "        return batch.sum().item()\n"))


def test_configured_hot_functions_beat_a_set_up_name_word(repo, cli):
    _dummy_change(repo, '[tool.rltrefactor]\nhot-functions = ["_make_dummy_batch_meta"]\n')
    document = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path).json()
    contexts = {f["definition"]: f["context"] for f in document["changed_functions"]}
    assert contexts["Runner._make_dummy_batch_meta"] == "per-step"
    (finding,) = [f for f in document["findings"] if f["rule"] == "host-to-device-copy-per-call"]
    assert finding["definition"] == "Runner._make_dummy_batch_meta"
    assert finding["execution"]["evidence"] == "`_make_dummy_batch_meta` matches `hot-functions` in the configuration"


def test_configured_cold_functions_beat_forward(repo, cli):
    _dummy_change(repo, '[tool.rltrefactor]\ncold-functions = ["forward"]\n')
    document = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path).json()
    assert document["findings"] == []
    contexts = {f["definition"]: f["context"] for f in document["changed_functions"]}
    assert contexts == {"Runner._make_dummy_batch_meta": "one-time", "Runner.forward": "one-time"}


def test_an_error_needs_code_the_configuration_declares_per_step(repo, cli):
    document, by_definition = _syncs_by_definition(repo, cli)
    named = by_definition["Runner.execute_model"]  # named per step, but not declared
    assert named["severity"] == "warning"
    assert "Reported as a warning, not an error, until `hot-functions` or `hot-paths` says it runs per step." in named["notes"]
    unknown = by_definition["Runner.summarize"]
    assert unknown["severity"] == "warning"
    assert "Reported as a warning, not an error, until `hot-functions` or `hot-paths` says it runs per step." in unknown["notes"]


def test_a_per_step_function_the_configuration_names_keeps_the_error(repo, cli):
    repo.write("pyproject.toml", '[tool.rltrefactor]\nhot-functions = ["execute_model"]\n')
    document, by_definition = _syncs_by_definition(repo, cli)
    declared = by_definition["Runner.execute_model"]
    assert declared["severity"] == "error" and declared["confidence"] == "high"
    assert by_definition["Runner.summarize"]["severity"] == "warning"


def _syncs_by_definition(repo, cli):
    """The review of a read-back added to ``execute_model``, per step by its name alone, and
    to a helper nothing places, and its host-sync findings by definition."""
    _base(repo)
    repo.write(ENGINE, BASE.replace(
        "        return self.model(batch)\n",
        "        out = self.model(batch.to(self.device))\n        self.total = out.sum().item()\n        return out\n",
    ).replace("        return logits\n", "        return logits.max().item()\n"))
    document = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path).json()
    return document, {f["definition"]: f for f in document["findings"] if f["rule"] == "host-sync-in-hot-path"}
