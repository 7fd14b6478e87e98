"""Coverage selection and base/head site matching: pure functions, no torch."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from rltrefactor.perf.coverage import covered_by_declaration, covered_by_trace
from rltrefactor.perf.deltas import compare, detail
from rltrefactor.perf.protocol import CountRow

SRC = Path(__file__).resolve().parents[2] / "src"
TOUCHED = {"eng/runner.py": frozenset({"Runner.step"}), "eng/util.py": frozenset({"<module>"})}


def test_trace_selects_the_touched_function_and_code_nested_in_it():
    assert covered_by_trace([("eng/runner.py", "Runner.step")], TOUCHED) == ["eng/runner.py::Runner.step"]
    nested = [("eng/runner.py", "Runner.step.<locals>.pick")]
    assert covered_by_trace(nested, TOUCHED) == ["eng/runner.py::Runner.step"]


def test_trace_leaves_look_alike_names_alone():
    look_alikes = [("eng/runner.py", "Runner.step_async"), ("eng/other.py", "Runner.step"), ("eng/runner.py", "Runner")]
    assert covered_by_trace(look_alikes, TOUCHED) == []


def test_a_touched_module_line_is_covered_by_any_call_into_that_file():
    assert covered_by_trace([("eng/util.py", "helper")], TOUCHED) == ["eng/util.py::<module>"]


def test_declared_covers_accept_file_qualname_and_bare_qualname():
    assert covered_by_declaration(["eng/runner.py::Runner.step"], TOUCHED) == ["eng/runner.py::Runner.step"]
    assert covered_by_declaration(["Runner"], TOUCHED) == ["eng/runner.py::Runner.step"]
    assert covered_by_declaration(["eng/util.py"], TOUCHED) == ["eng/util.py::<module>"]
    assert covered_by_declaration(["eng/runner.py::Runner.other", "Sampler.step", "eng/x.py"], TOUCHED) == []


def _row(category, path, line, source, count=1, nbytes=0, op="aten.x", function="FeedForward.forward"):
    return CountRow(category, op, "", path, line, source, function, count, nbytes)


def test_moved_and_reindented_code_is_no_delta():
    base = [_row("sync", "a.py", 10, "n = x.item()")]
    head = [_row("sync", "a.py", 42, "n  =  x.item()   # moved")]
    assert compare("c", "cpu", base, head, {})[0] == []


def test_added_and_removed_sites_are_reported_at_their_sides_lines():
    base = [_row("sync", "a.py", 10, "n = x.item()")]
    head = [_row("alloc", "a.py", 12, "buf = torch.zeros(4)", nbytes=16)]
    deltas, labels = compare("c", "cpu", base, head, {})
    removed, added = sorted(deltas, key=lambda d: d.added)
    assert (removed.line, removed.base_count, removed.head_count, removed.added) == (10, 1, 0, False)
    assert (added.line, added.bytes_delta, added.added) == (12, 16, True)
    assert detail(added) == "+1 alloc at a.py:12 — buf = torch.zeros(4)"
    assert labels["c|alloc|a.py:12"] == "aten.x"


def test_a_renamed_file_is_compared_under_its_head_path():
    base = [_row("copy", "old.py", 3, "y = x.clone()")]
    head = [_row("copy", "new.py", 5, "y = x.clone()")]
    assert compare("c", "cpu", base, head, {"old.py": "new.py"})[0] == []


def test_importing_the_perf_package_does_not_import_torch():
    code = "import sys, rltrefactor.perf as p; p.micro_check; p.run_perf; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(SRC), "PATH": ""})
    assert out.stdout.strip() == "False"


def test_an_edited_line_doing_the_same_op_is_no_delta():
    base = [_row("copy", "a.py", 7, "self.out.copy_(tokens)", op="aten.copy_")]
    head = [_row("copy", "a.py", 9, "self.out.copy_(next_ids)", op="aten.copy_")]
    assert compare("c", "cpu", base, head, {})[0] == []


def test_a_second_site_of_the_same_op_is_still_an_addition():
    base = [_row("sync", "a.py", 7, "n = x.item()", op="aten._local_scalar_dense")]
    head = [_row("sync", "a.py", 7, "n = x.item()", op="aten._local_scalar_dense"),
            _row("sync", "a.py", 9, "m = y.item()", op="aten._local_scalar_dense")]
    (delta,) = compare("c", "cpu", base, head, {})[0]
    assert (delta.line, delta.base_count, delta.head_count) == (9, 0, 1)


def test_a_sync_replaced_by_another_statement_of_the_function_is_no_delta():
    base = [_row("sync", "a.py", 7, "done = bool(tokens[0] == -1)", op="aten._local_scalar_dense")]
    head = [_row("sync", "a.py", 9, "first = tokens[0].item()", op="aten._local_scalar_dense")]
    assert compare("c", "cpu", base, head, {})[0] == []


def test_a_different_statement_doing_the_same_op_in_another_function_is_a_removal_and_an_addition():
    base = [_row("sync", "a.py", 7, "done = bool(tokens[0] == -1)", op="aten._local_scalar_dense")]
    head = [_row("sync", "a.py", 9, "first = tokens[0].item()", op="aten._local_scalar_dense", function="Runner.pick")]
    deltas = compare("c", "cpu", base, head, {})[0]
    assert sorted((d.line, d.base_count, d.head_count) for d in deltas) == [(7, 1, 0), (9, 0, 1)]


def test_a_statement_edited_as_it_moved_into_a_helper_is_no_delta():
    base = [_row("alloc", "a.py", 11, "tokens = logits.argmax(-1)", op="aten.argmax")]
    head = [_row("alloc", "a.py", 17, "return logits.argmax(-1)", op="aten.argmax", function="Runner._pick")]
    assert compare("c", "cpu", base, head, {})[0] == []


def test_an_op_traded_for_another_on_the_same_statement_is_no_delta():
    base = [_row("alloc", "a.py", 5, "buf = make(4)", op="aten.zeros")]
    head = [_row("alloc", "a.py", 5, "buf = make(4)", op="aten.empty")]
    assert compare("c", "cpu", base, head, {})[0] == []


# What the runner measured for one statement of a feed-forward block, written on one line
# at base and reflowed across three at head (ops land on the line where each call starts).
_ONE_LINE = "return self.w2(F.silu(self.w1(x)) * self.w3(x))"
_FF_BASE = [_row("alloc", "ff.py", 13, _ONE_LINE, count=3, op="aten.addmm"),
            _row("alloc", "ff.py", 13, _ONE_LINE, op="aten.silu"),
            _row("alloc", "ff.py", 13, _ONE_LINE, op="aten.mul")]
_FF_HEAD = [_row("alloc", "ff.py", 17, "return self.w2(", op="aten.addmm"),
            _row("alloc", "ff.py", 18, "F.silu(self.w1(x))", op="aten.addmm"),
            _row("alloc", "ff.py", 18, "F.silu(self.w1(x))", op="aten.silu"),
            _row("alloc", "ff.py", 18, "F.silu(self.w1(x))", op="aten.mul"),
            _row("alloc", "ff.py", 19, "* self.w3(x)", op="aten.addmm")]


def test_a_statement_rewritten_across_lines_doing_the_same_ops_is_no_delta():
    assert compare("c", "cpu", _FF_BASE, _FF_HEAD, {})[0] == []


def test_beside_a_rewritten_statement_only_the_new_work_is_a_delta_at_its_line():
    added = _row("alloc", "ff.py", 16, "scratch = torch.zeros(2, 8)", count=2, op="aten.zeros")
    (delta,) = compare("c", "cpu", _FF_BASE, [added, *_FF_HEAD], {})[0]
    assert (delta.line, delta.base_count, delta.head_count, delta.source) == (16, 0, 2, "scratch = torch.zeros(2, 8)")


def test_a_rewritten_statement_doing_more_work_is_reported_for_that_work_only():
    extra = _row("alloc", "ff.py", 19, "* self.w3(x)", op="aten.relu")
    (delta,) = compare("c", "cpu", _FF_BASE, [*_FF_HEAD, extra], {})[0]
    assert (delta.line, delta.head_count - delta.base_count, delta.head_count) == (19, 1, 2)


# A feed-forward block as the runner measures it on the CPU: each Linear is an addmm.
_SPLIT_BASE = [_row("alloc", "ff.py", 10, "return self.w2(torch.relu(self.w1(x)))", count=2, op="aten.addmm"),
               _row("alloc", "ff.py", 10, "return self.w2(torch.relu(self.w1(x)))", op="aten.relu")]
_SPLIT_HEAD = [_row("alloc", "ff.py", 10, "activated = torch.relu(self.w1(x))", op="aten.addmm"),
               _row("alloc", "ff.py", 10, "activated = torch.relu(self.w1(x))", op="aten.relu"),
               _row("alloc", "ff.py", 11, "return self.w2(activated)", op="aten.addmm")]


def test_a_statement_split_in_two_is_no_delta():
    assert compare("c", "cpu", _SPLIT_BASE, _SPLIT_HEAD, {})[0] == []


def test_two_statements_merged_into_one_is_no_delta():
    assert compare("c", "cpu", _SPLIT_HEAD, _SPLIT_BASE, {})[0] == []


def test_statements_reordered_and_edited_are_no_delta():
    base = [_row("alloc", "a.py", 4, "q = self.wq(x)", op="aten.addmm"),
            _row("alloc", "a.py", 5, "k = self.wk(x)", op="aten.addmm"),
            _row("sync", "a.py", 6, "n = int(lengths.max())", op="aten._local_scalar_dense")]
    head = [_row("sync", "a.py", 4, "if int(lengths.max()) > self.limit:", op="aten._local_scalar_dense"),
            _row("alloc", "a.py", 6, "key_states = self.wk(hidden_states)", op="aten.addmm"),
            _row("alloc", "a.py", 7, "query_states = self.wq(hidden_states)", op="aten.addmm")]
    assert compare("c", "cpu", base, head, {})[0] == []


def test_a_scratch_allocation_beside_a_split_statement_is_exactly_its_own_delta():
    scratch = _row("alloc", "ff.py", 10, "scratch = torch.zeros(4, 8)", op="aten.zeros", nbytes=128)
    moved = [replace(row, line=row.line + 1) for row in _SPLIT_HEAD]
    deltas, labels = compare("c", "cpu", _SPLIT_BASE, [scratch, *moved], {})
    assert [(d.category, d.line, d.base_count, d.head_count, d.bytes_delta) for d in deltas] == [
        ("alloc", 10, 0, 1, 128)]
    assert labels == {"c|alloc|ff.py:10": "aten.zeros"}


def test_an_added_op_like_those_of_a_split_statement_lands_on_the_new_line():
    head = [_row("alloc", "ff.py", 10, "activated = torch.relu(self.w1(x))", op="aten.addmm"),
            _row("alloc", "ff.py", 10, "activated = torch.relu(self.w1(x))", op="aten.relu"),
            _row("alloc", "ff.py", 11, "gate = self.w3(x)", op="aten.addmm"),
            _row("alloc", "ff.py", 12, "return self.w2(activated)", op="aten.addmm")]
    (delta,) = compare("c", "cpu", _SPLIT_BASE, head, {})[0]
    assert (delta.line, delta.base_count, delta.head_count, delta.source) == (11, 0, 1, "gate = self.w3(x)")


def test_a_removal_on_a_statement_still_there_is_shown_at_its_head_line():
    base = [_row("sync", "a.py", 7, "n = x.item()", count=3, op="aten._local_scalar_dense")]
    head = [_row("sync", "a.py", 9, "n = x.item()", count=1, op="aten._local_scalar_dense")]
    (delta,) = compare("c", "cpu", base, head, {})[0]
    assert (delta.line, delta.base_count, delta.head_count, delta.added) == (9, 3, 1, False)


def test_the_same_ops_moved_to_another_function_are_a_removal_and_an_addition():
    head = [replace(row, function="FeedForward.gate") for row in _FF_HEAD]
    deltas = compare("c", "cpu", _FF_BASE, head, {})[0]
    assert sorted((d.line, d.base_count, d.head_count) for d in deltas) == [(13, 5, 0), (17, 0, 1), (18, 0, 3), (19, 0, 1)]


def _summary(*deltas):
    from rltrefactor.perf.records import PerfDeviceEvidence, PerfSummary

    return PerfSummary(device="cpu", checks=("c",), deltas=deltas,
                       device_evidence=PerfDeviceEvidence(ops={"c|sync|a.py:9": "aten.item"}))


def _delta(category, line, base, head, source="n = x.sum().item()"):
    from rltrefactor.perf.records import PerfDelta

    return PerfDelta("c", category, "a.py", line, source, base, head, "cpu")


def test_one_finding_per_line_for_its_costliest_category():
    from rltrefactor.perf import perf_findings

    findings = perf_findings(_summary(_delta("alloc", 9, 0, 1), _delta("sync", 9, 0, 1), _delta("copy", 12, 2, 1)))
    (finding,) = findings  # the removed copy is an improvement, not a finding
    assert (finding.rule_id, finding.area, finding.span.line, finding.severity) == ("perf-added-sync", "device-residency", 9, "error")
    assert finding.impact.startswith("+1 sync per call of c at a.py:9 (`n = x.sum().item()`; aten.item on cpu, base 0, head 1)")
    assert finding.evidence == "Also on this line: +1 alloc."  # one line of evidence; the impact is one sentence
    assert "Also on this line" not in finding.impact and finding.perf.also == (("alloc", 1),)
    assert finding.perf.detail == "+1 sync at a.py:9 — n = x.sum().item()"


def test_without_a_library_the_texts_are_the_bundled_library_entries():
    from rltrefactor.library.loader import load_library
    from rltrefactor.perf import perf_findings

    rule = next(r for r in load_library().rules if r.id == "perf-added-sync")
    (finding,) = perf_findings(_summary(_delta("sync", 9, 0, 2)))
    assert (finding.title, finding.severity) == (rule.title, rule.severity)
    assert finding.impact.startswith("+2 sync per call of c at a.py:9")


def test_rule_texts_come_from_the_library_when_given():
    from types import SimpleNamespace

    from rltrefactor.perf import perf_findings

    rule = SimpleNamespace(id="perf-added-sync", area="measured", title="T", severity="warning",
                           impact="$COUNT at $SITE", fix="F $CHECK")
    (finding,) = perf_findings(_summary(_delta("sync", 9, 0, 2)), library=SimpleNamespace(rules=(rule,)))
    assert (finding.area, finding.title, finding.severity) == ("measured", "T", "warning")
    assert (finding.impact, finding.fix) == ("+2 at a.py:9", "F c")


def test_a_measured_addition_confirms_the_static_finding_of_its_area_instead_of_a_second_record():
    from dataclasses import replace

    from rltrefactor.perf import confirm, perf_findings
    from rltrefactor.types import Finding, Span

    def static(line, path="a.py", area="device-residency", rule="host-sync-in-hot-path"):
        return Finding(rule, area, "t", "error", path, Span(line, 5, line + 1, 20), "i.", "f", "fp")

    measured = perf_findings(_summary(_delta("sync", 9, 0, 1), _delta("sync", 30, 0, 2)))
    other_area = static(30, area="interfaces", rule="positional-boolean-parameter")
    pre_existing = replace(static(30), status="pre-existing")
    found, drops = confirm([static(8), static(9, "b.py"), other_area, pre_existing, *measured])
    hit, other_file, other, old, lone = found
    assert hit.confirmed and hit.perf.category == "sync" and hit.perf.head_count == 1
    assert hit.impact == "i." and hit.evidence.startswith("Measured by the perf hook: +1 sync per call of `c` (base 0, head 1")
    assert [(d.finding.span.line, d.reason) for d in drops] == [(9, "confirms-finding")]
    # Another file, another area, or a finding the change did not add: the measurement stays a finding.
    assert not other_file.confirmed and not other.confirmed and not old.confirmed
    assert (lone.rule_id, lone.span.line) == ("perf-added-sync", 30)


def test_the_perf_report_lists_additions_and_improvements_and_serializes():
    import json

    from rltrefactor.report.perf import perf_to_dict, render_perf_text

    summary = _summary(_delta("sync", 9, 0, 1), _delta("copy", 4, 1, 0, source="y = x.cpu()"))
    text = render_perf_text(summary)
    assert "added (1):\n  +1 sync at a.py:9 — n = x.sum().item()  [c]" in text
    assert "removed (1), improvements:\n  -1 copy at a.py:4 — y = x.cpu()  [c]" in text
    data = json.loads(json.dumps(perf_to_dict(summary)))
    assert [d["added"] for d in data["deltas"]] == [True, False]


def test_the_perf_report_leaves_out_empty_sections_and_says_when_nothing_changed():
    from rltrefactor.report.perf import render_perf_text

    text = render_perf_text(_summary())
    assert "added (" not in text and "removed (" not in text
    assert "no added or removed syncs, copies or allocations" in text
