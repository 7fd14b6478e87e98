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
