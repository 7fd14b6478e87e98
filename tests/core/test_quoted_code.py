"""Code quoted in a finding's impact and fix: one line, never a wrapped expression with
its comments."""

from __future__ import annotations

from rltrefactor.config import Config
from rltrefactor.matching.engine import Engine, select_rules
from rltrefactor.library.loader import load_library
try:
    from rltrefactor.matching.rule_findings import quoted
except ImportError:
    quoted = None


def test_wrapped_code_is_joined_without_its_comments():
    assert quoted("torch.tensor(\n    [r.pos for r in reqs],  # positions\n    device=dev,\n)") == (
        "torch.tensor([r.pos for r in reqs], device=dev)"
    )
    assert quoted('f("a # not a comment",\n  c)  # a comment') == 'f("a # not a comment", c)'
    assert quoted("x.sum()") == "x.sum()"  # one line stays as written


def test_long_wrapped_code_is_quoted_by_its_first_line():
    code = "torch.tensor(\n    [request.position_in_batch for request in self.running],  # why\n    device=self.device,\n)"
    assert quoted(code) == "torch.tensor(…"


def test_the_impact_of_a_finding_on_wrapped_code_reads_one_line():
    library = load_library()
    config = Config(select=("host-sync-in-hot-path",))
    engine = Engine(select_rules(library, config), config, frozenset(r.id for r in library.rules))
    text = "def forward(x):\n    return (\n        x.sum()  # total\n        + x.mean()\n    ).item()\n"
    (finding,) = engine.review_file("model_executor/runner.py", text).findings
    assert finding.impact.startswith("`(x.sum() + x.mean())` is copied to the host here"), finding.impact
    assert "\n" not in finding.impact and "# total" not in finding.impact
