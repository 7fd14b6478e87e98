"""The CI example stays a loadable workflow that wires all three review outputs."""

from __future__ import annotations

from pathlib import Path

import yaml

WORKFLOW = Path(__file__).resolve().parents[2] / "examples" / "ci" / "github-actions.yml"


def test_workflow_wires_sarif_annotations_and_pr_body():
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the bare key `on` as True
    steps = workflow["jobs"]["review"]["steps"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "--format sarif --output rltrefactor.sarif" in runs
    assert "--format github" in runs
    assert "--format markdown --update-pr-body body.md" in runs
    assert "gh pr edit" in runs and "--body-file body.md" in runs
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    assert upload["with"]["sarif_file"] == "rltrefactor.sarif"
    assert workflow["permissions"]["security-events"] == "write"
