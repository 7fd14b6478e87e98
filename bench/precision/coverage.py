"""Share of a corpus's lines that the engine plans into LibCST regions, overall and per
rule (full scan, default configuration): the lower, the less is parsed.

Usage: coverage.py CORPUS_DIR
"""

from __future__ import annotations

import collections
import glob
import os
import sys

from rltrefactor.config import Config
from rltrefactor.source.aliases import import_table
from rltrefactor.matching.engine import Engine, _with_aliases, may_match, select_rules
from rltrefactor.library.loader import load_library
from rltrefactor.matching.regions.plan import plan_regions
from rltrefactor.matching.regions.reach import MatcherReach
from rltrefactor.source.syntax import parse_tree


def main(root: str) -> None:
    library, config = load_library(), Config()
    engine = Engine(select_rules(library, config), config, frozenset(r.id for r in library.rules))
    total = planned = 0
    per_rule: collections.Counter[str] = collections.Counter()
    for file in glob.glob(os.path.join(root, "**", "*.py"), recursive=True):
        path, text = os.path.relpath(file, root), open(file, encoding="utf-8", errors="replace").read()
        total += text.count("\n")
        candidates = {r.id: m for r, m in engine.applicable(path) if may_match(m.prefilter, text)}
        tree = parse_tree(text)
        imports = import_table(tree)
        tokens = {rule_id: _with_aliases(m.prefilter, imports) for rule_id, m in candidates.items()}
        every_rule = {rule_id: (tuple(rule_tokens), MatcherReach()) for rule_id, rule_tokens in tokens.items()}
        planned += sum(r.end_line - r.start_line + 1 for r in plan_regions(text, tree, every_rule, lines=None))
        for rule_id, rule_tokens in tokens.items():
            regions = plan_regions(text, tree, {rule_id: (tuple(rule_tokens), MatcherReach())}, lines=None)
            per_rule[rule_id] += sum(r.end_line - r.start_line + 1 for r in regions)
    print(f"lines {total}, planned into regions {planned} ({planned / max(total, 1):.0%})")
    for rule_id, count in per_rule.most_common(12):
        print(f"  {rule_id:42} {count:8} {count / max(total, 1):5.0%}")


if __name__ == "__main__":
    main(sys.argv[1])
