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
from rltrefactor.engine import Engine, select_rules
from rltrefactor.library.loader import load_library

torch = pytest.importorskip("torch")
CORPUS = Path(torch.__file__).parent / "nn" / "modules"
# Measured with library 1.3.0: 29 % of the lines were parsed (56 % before rules said
# how much of a function they read). The bound leaves room for new rules, not for a
# rule without a precise prefilter (that parses 100 %) or one that reads whole
# functions where it need not.
MAX_PARSED_SHARE = 0.5


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
    assert skipped_files >= 3


def test_the_same_code_on_a_hot_path_parses_more():
    """Hot-path rules add tokens, so the share must rise: proof the count is live."""
    cold, _ = _share(_engine(Config()))
    hot, _ = _share(_engine(Config(hot_paths=("**",))))
    assert hot > cold
