"""The command line end to end: change sources, formats, exit codes and bad input."""

from __future__ import annotations

import pytest

HOT = "model_executor/runner.py"
CLEAN = "import torch\n\n\ndef forward(x):\n    return x * 2\n"
SYNCING = "import torch\n\n\ndef forward(x):\n    y = x * 2\n    return y.sum().item()\n"


def _base(repo):
    repo.write(HOT, CLEAN)
    repo.write("README.md", "demo\n")
    return repo.commit("base")


def test_empty_change_is_nothing_to_review(repo, cli):
    _base(repo)
    result = cli("review", "--diff", "HEAD", cwd=repo.path)
    assert result.code == 0
    assert "Nothing to review" in result.out


def test_added_host_sync_fails_with_location_rule_impact_fix(repo, cli):
    _base(repo)
    repo.write(HOT, SYNCING)
    result = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path)
    assert result.code == 1, result.err
    document = result.json()
    assert document["schema"] == "rltrefactor/review/v1"
    assert set(document) >= {"schema", "tool", "library", "reviewed", "findings", "errors"}
    (finding,) = [f for f in document["findings"] if f["area"] == "device-residency"]
    assert (finding["path"], finding["line"]) == (HOT, 6)
    assert finding["status"] == "new" and finding["impact"] and finding["fix"]
    assert finding["definition"] == "forward"


def test_text_output_groups_by_file_and_summarises(repo, cli):
    _base(repo)
    repo.write(HOT, SYNCING)
    result = cli("review", "--diff", "HEAD", cwd=repo.path)
    assert result.code == 1
    assert result.out.splitlines()[0] == HOT
    assert f"{HOT}:6:" in result.out and "impact:" in result.out and "fix:" in result.out
    assert "1 finding (1 failing" in result.out.splitlines()[-1]
    quiet = cli("review", "--diff", "HEAD", "--quiet", cwd=repo.path)
    assert len(quiet.out.strip().splitlines()) == 1


def test_fail_on_error_lets_warnings_pass(repo, cli):
    _base(repo)
    copying = CLEAN.replace("    return x * 2\n", "    ids = torch.tensor(list(x), device=x.device)\n    return x[ids]\n")
    repo.write(HOT, copying)
    document = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path).json()
    assert [f["severity"] for f in document["findings"]] == ["warning"]
    assert cli("review", "--diff", "HEAD", cwd=repo.path).code == 1
    assert cli("review", "--diff", "HEAD", "--fail-on", "error", cwd=repo.path).code == 0


def test_ignore_flag_drops_the_area(repo, cli):
    _base(repo)
    repo.write(HOT, SYNCING)
    result = cli("review", "--diff", "HEAD", "--ignore", "device-residency", "--format", "json", cwd=repo.path)
    assert [f for f in result.json()["findings"] if f["area"] == "device-residency"] == []


def test_unchanged_lines_are_not_reported(repo, cli):
    repo.write(HOT, SYNCING)
    repo.commit("base already syncs")
    repo.write(HOT, SYNCING + "\n\ndef other():\n    return 1\n")
    result = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path)
    assert result.code == 0 and result.json()["findings"] == []


def test_moved_code_is_pre_existing(repo, cli):
    repo.write(HOT, SYNCING)
    base = repo.commit("base")
    moved = "import torch\n\n\ndef helper():\n    return 1\n\n\ndef forward(x):\n    y = x * 2\n    return y.sum().item()\n"
    repo.write(HOT, moved.replace("    return y.sum().item()", "        return y.sum().item()").replace("    y = x * 2\n", "    y = x * 2\n    with torch.no_grad():\n"))
    head = repo.commit("move and re-indent")
    result = cli("review", "--diff", f"{base}..{head}", "--format", "json", cwd=repo.path)
    assert result.code == 0, result.out
    statuses = [f["status"] for f in result.json()["findings"] if f["area"] == "device-residency"]
    assert statuses == ["pre-existing"]
    shown = cli("review", "--diff", f"{base}..{head}", "--show-preexisting", cwd=repo.path)
    assert "(pre-existing)" in shown.out


def test_suppression_with_reason_is_kept_as_disposition(repo, cli):
    _base(repo)
    line = "    return y.sum().item()  # rltrefactor: ignore[host-sync-in-hot-path] read once per request\n"
    repo.write(HOT, SYNCING.replace("    return y.sum().item()\n", line))
    document = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path).json()
    (finding,) = [f for f in document["findings"] if f["rule"] == "host-sync-in-hot-path"]
    assert finding["suppressed"] and finding["disposition"] == "read once per request"
    assert document["summary"]["failing"] == 0


def test_suppression_without_reason_or_with_unknown_rule_is_reported(repo, cli):
    _base(repo)
    repo.write(HOT, CLEAN + "\n\nZ = 1  # rltrefactor: ignore[no-such-rule] because\nW = 2  # rltrefactor: ignore[host-sync-in-hot-path]\n")
    document = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path).json()
    invalid = [f for f in document["findings"] if f["rule"] == "invalid-suppression"]
    assert [f["line"] for f in invalid] == [8, 9]
    assert "no-such-rule" in invalid[0]["impact"] and "reason" in invalid[1]["impact"]


def test_syntax_error_is_recorded_and_the_review_goes_on(repo, cli):
    _base(repo)
    repo.write("model_executor/broken.py", "def f(:\n    pass\n")
    repo.write(HOT, SYNCING)
    result = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path)
    document = result.json()
    assert result.code == 1
    (error,) = document["errors"]
    assert error["path"] == "model_executor/broken.py" and error["line"] == 1
    assert "syntax error" in error["message"]


def test_patch_from_stdin_reads_the_working_tree(repo, cli):
    _base(repo)
    repo.write(HOT, SYNCING)
    patch = repo.git("diff")
    result = cli("review", "--diff-file", "-", "--format", "json", cwd=repo.path, stdin=patch)
    assert result.code == 1
    assert [f["line"] for f in result.json()["findings"]] == [6]


def test_staged_review(repo, cli):
    _base(repo)
    repo.write(HOT, SYNCING)
    assert cli("review", "--staged", cwd=repo.path).code == 0  # nothing staged yet
    repo.git("add", HOT)
    assert cli("review", "--staged", cwd=repo.path).code == 1


def test_full_scan_of_paths(repo, cli):
    repo.write(HOT, SYNCING)
    repo.commit("base")
    result = cli("review", "model_executor", "--format", "json", "--show-unknown-frequency", cwd=repo.path)
    assert result.code == 1 and result.json()["reviewed"]["files"] == [HOT]


def test_output_file_is_written(repo, cli, tmp_path):
    _base(repo)
    repo.write(HOT, SYNCING)
    target = tmp_path / "report.json"
    result = cli("review", "--diff", "HEAD", "--format", "json", "--output", str(target), cwd=repo.path)
    assert result.out == "" and '"findings"' in target.read_text()


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("review", "--diff", "--output=/tmp/x"), "expected one argument"),
        (("review", "--diff=--output=/tmp/x"), "invalid ref '--output=/tmp/x'"),
        (("review", "--diff", "nope"), "unknown revision 'nope'"),
        (("review", "--jobs", "0", "--diff", "HEAD"), "--jobs: expected a positive number"),
        (("review", "--format", "xml"), "invalid choice: 'xml'"),
        (("review", "--diff-file", "missing.patch"), "missing.patch: cannot read patch"),
        (("review", "no/such/dir"), "no/such/dir: no such file or directory"),
        (("review", "--select", "no-such-rule", "--diff", "HEAD"), "unknown rule or area 'no-such-rule'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(repo, cli, args, fragment):
    _base(repo)
    result = cli(*args, cwd=repo.path)
    assert result.code == 2
    assert fragment in result.err
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err


def test_unknown_config_key_is_exit_2(repo, cli):
    _base(repo)
    repo.write("pyproject.toml", "[tool.rltrefactor]\nhot_paths = []\n")
    result = cli("review", "--diff", "HEAD", cwd=repo.path)
    assert result.code == 2 and "unknown key 'hot_paths'" in result.err and "did you mean 'hot-paths'" in result.err


def test_version_and_help(repo, cli):
    assert cli("--version", cwd=repo.path).out.startswith("rltrefactor ")
    assert "--diff" in cli("review", "--help", cwd=repo.path).out


TWO_FUNCTIONS = (
    "import torch\n\n\ndef forward(x):\n    y = x * 2\n    return y.sum().item()\n\n\n"
    "def other(x):\n    return x.sum().item()\n"
)


def test_scope_widens_from_lines_to_functions_to_files(repo, cli):
    repo.write(HOT, TWO_FUNCTIONS)
    repo.commit("base syncs already")
    repo.write(HOT, TWO_FUNCTIONS.replace("    y = x * 2\n", "    y = x * 3\n"))
    lines = {s: [f["line"] for f in cli("review", "--diff", "HEAD", "--scope", s, "--format", "json", cwd=repo.path).json()["findings"]]
             for s in ("lines", "changed-functions", "files")}
    assert lines == {"lines": [], "changed-functions": [6], "files": [6, 10]}


def test_statistics_and_color(repo, cli):
    _base(repo)
    repo.write(HOT, SYNCING)
    stats = cli("review", "--diff", "HEAD", "--statistics", "--quiet", cwd=repo.path)
    # A module-level `forward` may not run per step: an error there is reported as a warning.
    assert any(line.split()[:3] == ["1", "warning", "host-sync-in-hot-path"] for line in stats.out.splitlines())
    assert "\x1b[" in cli("review", "--diff", "HEAD", "--color", "always", cwd=repo.path).out
    assert "\x1b[" not in cli("review", "--diff", "HEAD", "--color", "never", cwd=repo.path).out


def test_profile_rules_prints_a_table_to_stderr(repo, cli):
    _base(repo)
    repo.write(HOT, SYNCING)
    result = cli("review", "--diff", "HEAD", "--profile-rules", "--no-cache", cwd=repo.path)
    assert "host-sync-in-hot-path" in result.err and "seconds" in result.err


def test_baseline_ratchet(repo, cli, tmp_path):
    repo.write(HOT, SYNCING)
    repo.commit("base")
    baseline = tmp_path / "baseline.json"
    assert cli("baseline", "--output", str(baseline), cwd=repo.path).code == 0
    assert cli("review", "model_executor", "--show-unknown-frequency", "--baseline", str(baseline), cwd=repo.path).code == 0
    repo.write(HOT, SYNCING + "\n\ndef second(x):\n    return x.max().item()\n")
    assert cli("review", "model_executor", "--show-unknown-frequency", "--baseline", str(baseline), cwd=repo.path).code == 1
    repo.write(HOT, "def forward(x):\n    return x\n")
    stale = cli("review", "model_executor", "--show-unknown-frequency", "--baseline", str(baseline), cwd=repo.path)
    assert stale.code == 0 and "stale baseline entry" in stale.err


def test_perf_refuses_a_patch_without_a_repository(repo, cli):
    _base(repo)
    repo.write(HOT, SYNCING)
    result = cli("perf", "--diff-file", "-", cwd=repo.path, stdin=repo.git("diff"))
    assert result.code == 2 and "needs a git repository and a base commit" in result.err
