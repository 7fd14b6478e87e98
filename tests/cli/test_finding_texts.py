"""What a finding says: one sentence of cost and one line of evidence by default, the caveats
under ``--explain`` and in JSON, each rule's texts once in SARIF, and a fix fitted to the
shape of the flagged code."""

from __future__ import annotations

ENGINE = "eng/runner.py"
BASE = """import torch


class Runner(torch.nn.Module):
    def __init__(self, device):
        super().__init__()
        self.device = device
"""
# Two reads of values the functions do not place (conditional claims), and uploads: a
# computed Python number, a literal one, one number in a list, and lists of host values;
# the module's ``forward`` calls each of them, so each runs per step.
HEAD = BASE + """
    def read_step(self, batch):
        self.total = batch.sum().item()

    def other_read_step(self, batch):
        self.first = batch.max().item()

    def count_step(self, batch):
        n = len(batch)
        self.count = torch.tensor(n).to(self.device)

    def flag_step(self, batch):
        self.flag = torch.tensor(5, device=self.device)

    def ids_step(self, batch):
        self.ids = torch.tensor(batch.ids, device=self.device)

    def one_step(self, batch):
        self.one = torch.tensor([batch.size(0)], device=self.device)

    def sizes_step(self, batch):
        sizes = [len(batch), 2]
        self.sizes = torch.tensor(sizes, device=self.device)

    def forward(self, batch):
        self.read_step(batch)
        self.other_read_step(batch)
        self.count_step(batch)
        self.flag_step(batch)
        self.ids_step(batch)
        self.one_step(batch)
        self.sizes_step(batch)
"""
CAVEAT = "Where `batch.sum()` lives is not visible in this function"
PINNED_FIX = "Stage the values in a persistent pinned CPU buffer"


def _changed(repo):
    repo.write(ENGINE, BASE)
    repo.commit("base")
    repo.write(ENGINE, HEAD)
    repo.commit("head")


def _review(repo, cli, *options):
    return cli("review", "--diff", "HEAD~1..HEAD", "--no-cache", *options, cwd=repo.path)


def _line(needle: str) -> int:
    return next(n for n, line in enumerate(HEAD.splitlines(), start=1) if needle in line)


def test_the_default_view_leaves_the_caveats_to_explain_and_json(repo, cli):
    _changed(repo)
    plain = _review(repo, cli)
    assert plain.code == 1 and "evidence: Per-step code: per step: `Runner.forward` → `Runner.read_step`." in plain.out
    assert CAVEAT not in plain.out and "note:" not in plain.out
    explained = _review(repo, cli, "--explain")
    assert f"note:     {CAVEAT}" in explained.out
    assert "note:     Reported as a warning, not an error" in explained.out
    markdown = _review(repo, cli, "--format", "markdown")
    assert CAVEAT not in markdown.out and CAVEAT in _review(repo, cli, "--format", "markdown", "--explain").out
    (read,) = [f for f in _review(repo, cli, "--format", "json").json()["findings"] if f["line"] == _line("batch.sum()")]
    assert read["impact"].startswith("`batch.sum()` is copied to the host here") and CAVEAT not in read["impact"]
    assert read["evidence"] == "Per-step code: per step: `Runner.forward` → `Runner.read_step`."
    assert [note for note in read["notes"] if note.startswith(CAVEAT)]


def test_sarif_carries_a_rules_texts_once_for_its_two_results(repo, cli):
    _changed(repo)
    run = _review(repo, cli, "--format", "sarif", "--select", "host-sync-in-hot-path").json()["runs"][0]
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["host-sync-in-hot-path"] * 2
    described = [d for d in run["tool"]["driver"]["rules"] if "help" in d]
    assert [d["id"] for d in described] == ["host-sync-in-hot-path"]
    problem = described[0]["fullDescription"]["text"]
    for result in results:
        assert problem not in str(result) and "title" not in result["properties"]
        # A short message of its own (impact, evidence, fix); the caveats are properties.
        message = result["message"]["text"]
        assert " Per-step code: per step: `Runner.forward` → " in message and " Fix: Keep `batch." in message and "lives is not visible" not in message
        assert [note for note in result["properties"]["notes"] if "lives is not visible" in note]


def test_a_python_number_uploaded_per_call_gets_the_on_device_fix_and_a_list_the_pinned_buffer(repo, cli):
    _changed(repo)
    findings = _review(repo, cli, "--format", "json", "--select", "host-to-device-copy-per-call").json()["findings"]
    fixes = {f["line"]: f["fix"] for f in findings}
    computed, literal, host_list = _line("torch.tensor(n)"), _line("torch.tensor(5"), _line("batch.ids")
    one, sizes = _line("batch.size(0)"), _line("torch.tensor(sizes")
    assert sorted(fixes) == [computed, literal, host_list, one, sizes]
    assert fixes[one].startswith("Pass `batch.size(0)` to the op or kernel as a Python number")
    assert fixes[sizes].startswith(PINNED_FIX)  # a name bound to a list is a list, whatever it holds
    assert fixes[computed].startswith("Pass `n` to the op or kernel as a Python number")
    assert "compute it on the device" in fixes[computed] and PINNED_FIX not in fixes[computed]
    assert fixes[literal].startswith("Pass `5` to the op or kernel as a Python number")
    assert "build that tensor once" in fixes[literal] and PINNED_FIX not in fixes[literal]
    assert fixes[host_list].startswith(PINNED_FIX)
