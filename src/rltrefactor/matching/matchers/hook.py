"""Rules whose findings another stage emits (the perf hook's added syncs, copies and
allocations). Reviewing source text never produces them."""

from __future__ import annotations

from typing import Iterator

from ..prefilter import Prefilter
from ..regions.reach import MatcherReach
from .base import FileContext, Match

# A NUL character never occurs in Python source, so the engine's text prefilter skips
# this matcher for every file without parsing it.
NEVER_IN_SOURCE = "\x00"


class HookEmittedMatcher:
    reach = MatcherReach()  # its token never occurs in source: nothing is read

    def __init__(self, rule_id: str, emitter: str) -> None:
        self.rule_id = rule_id
        self.emitter = emitter
        self.prefilter: Prefilter = (NEVER_IN_SOURCE,)

    def find(self, ctx: FileContext) -> Iterator[Match]:
        return iter(())
