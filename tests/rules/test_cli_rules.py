"""``rltrefactor rules ...``: listing, checking, testing, docs and scaffolding."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rltrefactor.cli import main
from rltrefactor.errors import RuleLibraryError
from rltrefactor.authoring.docs import render_rules_markdown
from rltrefactor.library.loader import load_library
from rltrefactor.authoring.excerpt import cut_excerpt
from rltrefactor.authoring.scaffold import (
    TargetLibrary, fix_lines, next_version, parse_line_range, scaffold_rule,
)
from rltrefactor.types import Hunk
from rltrefactor.authoring.versioning import check_version_bump

from .test_validation import RULE, write_rules

ROOT = Path(__file__).resolve().parents[2]


def test_list_json_has_one_row_per_rule(capsys):
    assert main(["rules", "list", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == len(load_library().rules)
    assert set(rows[0]) == {
        "id", "area", "title", "status", "group", "severity", "confidence", "automated", "precision", "kept_default",
        "reports_on",
    }
    by_id = {row["id"]: row for row in rows}
    assert by_id["host-sync-in-hot-path"]["automated"] is True
    assert (by_id["host-sync-in-hot-path"]["reports_on"], by_id["string-state-comparison"]["reports_on"]) == (
        "all-code", "new-code")
    assert by_id["rng-state-on-resume"]["automated"] is False
    assert by_id["rng-state-on-resume"]["precision"] is None  # a checklist rule is not measured
    pedantic = [row for row in rows if row["group"] == "pedantic"]
    # Opt-in: measured under half true, or nothing found to judge outside the repository it was fitted to.
    judged = {row["id"]: sum(row["precision"][k] for k in ("true", "debatable", "false")) for row in pedantic}
    assert pedantic and all(row["precision"]["true"] * 2 < judged[row["id"]] or judged[row["id"]] == 0 for row in pedantic)


def test_show_prints_the_rule_and_rejects_unknown_ids(capsys):
    assert main(["rules", "show", "silent-import-fallback"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("silent-import-fallback\n") and "python: silent-import-fallback" in out
    assert main(["rules", "show", "silent-import-fallbak"]) == 2
    assert "unknown rule 'silent-import-fallbak' (did you mean 'silent-import-fallback'?)" in capsys.readouterr().err


def test_rules_test_passes_on_the_library_and_fails_on_a_noisy_rule(tmp_path, capsys):
    assert main(["rules", "test"]) == 0
    assert " validated; " in capsys.readouterr().out
    noisy = RULE.replace("values = x.items()", "values = x.item()")
    directory = write_rules(tmp_path, noisy)
    assert main(["rules", "test", "--rule-dir", str(directory), "sample-hazard"]) == 1
    out = capsys.readouterr().out
    assert "noisy     sample-hazard (good example at" in out and "reports line(s) 1 that must stay quiet" in out
    missing = RULE.replace('"$X.item()"', '"$X.items()"').replace("values = x.items()", "values = 1")
    directory = write_rules(tmp_path, missing)
    assert main(["rules", "test", "--rule-dir", str(directory), "sample-hazard"]) == 1
    assert "does not report line(s) 1 marked # expect" in capsys.readouterr().out


def test_check_reports_a_valid_library(capsys):
    assert main(["rules", "check"]) == 0
    assert capsys.readouterr().out.startswith(f"rule library {load_library().version}: ")


def test_generated_reference_is_up_to_date():
    rendered = render_rules_markdown(load_library())
    assert (ROOT / "docs" / "rules.md").read_text() == rendered, "run: rltrefactor rules docs -o docs/rules.md"
    for rule in load_library().rules:
        assert f'<a id="{rule.id}"></a>' in rendered
    for heading in ("What it does", "Why it matters", "Example", "Use instead", "Exceptions", "Fix safety", "References"):
        assert rendered.count(f"#### {heading}\n") == len(load_library().rules)
    assert "# expect" not in rendered


def _library_repo(repo, version: str) -> None:
    repo.write("rules/library.yaml", f"schema: 1\nversion: {version}\nretired-ids: []\n")
    repo.write("rules/lifecycle.yaml", "area: lifecycle\nrules:\n" + RULE)


def test_version_must_move_when_rules_change(repo):
    _library_repo(repo, "1.0.0")
    repo.commit("library")
    assert check_version_bump(str(repo.path), "HEAD") is None
    repo.write("rules/CHANGELOG.md", "notes\n")
    assert check_version_bump(str(repo.path), "HEAD") is None
    repo.write("rules/lifecycle.yaml", "area: lifecycle\nrules:\n" + RULE.replace("Sample hazard", "Renamed"))
    with pytest.raises(RuleLibraryError) as info:
        check_version_bump(str(repo.path), "HEAD")
    assert str(info.value) == (
        "rules/library.yaml:2: version: rules changed since HEAD (rules/lifecycle.yaml) but the library "
        "version is still 1.0.0 (was 1.0.0); bump it and add a CHANGELOG entry"
    )
    repo.write("rules/library.yaml", "schema: 1\nversion: 1.1.0\nretired-ids: []\n")
    assert check_version_bump(str(repo.path), "HEAD") == "1.0.0"


def test_check_base_on_the_command_line(repo, capsys):
    _library_repo(repo, "1.0.0")
    repo.commit("library")
    repo.write("rules/lifecycle.yaml", "area: lifecycle\nrules:\n" + RULE.replace("Sample hazard", "Renamed"))
    assert main(["rules", "check", "--base", "HEAD", "--repo", str(repo.path)]) == 2
    assert "but the library version is still 1.0.0" in capsys.readouterr().err


def test_line_ranges():
    assert parse_line_range("4-9") == (4, 9)
    assert parse_line_range("7") == (7, 7)
    with pytest.raises(Exception, match="--lines: invalid range '9-4'"):
        parse_line_range("9-4")


def test_fix_lines_follow_hunks():
    hunks = (Hunk(3, 2, 3, 3), Hunk(10, 1, 11, 0))  # two lines became three; one line deleted
    fix = fix_lines(hunks, 3, 5, "f.py")
    assert (sorted(fix.old), sorted(fix.new)) == ([3, 4], [3, 4, 5])
    deletion = fix_lines(hunks, 12, 12, "f.py")  # the deletion just before line 12: the lines beside it
    assert (sorted(deletion.old), sorted(deletion.new)) == ([10], [11, 12])
    with pytest.raises(Exception, match=r"^f.py: lines 7-8 hold no change of the commit \(it changes lines 3-5 there\)"):
        fix_lines(hunks, 7, 8, "f.py")


def test_next_version():
    assert next_version("1.3.0") == "1.4.0" and next_version("2.9.4") == "2.10.0"


def test_new_scaffolds_a_valid_entry_from_a_fix(repo, tmp_path, capsys):
    repo.write("worker/runner.py", "import torch\n\n\ndef step(self, x):\n    n = x.sum().item()\n    return n\n")
    repo.commit("before")
    repo.write("worker/runner.py", "import torch\n\n\ndef step(self, x):\n    n = x.sum()\n    return n\n")
    sha = repo.commit("keep the count on the device")
    entry = scaffold_rule(str(repo.path), sha, "worker/runner.py", (4, 6), rule_id="count-read-on-host",
                          area="device-residency", library=TargetLibrary("rules/library.yaml", "1.3.0")).entry
    assert "  - id: count-read-on-host\n" in entry
    assert '    title: "`.item()` called on the step path"  # TODO drafted from what the fix removed in `step`' in entry
    assert "    since: 1.4.0  # the next version of rules/library.yaml: bump it to this\n" in entry
    assert "        bad: |\n          def step(self, x):\n              n = x.sum().item()  # expect\n" in entry
    assert "        good: |\n          def step(self, x):\n              n = x.sum()\n" in entry
    target = tmp_path / "local" / "device-residency.yaml"
    target.parent.mkdir()
    assert main(["rules", "new", "--repo", str(repo.path), "--from-commit", sha, "--path", "worker/runner.py",
                 "--lines", "4-6", "--id", "count-read-on-host", "--output", str(target)]) == 0  # fmt: skip
    assert "added rule entry" in capsys.readouterr().out
    rule = load_library([str(target.parent)]).get("count-read-on-host")
    assert rule is not None and rule.automated and rule.area == "device-residency"
    assert rule.since == "0.1.0"  # the local library's first version: it had no library.yaml yet
    assert "local/library.yaml, written with this rule" in target.read_text()
    assert "version: 0.1.0\n" in (target.parent / "library.yaml").read_text()


def test_new_rejects_a_root_commit(repo):
    repo.write("a.py", "x = 1\n")
    sha = repo.commit("root")
    with pytest.raises(Exception, match="the commit has no parent"):
        scaffold_rule(str(repo.path), sha, "a.py", (1, 1))


def test_new_refuses_a_directory_as_output_in_one_line(repo, tmp_path, capsys):
    repo.write("worker/runner.py", "import torch\n\n\ndef step(self, x):\n    n = x.sum().item()\n    return n\n")
    repo.commit("before")
    repo.write("worker/runner.py", "import torch\n\n\ndef step(self, x):\n    n = x.sum()\n    return n\n")
    sha = repo.commit("keep the count on the device")
    assert main(["rules", "new", "--repo", str(repo.path), "--from-commit", sha, "--path", "worker/runner.py",
                 "--lines", "4-6", "--area", "device-residency", "--output", str(tmp_path)]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err == (f"rltrefactor: {tmp_path}: is a directory; pass a rules/<area>.yaml file, "
                   f"e.g. {tmp_path / 'device-residency.yaml'}\n")


@pytest.mark.parametrize("name, area", [("local.yaml", "device-residency"), ("lifecycle.yaml", "device-residency")])
def test_new_refuses_an_output_not_named_after_the_rule_s_area(repo, tmp_path, capsys, name, area):
    """The library loads a rule file only under its area's name: the draft would be refused later."""
    repo.write("worker/runner.py", "import torch\n\n\ndef step(self, x):\n    n = x.sum().item()\n    return n\n")
    repo.commit("before")
    repo.write("worker/runner.py", "import torch\n\n\ndef step(self, x):\n    n = x.sum()\n    return n\n")
    sha = repo.commit("keep the count on the device")
    target = tmp_path / "review" / name
    assert main(["rules", "new", "--repo", str(repo.path), "--from-commit", sha, "--path", "worker/runner.py",
                 "--lines", "4-6", "--area", area, "--output", str(target)]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err.startswith(f"rltrefactor: {target}: rule files are named after their area (got '{target.stem}'); "
                          f"pass {tmp_path / 'review' / 'device-residency.yaml'}, one of ")
    assert not target.exists() and err.count("\n") == 1


CACHE_BEFORE = """\
import torch


class Cache:
    def __init__(self, size):
        self.size = size
        self.buf = torch.empty(size).cuda()

    @torch.no_grad()
    def resize(self, new_size):
        self.buf = torch.empty(new_size)
        self.size = new_size


LIMIT = 4
"""


def test_examples_are_cut_at_the_changed_statements():
    # Lines 6-9 touch both methods: each is short, so shown whole, under the class line.
    cut = cut_excerpt(CACHE_BEFORE, range(6, 10), "cache.py")
    assert cut.startswith("import torch\n\n\nclass Cache:\n") and cut.endswith("        self.size = new_size\n")
    # Inside one method: that method, decorator included; the other folded to `...`.
    assert cut_excerpt(CACHE_BEFORE, [11], "cache.py") == (
        "import torch\n\n\nclass Cache:\n    ...\n\n    @torch.no_grad()\n    def resize(self, new_size):\n"
        "        self.buf = torch.empty(new_size)\n        self.size = new_size\n"
    )
    assert cut_excerpt(CACHE_BEFORE, [15], "cache.py") == "LIMIT = 4\n"  # a top-level statement as it is


def test_a_cut_without_code_or_that_cannot_parse_is_refused_in_one_line():
    with pytest.raises(Exception, match=r"^cache.py: lines 13-14 hold no statement; pick --lines that cover the fixed code$"):
        cut_excerpt(CACHE_BEFORE, range(13, 15), "cache.py")
    broken = CACHE_BEFORE + "def tail(:\n"
    with pytest.raises(Exception, match=r"^cache.py: lines 5-10 do not parse as Python on their own \(.*\); pick --lines"):
        cut_excerpt(broken, range(5, 11), "cache.py")


def _fixed_cache(repo):
    repo.write("pyproject.toml", '[tool.rltrefactor]\nrule-dirs = ["review/rules"]\n')
    repo.write("review/rules/library.yaml", "schema: 1\nversion: 0.3.0\nretired-ids: []\n")
    repo.write("engine/cache.py", CACHE_BEFORE)
    repo.commit("before")
    repo.write("engine/cache.py", CACHE_BEFORE.replace("torch.empty(size).cuda()", "torch.empty(size, device='cuda')"))
    return repo.commit("allocate the cache on the device directly")


def test_a_scaffolded_rule_joins_the_local_library_and_check_names_each_todo(repo, cli):
    sha = _fixed_cache(repo)
    target = "review/rules/device-residency.yaml"
    made = cli("rules", "new", "--from-commit", sha, "--path", "engine/cache.py", "--lines", "7-10",
               "--id", "cache-built-on-host", "--output", target, cwd=repo.path)  # fmt: skip
    assert made.code == 0, made.err
    text = (repo.path / target).read_text()
    assert "    since: 0.4.0  # the next version of review/rules/library.yaml: bump it to this\n" in text
    assert "        bad: |\n          import torch\n\n\n          class Cache:\n" in text
    assert "torch.empty(size).cuda()  # expect\n\n              ...\n" in text  # `resize` is folded
    problem_line = text.splitlines().index("    problem: TODO what goes wrong, and where it bit us") + 1
    checked = cli("rules", "check", cwd=repo.path)
    assert checked.code == 2
    assert checked.err == (
        f"rltrefactor: {target}:{problem_line}: rule 'cache-built-on-host': problem: still reads TODO "
        "(got 'TODO what goes wrong, and where it b...); write the text (docs/writing-rules.md says what "
        "each key holds)\n"
    )
    written = re.sub(r"(problem|preferred|exceptions|impact|fix): TODO ", r"\1: Written, ", text)
    (repo.path / target).write_text(written)
    assert cli("rules", "check", cwd=repo.path).code == 0
    tested = cli("rules", "test", "cache-built-on-host", cwd=repo.path)
    assert tested.code == 0, tested.out
