"""What a new user hits first: errors that blame the right thing, gates, and outputs."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOT = "model_executor/runner.py"
CLEAN = "import torch\n\n\ndef forward(x):\n    return x * 2\n"
SYNCING = "import torch\n\n\ndef forward(x):\n    y = x * 2\n    return y.sum().item()\n"


def _base(repo):
    repo.write(HOT, CLEAN)
    return repo.commit("base")


def _one_line(result) -> str:
    assert result.code == 2 and "Traceback" not in result.err, result.err
    (line,) = result.err.strip().splitlines()
    return line


def test_output_to_a_directory_is_a_usage_error(repo, cli, tmp_path):
    _base(repo)
    line = _one_line(cli("review", "--diff", "HEAD", "-o", str(tmp_path), cwd=repo.path))
    assert line == f"rltrefactor: {tmp_path}: cannot write: is a directory; give a file name, e.g. {tmp_path}/report.txt"


def test_rules_docs_output_to_a_directory_is_a_usage_error(repo, cli, tmp_path):
    line = _one_line(cli("rules", "docs", "-o", str(tmp_path), cwd=repo.path))
    assert line.endswith(f"{tmp_path}: cannot write: is a directory; give a file name, e.g. {tmp_path}/report.txt")


def test_select_typo_on_the_command_line_blames_the_flag_and_suggests(repo, cli):
    _base(repo)
    repo.write("pyproject.toml", "[tool.rltrefactor]\nfail-on = 'error'\n")
    line = _one_line(cli("review", "--diff", "HEAD", "--select", "host-synk", cwd=repo.path))
    assert line == "rltrefactor: --select: unknown rule or area 'host-synk'; did you mean 'host-sync-in-hot-path'?"
    line = _one_line(cli("review", "--diff", "HEAD", "--ignore", "device-residncy", cwd=repo.path))
    assert line == "rltrefactor: --ignore: unknown rule or area 'device-residncy'; did you mean 'device-residency'?"


def test_select_typo_in_pyproject_names_the_file_and_line_and_suggests(repo, cli):
    _base(repo)
    repo.write("pyproject.toml", "[tool.rltrefactor]\nfail-on = 'error'\nselect = ['host-synk']\n")
    line = _one_line(cli("review", "--diff", "HEAD", cwd=repo.path))
    assert line.endswith(
        "pyproject.toml:3: [tool.rltrefactor] select: unknown rule or area 'host-synk'; "
        "did you mean 'host-sync-in-hot-path'?"
    )


@pytest.mark.parametrize(
    "table, message",
    [
        ('[tool.rltrefactor.per-path-ignores]\n"legacy/**" = ["interface"]\n',
         "pyproject.toml:3: [tool.rltrefactor.per-path-ignores] 'legacy/**': unknown rule or area 'interface'; "
         "did you mean 'interfaces'?"),
        ('[tool.rltrefactor.rule-options.abbreviated-identifer]\nabbreviations = { rid = "request_id" }\n',
         "pyproject.toml:2: [tool.rltrefactor.rule-options.abbreviated-identifer]: unknown rule "
         "'abbreviated-identifer' (did you mean 'abbreviated-identifier'?); list the ids with 'rltrefactor rules list'"),
        ('[tool.rltrefactor.rule-options.abbreviated-identifier]\nabbrevations = { rid = "request_id" }\n',
         "pyproject.toml:3: [tool.rltrefactor.rule-options.abbreviated-identifier]: matcher 'abbreviated-new-name': "
         "unknown option 'abbrevations' (did you mean 'abbreviations'?); known options: abbreviations"),
        ('[tool.rltrefactor.rule-options.abbreviated-identifier]\nabbreviations = ["rid"]\n',
         "pyproject.toml:3: [tool.rltrefactor.rule-options.abbreviated-identifier]: matcher 'abbreviated-new-name': "
         "option 'abbreviations' must be a mapping of strings to strings (got ['rid']); fix the value"),
        ('[tool.rltrefactor.rule-options.host-sync-in-hot-path]\nallowed = ["x"]\n',
         "pyproject.toml:2: [tool.rltrefactor.rule-options.host-sync-in-hot-path]: "
         "rule 'host-sync-in-hot-path' takes no options; delete the table"),
    ],
)
def test_rule_names_and_options_in_pyproject_are_checked_there(repo, cli, table, message):
    _base(repo)
    repo.write("pyproject.toml", "[tool.rltrefactor]\n" + table)
    line = _one_line(cli("review", "--diff", "HEAD", cwd=repo.path))
    assert line.endswith(message) and "rules/" not in line


def test_rule_options_from_pyproject_reach_the_matcher(repo, cli):
    _base(repo)
    repo.write("pyproject.toml", '[tool.rltrefactor]\nselect = ["pedantic"]\n\n'
               '[tool.rltrefactor.rule-options.abbreviated-identifier]\nabbreviations = { xq = "query" }\n')
    repo.write(HOT, CLEAN.replace("    return x * 2\n", "    xq = x * 2\n    return xq\n"))
    found = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path).json()["findings"]
    assert [f["rule"] for f in found] == ["abbreviated-identifier"]


@pytest.mark.parametrize("command", [("review",), ("rules", "list"), ("baseline",)])
def test_unknown_option_points_to_the_subcommand_help(repo, cli, command):
    line = _one_line(cli(*command, "--formt", cwd=repo.path))
    where = " ".join(command)
    hint = "; did you mean --format?" if command != ("baseline",) else ""
    assert line == f"rltrefactor {where}: error: unrecognized arguments: --formt{hint} (see rltrefactor {where} --help)"


BROKEN = {
    "syntax": b"def f(:\n    pass\n",
    "encoding": b"x = '\xff\xfe'\n",
    "size": b"x = 1\n" * (2 * 1024 * 1024 // 6 + 1),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_an_unreviewable_file_is_counted_apart_and_can_fail_the_run(repo, cli, kind):
    _base(repo)
    repo.write("model_executor/broken.py", BROKEN[kind])
    result = cli("review", "--diff", "HEAD", cwd=repo.path)
    assert result.code == 0
    assert "0 files reviewed · 1 file could not be fully reviewed ·" in result.out.splitlines()[-1]
    document = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path).json()
    assert document["reviewed"]["unreviewable"] == ["model_executor/broken.py"]
    assert document["summary"]["unreviewable"] == 1
    (error,) = document["errors"]
    assert error["path"] == "model_executor/broken.py"
    gated = cli("review", "--diff", "HEAD", "--fail-on-unreviewable", cwd=repo.path)
    assert gated.code == 1 and "could not be fully reviewed (fails the run)" in gated.out
    repo.write("pyproject.toml", "[tool.rltrefactor]\nfail-on-unreviewable = true\n")
    assert cli("review", "--diff", "HEAD", cwd=repo.path).code == 1


def test_a_partly_parsed_file_still_reports_and_is_counted_apart(repo, cli):
    _base(repo)
    repo.write(HOT, SYNCING + "\n\ndef broken(:\n    pass\n")
    document = cli("review", "--diff", "HEAD", "--format", "json", cwd=repo.path).json()
    assert [(f["rule"], f["line"]) for f in document["findings"]] == [("host-sync-in-hot-path", 6)]
    assert document["reviewed"]["files"] == [HOT] and document["reviewed"]["unreviewable"] == [HOT]


def test_reviewable_files_do_not_trip_the_unreviewable_gate(repo, cli):
    _base(repo)
    repo.write(HOT, CLEAN + "\n\ndef other():\n    return 1\n")
    result = cli("review", "--diff", "HEAD", "--fail-on-unreviewable", cwd=repo.path)
    assert result.code == 0 and "1 file reviewed ·" in result.out and "could not" not in result.out


def test_output_files_respect_the_umask(repo, cli, tmp_path):
    repo.write(HOT, SYNCING)
    repo.commit("base")
    baseline, body = tmp_path / "baseline.json", tmp_path / "body.md"
    assert cli("baseline", "-o", str(baseline), cwd=repo.path).code == 0
    cli("review", "model_executor", "--format", "markdown", "--update-pr-body", str(body), cwd=repo.path)
    umask = os.umask(0)
    os.umask(umask)
    for path in (baseline, body):
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, path
    os.chmod(body, 0o600)  # an existing file keeps its mode
    cli("review", "model_executor", "--format", "markdown", "--update-pr-body", str(body), cwd=repo.path)
    assert stat.S_IMODE(body.stat().st_mode) == 0o600


def test_baseline_default_file_is_the_documented_one(repo, cli):
    repo.write(HOT, SYNCING)
    repo.commit("base")
    result = cli("baseline", cwd=repo.path)
    assert result.code == 0 and (repo.path / ".rltrefactor-baseline.json").is_file()
    assert "--baseline .rltrefactor-baseline.json" in (ROOT / "README.md").read_text()


def test_stale_baseline_entries_are_one_line_and_listed_in_json(repo, cli, tmp_path):
    repo.write(HOT, SYNCING + "\n\ndef second(x):\n    return x.max().item()\n")
    repo.commit("base")
    baseline = tmp_path / "baseline.json"
    cli("baseline", "-o", str(baseline), cwd=repo.path)
    repo.write(HOT, CLEAN)
    for args in ((), ("-q",)):
        result = cli("review", "model_executor", "--baseline", str(baseline), *args, cwd=repo.path)
        assert result.code == 0
        assert [line for line in result.err.strip().splitlines() if "baseline" in line] == [
            f"rltrefactor: 2 stale baseline entries (recorded findings that no longer occur; --format json lists them); "
            f"run 'rltrefactor baseline --update' to drop them from {baseline}"
        ]
    document = cli("review", "model_executor", "--baseline", str(baseline), "--format", "json", cwd=repo.path).json()
    assert document["baseline"]["matched"] == 0
    assert sorted(e["definition"] for e in document["baseline"]["stale"]) == ["forward", "second"]


def test_preexisting_hint_names_the_flag_only_while_hidden(repo, cli):
    repo.write(HOT, SYNCING)
    base = repo.commit("base")
    repo.write(HOT, SYNCING.replace("    y = x * 2\n", "    y = x * 2\n    with torch.no_grad():\n").replace("    return y", "        return y"))
    head = repo.commit("move")
    hidden = cli("review", "--diff", f"{base}..{head}", cwd=repo.path).out.splitlines()[-1]
    assert "1 pre-existing (--show-preexisting)" in hidden
    shown = cli("review", "--diff", f"{base}..{head}", "--show-preexisting", cwd=repo.path).out.splitlines()[-1]
    assert "1 pre-existing ·" in shown and "--show-preexisting" not in shown


def test_rules_list_has_a_header_and_rules_test_says_what_it_validated(repo, cli):
    listing = cli("rules", "list", cwd=repo.path).out.splitlines()
    assert listing[0].split() == ["ID", "AREA", "STATUS", "GROUP", "SEVERITY", "CHECK", "TRUE", "TITLE"]
    assert listing[1].split()[:4] == ["foreign-private-state-write", "responsibilities-state", "active", "pedantic"]
    tested = cli("rules", "test", "host-sync-in-hot-path", cwd=repo.path)
    assert tested.out.startswith(
        "examples of 1 rule(s), each run through its matcher (a bad example must report exactly its marked lines, "
        "a good one nothing): "
    )


def test_manual_checklist_follows_the_change(repo, cli):
    _base(repo)
    repo.write(HOT, SYNCING)
    plain = cli("review", "--diff", "HEAD", "--format", "markdown", cwd=repo.path).out
    assert "staging-buffer-not-persistent" in plain  # the area of the finding
    assert "per-depth-kv-validity" not in plain and "partial-failure-leaves-state" not in plain
    every = cli("review", "--diff", "HEAD", "--format", "markdown", "--checklist", "all", cwd=repo.path).out
    assert "per-depth-kv-validity" in every and "partial-failure-leaves-state" in every
    repo.write(HOT, SYNCING.replace("    y = x * 2\n", "    for depth in range(num_loops):\n        x = block(x)\n    y = x\n"))
    looped = cli("review", "--diff", "HEAD", "--format", "markdown", cwd=repo.path).out
    assert "per-depth-kv-validity" in looped and "partial-failure-leaves-state" not in looped




def test_declared_python_is_one_the_code_runs_on_and_the_readme_agrees():
    import re
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    minimum = tuple(int(part) for part in re.fullmatch(r">=(\d+)\.(\d+)", declared).groups())
    sources = [p.read_text() for p in (ROOT / "src" / "rltrefactor").rglob("*.py")]
    if any(re.search(r"^\s*import tomllib", text, re.M) for text in sources):
        assert minimum >= (3, 11), "the standard library's tomllib needs Python 3.11"
    assert f"Python ≥ {minimum[0]}.{minimum[1]}," in (ROOT / "README.md").read_text()


def test_output_to_a_pipe_or_through_a_link_writes_there_and_replaces_neither(repo, cli, tmp_path):
    import threading

    repo.write(HOT, SYNCING)
    repo.commit("base")
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)  # a device or pipe (``-o /dev/null``) is written to, never replaced by a file
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()), daemon=True)
    reader.start()
    result = cli("review", "model_executor", "--format", "json", "--show-unknown-frequency", "-o", str(pipe), cwd=repo.path)
    reader.join(timeout=60)
    assert result.code == 1 and stat.S_ISFIFO(pipe.lstat().st_mode)
    assert b'"host-sync-in-hot-path"' in received[0]
    target, link = tmp_path / "report.json", tmp_path / "latest.json"
    target.write_text("old")
    link.symlink_to(target)
    assert cli("review", "model_executor", "--format", "json", "--show-unknown-frequency", "-o", str(link), cwd=repo.path).code == 1
    assert link.is_symlink() and "host-sync-in-hot-path" in target.read_text()
