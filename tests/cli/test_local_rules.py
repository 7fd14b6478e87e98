"""Repository-local rules: added through ``rule-dirs``, able to disable bundled ones."""

from __future__ import annotations

LOCAL_RULE = '''\
area: configuration-readability
rules:
  - id: acme-print-in-engine
    title: print() in engine code
    status: active
    since: 1.0.0
    severity: warning
    confidence: high
    applies-to: {paths: ["engine/**"]}
    problem: print bypasses the engine's logger.
    preferred: Use the module logger.
    exceptions: None.
    impact: "`print` here writes to stdout on every call."
    fix: Use `logger.debug` instead.
    fix-safety: safe
    references: []
    matcher:
      pattern: "print(...)"
    examples:
      - path: engine/core.py
        bad: |
          def step():
              print("step")  # expect
        good: |
          def step():
              logger.debug("step")
'''


def _setup(repo):
    repo.write("pyproject.toml", '[tool.rltrefactor]\nrule-dirs = ["review/rules"]\n')
    repo.write("review/rules/library.yaml", "schema: 1\nversion: 0.1.0\nretired-ids: []\ndisable: [host-sync-in-hot-path]\n")
    repo.write("review/rules/configuration-readability.yaml", LOCAL_RULE)
    repo.write("engine/core.py", "def step():\n    return 1\n")
    repo.commit("base")


def test_local_rule_reports_and_disabled_bundled_rule_does_not(repo, cli):
    _setup(repo)
    repo.write("engine/core.py", "def step():\n    print('x')\n    return 1\n")
    repo.write("model_executor/m.py", "def forward(x):\n    return x.item()\n")
    document = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path).json()
    assert [(f["rule"], f["path"], f["line"]) for f in document["findings"]] == [("acme-print-in-engine", "engine/core.py", 2)]


def test_rules_commands_see_the_configured_local_rules(repo, cli):
    _setup(repo)
    listing = cli("rules", "list", "--format", "json", cwd=repo.path).json()
    assert "acme-print-in-engine" in {rule["id"] for rule in listing}
    assert "host-sync-in-hot-path" not in {rule["id"] for rule in listing}
    assert cli("rules", "test", "acme-print-in-engine", cwd=repo.path).code == 0


WRITING_RULES = __import__("pathlib").Path(__file__).resolve().parents[2] / "docs" / "writing-rules.md"


def _doc_files() -> dict[str, str]:
    """The files docs/writing-rules.md shows, keyed by the path in their first comment line."""
    import re

    blocks = re.findall(r"```(?:yaml|toml)\n# (\S+)\n(.*?)```", WRITING_RULES.read_text(encoding="utf-8"), re.S)
    return {path: body for path, body in blocks}


def test_the_documented_rule_file_works_as_printed(repo, cli):
    files = _doc_files()
    assert set(files) == {"pyproject.toml", "review/rules/library.yaml", "review/rules/device-residency.yaml"}
    for path, body in files.items():
        repo.write(path, body)
    repo.write("engine/worker/model_runner.py", "def execute_model(self, batch):\n    return self.model(batch)\n")
    repo.commit("base")
    assert cli("rules", "check", cwd=repo.path).code == 0
    tested = cli("rules", "test", "cache-emptied-in-step", cwd=repo.path)
    assert tested.code == 0 and ": 2 validated; " in tested.out, tested.out
    repo.write("engine/worker/model_runner.py", (
        "import torch\n\n\ndef execute_model(self, batch):\n    out = self.model(batch)\n"
        "    torch.cuda.empty_cache()\n    return out\n"
    ))
    (finding,) = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path).json()["findings"]
    assert (finding["rule"], finding["line"]) == ("cache-emptied-in-step", 6)
    assert finding["impact"].startswith("`torch.cuda.empty_cache()` runs on the step path")


def test_a_matcher_that_is_not_a_mapping_lists_the_forms(repo, cli):
    _setup(repo)
    rules = repo.path / "review/rules/configuration-readability.yaml"
    rules.write_text(LOCAL_RULE.replace('    matcher:\n      pattern: "print(...)"\n', '    matcher: "print(...)"\n'))
    result = cli("rules", "check", cwd=repo.path)
    assert result.code == 2
    assert result.err.strip() == (
        "rltrefactor: review/rules/configuration-readability.yaml:17: rule 'acme-print-in-engine': matcher: "
        "expected a mapping (got a str 'print(...)'); write a pattern block (keys pattern, any, all, not, inside, "
        "not-inside, where), `python: ID` with optional `options:`, or `emitted-by: perf-hook`; see docs/writing-rules.md"
    )


def test_an_experimental_local_rule_runs_by_default(repo, cli):
    _setup(repo)
    rules = repo.path / "review/rules/configuration-readability.yaml"
    rules.write_text(LOCAL_RULE.replace("status: active", "status: experimental"))
    repo.commit("experimental")
    repo.write("engine/core.py", "def step():\n    print('x')\n    return 1\n")
    document = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path).json()
    assert [(f["rule"], f["line"]) for f in document["findings"]] == [("acme-print-in-engine", 2)]


def test_review_names_skipped_experimental_rules_only_of_an_area_it_selects(repo, cli):
    from rltrefactor.library.loader import load_library

    held = [r for r in load_library().rules if r.status == "experimental"]
    area = held[0].area
    in_area = [r.id for r in held if r.area == area]
    repo.write("engine/core.py", "def step():\n    return 1\n")
    repo.commit("base")
    repo.write("engine/core.py", "def step():\n    return 2\n")
    assert "experimental" not in cli("review", "--diff", "HEAD", cwd=repo.path).err  # the default set
    result = cli("review", "--diff", "HEAD", "--select", area, cwd=repo.path)
    (line,) = [line for line in result.err.splitlines() if "experimental" in line]
    count = "1 experimental bundled rule" if len(in_area) == 1 else f"{len(in_area)} experimental bundled rules"
    assert line == (f"rltrefactor: {count} not run; experimental rules run only "
                    f"when selected by id: --select {','.join(in_area)} (beside the areas to run them with the others)")
    selected = cli("review", "--diff", "HEAD", "--select", ",".join([area, *in_area]), cwd=repo.path)
    assert "experimental" not in selected.err
    lifecycle = cli("review", "--diff", "HEAD", "--select", "lifecycle", cwd=repo.path)
    assert "experimental" not in lifecycle.err  # no experimental rule in the selected area


def test_reports_and_rules_commands_name_the_local_library_beside_the_bundled_one(repo, cli):
    from rltrefactor.library.loader import load_library

    _setup(repo)
    bundled = load_library().version
    versions = f"{bundled} + review/rules 0.1.0"
    listing = cli("rules", "list", cwd=repo.path).out.splitlines()[-1]
    total = int(listing.rsplit(": ", 1)[1].split()[0])
    assert listing == f"rule library {versions}: {total} rules"
    assert cli("rules", "check", cwd=repo.path).out == f"rule library {versions}: {total} rules valid\n"
    repo.write("engine/core.py", "def step():\n    print('x')\n    return 1\n")
    text = cli("review", "--diff", "HEAD", cwd=repo.path).out.splitlines()[-1]
    assert f"· library {versions} ·" in text
    header = cli("review", "--diff", "HEAD", "--format", "markdown", cwd=repo.path).out.split("\n\n")[1]
    assert f"rule library {versions}" in header
    from rltrefactor.config import Config
    from rltrefactor.matching.engine import select_rules

    run = len(select_rules(load_library([str(repo.path / "review/rules")]), Config()))
    assert f"{run} of {total} rules run on 1 file." in header


RUNNER = "import torch\n\n\ndef execute_model(self, batch):\n    out = self.model(batch)\n    {line}\n    return out\n"


def _fix_commit(repo, line: str, fixed: str, subject: str) -> str:
    repo.write("engine/worker/model_runner.py", RUNNER.format(line=line))
    repo.commit("before")
    repo.write("engine/worker/model_runner.py", RUNNER.format(line=fixed))
    return repo.commit(subject)


def _since_line(text: str) -> str:
    (line,) = [line for line in text.splitlines() if line.startswith("    since: ")]
    return line


def test_a_first_local_rule_writes_the_local_library_and_a_second_draft_reads_it(repo, cli):
    from rltrefactor.library.loader import load_library

    bundled = load_library().version
    first = _fix_commit(repo, "torch.cuda.empty_cache()", "out = out.detach()", "Stop emptying the cache every step")
    # Printed only: nothing is written, and `since` names the local library's first version.
    printed = cli("rules", "new", "--from-commit", first, "--path", "engine/worker/model_runner.py", "--lines", "6",
                  cwd=repo.path)  # fmt: skip
    assert printed.code == 0, printed.err
    assert _since_line(printed.out) == ("    since: 0.1.0  # review/rules/library.yaml does not exist yet: "
                                        "--output review/rules/<area>.yaml writes it with this version")
    assert not (repo.path / "review").exists()
    target = "review/rules/device-residency.yaml"
    made = cli("rules", "new", "--from-commit", first, "--path", "engine/worker/model_runner.py", "--lines", "6",
               "--output", target, cwd=repo.path)  # fmt: skip
    assert made.code == 0, made.err
    assert made.out == (
        f"{target}: added rule entry empty-cache-call-on-step-path (pattern torch.cuda.empty_cache()); wrote "
        "review/rules/library.yaml (version 0.1.0, the first of this repository's rule library); fill in the TODO "
        "fields, then run 'rltrefactor rules check --rule-dir review/rules' and 'rltrefactor rules test --rule-dir "
        "review/rules empty-cache-call-on-step-path'; reviews load these rules once rule-dirs names review/rules "
        "(under [tool.rltrefactor])\n"
    )
    # The library written is the one docs/writing-rules.md shows.
    library = (repo.path / "review/rules/library.yaml").read_text()
    assert library == _doc_files()["review/rules/library.yaml"]
    assert _since_line((repo.path / target).read_text()) == (
        "    since: 0.1.0  # the first version of review/rules/library.yaml, written with this rule")
    assert f"since: {bundled}" not in (repo.path / target).read_text()
    # A second draft reads the library written by the first and leaves it as it is.
    repo.write("pyproject.toml", '[tool.rltrefactor]\nrule-dirs = ["review/rules"]\n')
    second = _fix_commit(repo, "n = out.sum().item()", "n = out.sum()", "Keep the sum on the device")
    again = cli("rules", "new", "--from-commit", second, "--path", "engine/worker/model_runner.py", "--lines", "6",
                "--output", target, cwd=repo.path)  # fmt: skip
    assert again.code == 0, again.err
    assert "wrote" not in again.out and "--rule-dir" not in again.out and "reviews load" not in again.out
    assert (repo.path / "review/rules/library.yaml").read_text() == library
    sinces = [line for line in (repo.path / target).read_text().splitlines() if line.startswith("    since: ")]
    assert sinces[1] == "    since: 0.2.0  # the next version of review/rules/library.yaml: bump it to this"
    loaded = load_library([str(repo.path / "review/rules")])
    assert [loaded.get(i).since for i in ("empty-cache-call-on-step-path", "item-call-on-step-path")] == ["0.1.0", "0.2.0"]


def test_version_prints_the_tool_and_the_bundled_rule_library(repo, cli):
    import re

    from rltrefactor import __version__

    library_yaml = WRITING_RULES.parents[1] / "rules" / "library.yaml"
    library = re.search(r"^version: (\S+)$", library_yaml.read_text(encoding="utf-8"), re.M).group(1)
    result = cli("--version", cwd=repo.path)
    assert (result.code, result.out, result.err) == (0, f"rltrefactor {__version__} (rule library {library})\n", "")
