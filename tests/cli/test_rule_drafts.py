"""``rules new --from-commit``: a small rule drafted from the statements a fix changed."""

from __future__ import annotations

import re

import pytest

from rltrefactor.authoring.entry import mark_expected
from rltrefactor.authoring.excerpt import cut_excerpt
from rltrefactor.authoring.scaffold import TargetLibrary, fix_lines, scaffold_rule
from rltrefactor.errors import ChangeInputError
from rltrefactor.library.schema import RULE_ID
from rltrefactor.types import Hunk

LIBRARY = TargetLibrary("review/rules/library.yaml", "0.3.0")
SUBJECT = "\N{BUG} Fix: keep the EOS check on the device \N{SPARKLES}"


def _runner(done: str, finished: str) -> str:
    """A 240-line step function whose lines 125-126 hold ``done`` and ``finished``."""
    lines = ["import torch", "", "", "class ModelRunner:", "    def __init__(self, model):", "        self.model = model",
             "", "    def execute_model(self, batch, sampler):", '        """Run one step of the batch."""']  # fmt: skip
    lines += [f"        h{i} = batch.hidden[{i}] * 2" for i in range(112)]
    lines += ["        logits = self.model(batch)", "        if sampler.greedy:", "            next_ids = logits.argmax(dim=-1)"]
    lines += [f"            {done}", f"            {finished}", "            batch.mark(finished)"]
    lines += [f"        g{i} = batch.extra[{i}] + 1" for i in range(112)]
    return "\n".join([*lines, "        return logits", ""])


BEFORE = _runner("done = (next_ids == sampler.eos).any().item()", "finished = bool(done)")
AFTER = _runner("done = (next_ids == sampler.eos).any()", "finished = done")


def _local_library(repo):
    repo.write("pyproject.toml", '[tool.rltrefactor]\nrule-dirs = ["review/rules"]\n')
    repo.write("review/rules/library.yaml", "schema: 1\nversion: 0.3.0\nretired-ids: []\n")


def _fix(repo, before: str, after: str, subject: str = SUBJECT, path: str = "engine/runner.py") -> str:
    repo.write(path, before)
    repo.commit("before")
    repo.write(path, after)
    return repo.commit(subject)


def _examples(entry: str) -> tuple[str, str]:
    bad, good = re.search(r"\n        bad: \|\n(.*?)\n        good: \|\n(.*)", entry, re.S).groups()
    return bad, good


def test_a_two_line_fix_in_a_long_function_drafts_a_small_rule_that_passes_its_examples(repo, cli):
    _local_library(repo)
    sha = _fix(repo, BEFORE, AFTER)
    assert AFTER.splitlines()[124:126] == ["            done = (next_ids == sampler.eos).any()", "            finished = done"]
    target = "review/rules/device-residency.yaml"
    made = cli("rules", "new", "--from-commit", sha, "--path", "engine/runner.py", "--lines", "125-126",
               "--output", target, cwd=repo.path)  # fmt: skip
    assert made.code == 0, made.err
    assert made.out == (f"{target}: added rule entry item-call-on-step-path (pattern $X.item()); fill in the TODO "
                        "fields, then run 'rltrefactor rules check' and 'rltrefactor rules test item-call-on-step-path'\n")
    text = (repo.path / target).read_text()
    assert len(text.splitlines()) < 80 and text.isascii()
    assert "  - id: item-call-on-step-path\n" in text and RULE_ID.match("item-call-on-step-path")
    assert ('    title: "`.item()` called on the step path"  # TODO drafted from what the fix removed in '
            "`ModelRunner.execute_model` (`execute_model` runs per step): name the hazard\n") in text
    assert "EOS" not in text and "Fix" not in text  # the commit subject is not the title
    assert '    matcher:\n      pattern: "$X.item()"\n' in text and "manual: true" not in text
    bad, good = _examples(text)
    # The changed statements with their block, three lines either side and the headers above them.
    assert bad.splitlines()[:5] == [
        "          class ModelRunner:", "              ...", "", "              def execute_model(self, batch, sampler):",
        "                  ...",
    ]
    assert "                      done = (next_ids == sampler.eos).any().item()  # expect\n" in bad
    assert "                      done = (next_ids == sampler.eos).any()\n" in good and "# expect" not in good
    for example in (bad, good):
        assert "h109 =" not in example and "h110 =" in example and "g2 =" in example and "g3 =" not in example
        assert "Run one step" not in example and "return logits" not in example
    checked = cli("rules", "check", cwd=repo.path)
    assert checked.code == 2 and ": problem: still reads TODO" in checked.err
    (repo.path / target).write_text(re.sub(r"(problem|preferred|exceptions|impact|fix): TODO ", r"\1: Written, ", text))
    assert cli("rules", "check", cwd=repo.path).code == 0
    tested = cli("rules", "test", "item-call-on-step-path", cwd=repo.path)
    assert tested.code == 0 and ": 2 validated; " in tested.out, tested.out


def test_the_drafted_rule_reports_the_bad_example_and_not_the_good_one(repo, tmp_path):
    from rltrefactor.authoring.examples import run_examples
    from rltrefactor.library.loader import load_library

    sha = _fix(repo, BEFORE, AFTER)
    draft = scaffold_rule(str(repo.path), sha, "engine/runner.py", (125, 126), area="device-residency", library=LIBRARY)
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "device-residency.yaml").write_text("area: device-residency\nrules:\n" + draft.entry.split("\n", 1)[1])
    rule = load_library([str(rules)]).get(draft.rule_id)
    assert rule is not None and rule.automated
    outcomes = {outcome.example.kind: outcome for outcome in run_examples(rule)}
    bad_line = rule.examples[0].code.splitlines().index("            done = (next_ids == sampler.eos).any().item()  # expect")
    assert outcomes["bad"].reported == (bad_line + 1,) and outcomes["good"].reported == ()


def test_a_call_through_an_import_alias_is_drafted_by_its_qualified_name(repo):
    before = "import torch as th\n\n\ndef step(self, batch):\n    out = self.model(batch)\n    th.cuda.synchronize()\n    return out\n"
    sha = _fix(repo, before, before.replace("    th.cuda.synchronize()\n", ""), subject="drop the sync")
    draft = scaffold_rule(str(repo.path), sha, "engine/runner.py", (5, 6), library=LIBRARY)
    assert draft.pattern == "torch.cuda.synchronize()" and draft.rule_id == "synchronize-call-on-step-path"
    bad, good = _examples(draft.entry)
    assert bad.startswith("          import torch as th\n\n\n          def step(self, batch):\n")  # the import the example uses
    assert "    th.cuda.synchronize()  # expect\n" in bad and "synchronize" not in good


def test_a_call_whose_arguments_changed_is_drafted_with_metavariables_for_them(repo):
    before = "def load(self, batch, device):\n    ids = batch.ids.to(device)\n    return self.model(ids)\n"
    sha = _fix(repo, before, before.replace(".to(device)", ".to(device, non_blocking=True)"), subject="async copy")
    draft = scaffold_rule(str(repo.path), sha, "engine/runner.py", (2, 2), rule_id="blocking-copy", library=LIBRARY)
    assert draft.pattern == "$X.to($A)" and draft.rule_id == "blocking-copy"  # --id is kept
    assert '    title: "`.to()` called in a function"  # TODO drafted from what the fix removed in `load` (' in draft.entry


def test_a_call_the_fix_only_moved_gives_no_pattern_for_it(repo):
    before = "def step(self, xs, t):\n    for x in xs:\n        x.add_(t.item())\n    return xs\n"
    after = "def step(self, xs, t):\n    value = t.item()\n    for x in xs:\n        x.add_(value)\n    return xs\n"
    sha = _fix(repo, before, after, subject="read the value once")
    draft = scaffold_rule(str(repo.path), sha, "engine/runner.py", (2, 4), library=LIBRARY)
    assert draft.pattern is None  # the good example still calls `.item()`: a pattern for it would report there
    assert "    # No pattern drafted: the fix removes no call or attribute read that tells the bad\n" in draft.entry


def test_a_fix_of_a_string_only_drafts_a_checklist_rule_without_a_pattern(repo, capsys):
    from rltrefactor.cli import main

    before = "def step(self, x):\n    logger.info('stepping %s', x)\n    return x.to('cpu')\n"
    sha = _fix(repo, before, before.replace("'cpu'", "'cuda'"), subject="\N{ROCKET} Move the result to the device")
    draft = scaffold_rule(str(repo.path), sha, "engine/runner.py", (3, 3), library=LIBRARY)
    assert draft.pattern is None and draft.rule_id == f"new-rule-from-{sha[:7]}"
    assert "    manual: true\n" in draft.entry and "matcher:" not in draft.entry
    assert "# expect" not in "".join(_examples(draft.entry))
    assert "    # No pattern drafted: the fix changes only string or number values" in draft.entry
    # Titled from the value the bad code hard-codes, not from the commit subject.
    assert "    title: \"`'cpu'` hard-coded on the step path (the fix writes `'cuda'`)\"  # TODO drafted from the value" in draft.entry
    assert "Move the result" not in draft.entry
    assert draft.entry.isascii()
    (repo.path / "review").mkdir()
    assert main(["rules", "new", "--repo", str(repo.path), "--from-commit", sha, "--path", "engine/runner.py",
                 "--lines", "3", "--output", str(repo.path / "review" / "device-residency.yaml")]) == 0  # fmt: skip
    assert "(a checklist rule: no pattern drafted, see its comment)" in capsys.readouterr().out


def test_a_fix_of_comments_only_is_refused_in_one_line(repo, capsys):
    from rltrefactor.cli import main

    before = "def step(self, x):\n    # read the count\n    return x.item()\n"
    sha = _fix(repo, before, before.replace("# read the count", "# read the count (slow)"), subject="comment")
    assert main(["rules", "new", "--repo", str(repo.path), "--from-commit", sha, "--path", "engine/runner.py",
                 "--lines", "2"]) == 2  # fmt: skip
    assert capsys.readouterr().err == (
        f"rltrefactor: engine/runner.py at {sha}: lines 2 change only comments or layout; "
        "a rule is drafted from a fix that changes code: pick --lines that cover one\n"
    )


def test_lines_the_commit_did_not_change_are_refused_in_one_line(repo, capsys):
    from rltrefactor.cli import main

    sha = _fix(repo, BEFORE, AFTER)
    assert main(["rules", "new", "--repo", str(repo.path), "--from-commit", sha, "--path", "engine/runner.py",
                 "--lines", "10-20"]) == 2  # fmt: skip
    assert capsys.readouterr().err == (
        f"rltrefactor: engine/runner.py at {sha}: lines 10-20 hold no change of the commit "
        "(it changes lines 125-126 there); pick --lines that cover the fix\n"
    )


def test_fix_lines_beside_a_pure_addition_and_a_pure_deletion():
    added = fix_lines((Hunk(7, 0, 8, 2),), 8, 9, "f.py")  # two lines added after old line 7
    assert (sorted(added.old), sorted(added.new)) == ([7, 8], [8, 9])
    deleted = fix_lines((Hunk(5, 1, 4, 0),), 4, 5, "f.py")  # old line 5 deleted
    assert (sorted(deleted.old), sorted(deleted.new)) == ([5], [4, 5])


BLOCKS = """\
def run(self, items):
    total = 0
    for item in items:
        if item.skip:
            self.skipped += 1
            self.log(item)
            self.count(item)
            self.mark(item)
            self.trace(item)
            continue
        elif item.late:
            total -= 1
        else:
            total += item.value.item()
    try:
        self.flush()
    except OSError:
        pass
    finally:
        self.close()
    return total
"""


def test_a_long_block_is_cut_to_its_headers_and_the_changed_statement():
    cut = cut_excerpt(BLOCKS, [14], "f.py")  # in an 11-line `if` of a 12-line `for`, in a 21-line function
    assert cut == (
        "def run(self, items):\n    ...\n    for item in items:\n        if item.skip:\n            ...\n"
        "        elif item.late:\n            ...\n        else:\n            total += item.value.item()\n    ...\n"
    )
    assert cut_excerpt(BLOCKS, [3], "f.py") == "def run(self, items):\n    ...\n    for item in items:\n        ...\n    ...\n"
    assert cut_excerpt(BLOCKS, [16], "f.py").endswith(
        "    try:\n        self.flush()\n    except OSError:\n        pass\n    finally:\n        self.close()\n    return total\n"
    )


def test_the_expect_marker_keeps_a_comment_and_skips_a_line_inside_a_string():
    assert mark_expected("x.item()  # slow\ny = 1\n", (1,)) == "x.item()  # expect (was: slow)\ny = 1\n"
    assert mark_expected('s = """a\nb""".join(x.item())\n', (1,)) is None


def _comments_after_title(entry: str) -> str:
    """The comment lines between the ``title:`` line and ``status:``, joined."""
    lines = entry.split("    title: ", 1)[1].split("    status: ", 1)[0].splitlines()[1:]
    return " ".join(line.strip().removeprefix("# ") for line in lines)


LOADER = """\
import torch


class Loader:
    def __init__(self, size):
        self.size = size
        self.host = torch.zeros(size)

    def forward(self, batch):
        count = batch.sum().item()
        return self.host[:count]
"""


def test_lines_spanning_a_one_time_and_a_per_step_function_say_which_line_ran_where(repo, cli):
    fixed = LOADER.replace("self.size = size", "self.size = int(size)").replace(".sum().item()", ".sum()")
    sha = _fix(repo, LOADER, fixed, subject="Keep the count on the device", path="engine/loader.py")
    made = cli("rules", "new", "--from-commit", sha, "--path", "engine/loader.py", "--lines", "6-10", cwd=repo.path)
    assert made.code == 0, made.err
    # Line 6 (the first of --lines) is in `__init__`; the removed `.item()` ran per step, on line 10.
    assert "  - id: item-call-on-step-path\n" in made.out
    assert '    title: "`.item()` called on the step path"  # TODO drafted from what the fix removed in `Loader.forward`' in made.out
    where = _comments_after_title(made.out)
    assert where.startswith(f"Where the changed lines ran before the fix (numbered at {sha[:12]}^): line 6 in one-time code, "
                            "in `Loader.__init__` (")
    assert "; line 10 on the step path, in `Loader.forward` (" in where
    assert where.endswith("`applies-to: {runs: per-step}` would report only the step-path lines.")


def test_a_fix_that_only_adds_a_statement_is_titled_by_what_the_bad_code_lacks(repo):
    before = "def finish(self, req):\n    self.lock.acquire()\n    self.pending.pop(req.id)\n    return req\n"
    after = before.replace("    return req\n", "    self.lock.release()\n    return req\n")
    sha = _fix(repo, before, after, subject="\N{BUG} Fix the deadlock on finish")
    draft = scaffold_rule(str(repo.path), sha, "engine/runner.py", (4, 4), library=LIBRARY)
    assert draft.pattern is None
    assert '    title: "`self.lock.release()` missing in a function"  # TODO drafted from the statement the fix added' in draft.entry
    assert "deadlock" not in draft.entry
    assert _comments_after_title(draft.entry) == (
        f"Where the changed lines ran before the fix (numbered at {sha[:12]}^): lines 3-4 in a function, in `finish` "
        "(where it runs is not known)."
    )


def test_an_id_the_code_cannot_name_in_ascii_falls_back_to_the_commit(repo):
    before = "def \N{GREEK SMALL LETTER ALPHA}():\n    return \N{GREEK SMALL LETTER BETA}.\N{GREEK SMALL LETTER GAMMA}()\n"
    sha = _fix(repo, before, before.replace(".\N{GREEK SMALL LETTER GAMMA}()", ""), subject="no call")
    draft = scaffold_rule(str(repo.path), sha, "engine/runner.py", (2, 2), library=LIBRARY)
    assert RULE_ID.match(draft.rule_id) and draft.rule_id == f"new-rule-from-{sha[:7]}"
    with pytest.raises(ChangeInputError, match="--id: 'Bad_Id' is not a kebab-case hazard name"):
        scaffold_rule(str(repo.path), sha, "engine/runner.py", (2, 2), rule_id="Bad_Id", library=LIBRARY)


def test_a_deleted_statement_between_blank_lines_is_drafted_beside_the_code_around_it(repo):
    before = ("import torch\n\n\ndef warmup(model):\n    model.eval()\n\n\ntorch.backends.cudnn.benchmark = True\n\n\n"
              "def step(model, x):\n    return model(x)\n")  # fmt: skip
    sha = _fix(repo, before, before.replace("torch.backends.cudnn.benchmark = True\n\n\n", ""), subject="no global flag")
    draft = scaffold_rule(str(repo.path), sha, "engine/runner.py", (7, 8), library=LIBRARY)
    bad, good = _examples(draft.entry)
    assert "torch.backends.cudnn.benchmark = True  # expect" in bad
    assert "def warmup(model):" in good and "def step(model, x):" in good and "cudnn" not in good
    assert draft.pattern == "torch.backends.cudnn" and draft.rule_id == "cudnn-read-at-module-level"


def test_the_title_says_where_the_code_ran_from_the_code_not_the_function_name(repo):
    loop = "    def {name}(self, parts):\n        for part in parts:\n            self.out.append(part.item())\n"
    places = {"gather": "item-call-in-loop", "forward": "item-call-on-step-path", "__init__": "item-call-in-one-time-code"}
    for name, rule_id in places.items():
        before = "class Head:\n" + loop.format(name=name)
        sha = _fix(repo, before, before.replace("part.item()", "part"), subject="no sync")
        assert scaffold_rule(str(repo.path), sha, "engine/runner.py", (4, 4), library=LIBRARY).rule_id == rule_id


def test_only_a_checkout_of_rltrefactor_drafts_into_the_bundled_library(repo):
    from rltrefactor.authoring.target import target_library
    from rltrefactor.library.location import bundled_rules_dir

    bundled = bundled_rules_dir()
    if bundled.name == "rules":  # run from the source tree, whose rules/ is the bundled library
        own = target_library(str(bundled.parent), None, ())
        assert (own.label, own.path) == ("rules/library.yaml", None)
    local = target_library(str(repo.path), None, ())
    assert (local.exists, local.since, local.configured) == (False, "0.1.0", False)
    assert local.path == str(repo.path / "review" / "rules" / "library.yaml")
