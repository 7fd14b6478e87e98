"""Guards the prefilters with counts, never timings: how much of real code reaches LibCST.

The corpus is torch's own ``nn/modules`` (installed with the test dependencies): code
the rules should mostly have nothing to say about. If a rule loses its prefilter, or a
token becomes too broad, the share of lines parsed jumps and this fails.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rltrefactor.config import Config
from rltrefactor.matching.engine import Engine, select_rules
from rltrefactor.library.loader import load_library

torch = pytest.importorskip("torch")
CORPUS = Path(torch.__file__).parent / "nn" / "modules"
# Measured with library 1.4.0: 80 % of the lines are parsed. Rules that depend on where
# code runs (device residency, hot branches, loop depths) now apply wherever code may
# run per step, and most of nn/modules is ``forward`` code; without them, 31 % (1.3.0:
# 29 %, 56 % before rules said how much of a function they read). The bounds leave room for new rules, not for a rule without a precise
# prefilter (that parses 100 %) or one that reads whole functions where it need not.
MAX_PARSED_SHARE = 0.85
MAX_PARSED_SHARE_WITHOUT_STEP_RULES = 0.4


def _engine(config: Config) -> Engine:
    library = load_library()
    return Engine(select_rules(library, config), config, frozenset(r.id for r in library.rules))


def _share(engine: Engine) -> tuple[float, int]:
    total = parsed = skipped_files = 0
    for path in sorted(CORPUS.glob("*.py")):
        text = path.read_text()
        outcome = engine.review_file(os.path.relpath(path, CORPUS.parents[2]), text)
        total += text.count("\n")
        parsed += outcome.parsed_lines
        skipped_files += not outcome.parsed
    return parsed / total, skipped_files


def test_most_lines_of_ordinary_code_never_reach_libcst():
    share, skipped_files = _share(_engine(Config()))
    assert share <= MAX_PARSED_SHARE
    assert skipped_files >= 1


def test_rules_that_do_not_depend_on_where_code_runs_parse_little():
    """Per-step rules add tokens, so the share must fall without them: proof the count is live."""
    step_rules = tuple(rule.id for rule in load_library().rules if rule.applicability.per_step)
    without, skipped_files = _share(_engine(Config(ignore=step_rules)))
    assert without <= MAX_PARSED_SHARE_WITHOUT_STEP_RULES and skipped_files >= 3
    everything, _ = _share(_engine(Config()))
    assert everything > without
