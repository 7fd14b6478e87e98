"""The PR summary: header, findings table with permalinks, dispositions, perf, checklist."""

from __future__ import annotations

from dataclasses import replace

from rltrefactor.report.links import tool_version
from rltrefactor.findings.finishing import manual_checklist as checklist_of
from rltrefactor.perf.records import PerfDelta, PerfProfileRow, PerfSummary
from rltrefactor.report.markdown import NOTHING_FOUND, render_markdown
from rltrefactor.context.recurrence import changes_recurrence
from rltrefactor.types import ChangedFile, FileError, Revision

GH = "git@github.com:acme/engine.git"
DOCS = "https://d.test/rules.md"


def _table_rows(text: str, header_start: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def test_header(rec):
    text = render_markdown(rec.result(rec.finding()), remote_url=GH, docs_url=DOCS)
    first, header = text.split("\n\n")[:2]
    assert first == "## rltrefactor review"
    assert "**origin/main...HEAD**" in header
    assert f"base `{rec.BASE_SHA[:12]}`" in header
    assert f"head [`{rec.HEAD_SHA[:12]}`](https://github.com/acme/engine/commit/{rec.HEAD_SHA})" in header
    assert "rule library 1.0.0" in header
    assert f"rltrefactor {tool_version()}" in header
    assert "1 rule run on 1 file." in header


def test_findings_table_with_github_permalinks(rec):
    text = render_markdown(rec.result(rec.finding()), remote_url=GH, docs_url=DOCS)
    assert "### Findings (1)" in text
    (row,) = _table_rows(text, "| Severity | Location | Rule | Impact | Fix |")
    link = f"https://github.com/acme/engine/blob/{rec.HEAD_SHA}/model_executor/runner.py#L10-L12"
    assert row == (
        f"| error | [`model_executor/runner.py:10`]({link}) "
        f"| [`host-sync-in-hot-path`]({DOCS}#host-sync-in-hot-path) Host synchronization on a hot path "
        "| `logits.argmax(-1).item()` blocks the host every step. | Keep the argmax on the device. |"
    )


def test_permalink_forms_in_summary(rec):
    res = rec.result(rec.finding())
    gitlab = render_markdown(res, remote_url="https://gitlab.com/g/engine.git")
    assert f"(https://gitlab.com/g/engine/-/blob/{rec.HEAD_SHA}/model_executor/runner.py#L10-12)" in gitlab
    ssh = render_markdown(res, remote_url="ssh://git@github.com/acme/engine.git")
    assert f"(https://github.com/acme/engine/blob/{rec.HEAD_SHA}/model_executor/runner.py#L10-L12)" in ssh
    for unknown in ("git@bitbucket.org:o/r.git", None):
        plain = render_markdown(res, remote_url=unknown, docs_url=DOCS)
        assert "| `model_executor/runner.py:10` |" in plain
        assert "/blob/" not in plain


def test_explicit_head_sha_wins_and_staged_changes_have_no_permalink(rec):
    staged = rec.with_change(rec.result(rec.finding()), head=Revision("index"), base=None)
    assert "/blob/" not in render_markdown(staged, remote_url=GH, docs_url=DOCS)
    assert "head staged changes (index)" in render_markdown(staged, remote_url=GH)
    pinned = render_markdown(staged, remote_url=GH, head_sha="f" * 40)
    assert f"/blob/{'f' * 40}/model_executor/runner.py#L10-L12" in pinned


def test_cells_escape_pipes_and_newlines(rec):
    f = rec.finding(impact="a | b\nc", fix="x|y\r\nz")
    (row,) = _table_rows(render_markdown(rec.result(f)), "| Severity |")
    assert "| a \\| b<br>c | x\\|y<br>z |" in row
    assert row.count(" | ") == 4  # five cells, none split


def test_nothing_found(rec):
    text = render_markdown(rec.result(), remote_url=GH)
    assert "### Findings\n\nNo applicable issue was found." in text
    assert "| Severity |" not in text


def test_suppressed_findings_are_dispositions_not_findings(rec):
    res = rec.result(rec.finding(line=5, suppressed=True, disposition="runs once\nper request"))
    text = render_markdown(res, remote_url=GH, docs_url=DOCS)
    assert NOTHING_FOUND in text
    link = f"https://github.com/acme/engine/blob/{rec.HEAD_SHA}/model_executor/runner.py#L5-L7"
    assert (
        f"### Dispositions\n\n- [`host-sync-in-hot-path`]({DOCS}#host-sync-in-hot-path) at "
        f"[`model_executor/runner.py:5`]({link}): not adopted: runs once per request"
    ) in text


def test_preexisting_findings_have_their_own_section(rec):
    res = rec.result(rec.finding(status="pre-existing"))
    hidden = render_markdown(res)
    assert NOTHING_FOUND in hidden and "Pre-existing" not in hidden
    shown = render_markdown(res, show_preexisting=True)
    assert NOTHING_FOUND in shown
    assert "### Pre-existing findings (1)" in shown


def _perf(**overrides) -> PerfSummary:
    fields = dict(
        device="cuda:0",
        checks=("perf_hooks.runner:check_step",),
        deltas=(
            PerfDelta("perf_hooks.runner:check_step", "sync", "engine/runner.py", 212, "n = t.item()", 0, 1, "cuda:0"),
            PerfDelta("perf_hooks.runner:check_step", "alloc", "engine/runner.py", 40, "buf = x.clone()", 2, 1,
                      "cuda:0", bytes_delta=-4096),
            PerfDelta("perf_hooks.runner:check_step", "copy", "", 0, "", 0, 1, "cuda:0"),
        ),
        wall_seconds=3.25,
        artifacts_dir=".rltrefactor/perf/2024",
        profile_rows=(PerfProfileRow("c", "aten::item", "profiled", 0, 1, 0.0, 2.5, 0.0, 0.0),
                      PerfProfileRow("c", "aten::copy_", "profiled", 3, 3, 1.0, 1.0, 0.0, 0.0)),
    )
    fields.update(overrides)
    return PerfSummary(**fields)


def test_perf_table(rec):
    text = render_markdown(rec.result(perf=_perf()), remote_url=GH)
    assert "### Perf\n\n1 micro-check ran at base and head on `cuda:0` (3.2 s)." in text
    rows = _table_rows(text, "| Check | Category | Site | Base | Head | Delta | Device |")
    added_link = f"https://github.com/acme/engine/blob/{rec.HEAD_SHA}/engine/runner.py#L212"
    removed_link = f"https://github.com/acme/engine/blob/{rec.BASE_SHA}/engine/runner.py#L40"
    assert rows == [
        f"| `perf_hooks.runner:check_step` | sync | [`engine/runner.py:212`]({added_link}) `n = t.item()` "
        "| 0 | 1 | +1 | cuda:0 |",
        f"| `perf_hooks.runner:check_step` | alloc | [`engine/runner.py:40`]({removed_link}) `buf = x.clone()` "
        "| 2 | 1 | -1 (-4,096 B) | cuda:0 |",
        "| `perf_hooks.runner:check_step` | copy | (outside the repository) | 0 | 1 | +1 | cuda:0 |",
    ]
    assert "not performance results" in text
    assert _table_rows(text, "| check | operator | label | base_count | head_count |") == [
        "| c | aten::item | profiled | 0 | 1 | 0.0 | 2.5 | 0.0 | 0.0 |", "| c | aten::copy_ | profiled | 3 | 3 | 1.0 | 1.0 | 0.0 | 0.0 |"]
    assert "Profile artifacts: `.rltrefactor/perf/2024`" in text


def test_perf_without_deltas_and_with_errors(rec):
    perf = _perf(deltas=(), profile_rows=(), artifacts_dir=None,
                 errors=(FileError("perf_hooks.runner:check_step", "timed out after 60 s"),))
    text = render_markdown(rec.result(perf=perf))
    assert "No device synchronization, copy or allocation was added or removed." in text
    assert "- `perf_hooks.runner:check_step`: timed out after 60 s" in text
    assert "Profiled operator comparison" not in text and "Profile artifacts" not in text


def test_no_perf_section_without_perf(rec):
    assert "### Perf" not in render_markdown(rec.result(rec.finding()))


MANUAL_RULES = (
    ("loop-exit-per-depth", "loop-semantics"),
    ("cache-freed-on-abort", "lifecycle"),
    ("device-owner-documented", "device-residency"),
    ("config-names-read", "configuration-readability"),
)


def manual_checklist(res, *, looped=False):
    return checklist_of(res.findings, res.change, res.rules_run, looped=looped)


def with_checklist(res, *, looped=False):
    """The result as the review hands it over: its checklist computed."""
    return replace(res, checklist=manual_checklist(res, looped=looped))


def test_manual_checklist_lists_the_areas_of_the_findings_only(rec):
    rules = (rec.rule(), *(rec.manual_rule(rule_id, area) for rule_id, area in MANUAL_RULES))
    res = with_checklist(rec.result(rec.finding(), rules=rules))  # a device-residency finding
    assert [r.id for r in res.checklist] == ["device-owner-documented"]
    text = render_markdown(res, docs_url=DOCS)
    assert "- [ ] **Check by hand** [`device-owner-documented`]" in text and "loop-exit-per-depth" not in text
    assert "`--checklist all` lists every area" in text
    every = render_markdown(res, docs_url=DOCS, all_manual=True)
    assert all(f"[`{rule_id}`]({DOCS}#{rule_id}) ({area})" in every for rule_id, area in MANUAL_RULES)


def test_loop_semantics_items_need_code_of_a_looped_engine(rec):
    rules = (rec.rule(), *(rec.manual_rule(rule_id, area) for rule_id, area in MANUAL_RULES))
    res = rec.result(rules=rules)  # no finding
    assert manual_checklist(res) == ()
    assert [r.id for r in manual_checklist(res, looped=True)] == ["loop-exit-per-depth"]
    # Only a changed Python file can be the code of a looped engine.
    yaml_only = rec.with_change(res, files=(ChangedFile("rules/x.yaml", "modified"),))
    assert manual_checklist(yaml_only, looped=True) == ()
    assert "### Manual checklist" not in render_markdown(with_checklist(yaml_only, looped=True))


def test_looped_engine_evidence_is_a_recurrence_not_a_name():
    assert changes_recurrence([("def run(self, h, n):\n    for depth in range(n):\n        h = self.block(h)\n    return h\n", None)])
    assert not changes_recurrence([("exit_depth = positions\nloop_idx = 1\nmodel = Model(depth=32, num_loops=4)\n", None)])
    assert not changes_recurrence([("loop = asyncio.get_event_loop()\nfor x in xs:\n    pass\n", None)])


def test_file_errors_listed(rec):
    text = render_markdown(rec.result(errors=(FileError("engine/x.py", "syntax error", line=3),)))
    assert "### Files not reviewed\n\n- `engine/x.py:3`: syntax error" in text


def test_section_order_and_purity(rec):
    res = with_checklist(rec.result(
        rec.finding(),
        rec.finding(line=40, suppressed=True, disposition="ok"),
        rules=(rec.rule(), rec.manual_rule("m", "device-residency")),
        perf=_perf(),
    ))
    text = render_markdown(res, remote_url=GH)
    assert text == render_markdown(res, remote_url=GH)
    headings = [line for line in text.splitlines() if line.startswith("### ")]
    assert headings == ["### Findings (1)", "### Dispositions", "### Perf", "### Manual checklist", "### Rules"]
    assert text.endswith("\n") and not text.endswith("\n\n")


def test_confirmed_findings_are_marked(rec):
    text = render_markdown(rec.result(replace(rec.finding(), confirmed=True)))
    assert "| error · confirmed by perf |" in text


def test_without_a_docs_url_rules_are_not_linked_and_their_texts_are_folded_in(rec):
    rules = (rec.rule(), rec.manual_rule("cache-freed-on-abort", "device-residency", title="Cache freed on abort"))
    res = replace(rec.result(rec.finding(), rules=rules), checklist=rules[1:])
    text = render_markdown(res, remote_url=GH)
    assert "| `host-sync-in-hot-path` Host synchronization on a hot path |" in text
    assert "- [ ] **Cache freed on abort** `cache-freed-on-abort` (device-residency)" in text
    assert "#host-sync-in-hot-path" not in text and "rules.md" not in text
    rules_section = text.split("### Rules\n\n", 1)[1]
    assert rules_section.startswith(
        "<details><summary><code>host-sync-in-hot-path</code> Host synchronization on a hot path</summary>\n\n"
        "**Problem.** `.item()` blocks the host until the device queue drains.\n\n"
        "**Preferred approach.** Keep values on the device.\n\n"
        "**Reasonable exceptions.** Once per request, outside the step loop.\n\n"
        "**References.** https://pytorch.org/docs/stable/notes/cuda.html\n\n</details>\n\n"
        "<details><summary><code>cache-freed-on-abort</code> Cache freed on abort</summary>"
    )
    linked = render_markdown(res, remote_url=GH, docs_url=DOCS)
    assert f"[`host-sync-in-hot-path`]({DOCS}#host-sync-in-hot-path)" in linked and "### Rules" not in linked


def test_perf_tests_left_out_and_unstable_lines_are_listed(rec):
    from rltrefactor.perf.records import PerfTestsRun, PerfUnstableLine

    tests = PerfTestsRun(
        selected=("tests/test_runner.py::test_step", "tests/test_runner.py::test_decode"),
        left_out={"tests/test_runner.py::test_decode": "failed at base: AssertionError"},
        unstable=(PerfUnstableLine("tests/test_runner.py::test_step", "head", "alloc", "engine/runner.py", 88,
                                   "buf = torch.empty(n)", (2, 3)),),
        traced=True,
    )
    text = render_markdown(rec.result(perf=_perf(tests=tests)), remote_url=GH)
    assert "#### Tests\n\n2 tests reach the changed functions (traced at the head)." in text
    assert "- `tests/test_runner.py::test_decode`: failed at base: AssertionError" in text
    head_link = f"https://github.com/acme/engine/blob/{rec.HEAD_SHA}/engine/runner.py#L88"
    assert f"- [`engine/runner.py:88`]({head_link}) alloc 2 then 3 in `tests/test_runner.py::test_step`" in text
    assert "#### Tests" not in render_markdown(rec.result(perf=_perf()))
