"""How much of a file around its prefilter tokens a matcher reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Literal

Reads = Literal["function", "statement", "header"]
CompanionLines = Literal["uses", "assignments"]
Companions = Callable[[str], Iterable[str]]
SearchScope = Literal["file", "statements", "members", "headers"]


@dataclass(frozen=True)
class MatcherReach:
    """How much of a file around its prefilter tokens a matcher reads.

    Planning (``plan.plan_regions``) leaves the rest unparsed, so a reach narrower than
    what ``find`` really reads hides hits. The defaults are the widest reach: whole
    functions, no companions, tokens selecting everywhere.
    """

    # "function": the whole function around a token; "statement": the innermost
    # statement holding it and the headers around it (its hits lie there too; a
    # function's header counts as a statement of its own); "header": only that
    # statement's header (a simple statement is its own header). Whatever the matcher
    # does not read may be left empty.
    reads: Reads = "function"
    # Reads every method of a class, not only those holding a token and the setup methods.
    whole_class: bool = False
    # Never reports inside a setup method (``__init__``, ...), so its tokens there do not
    # make the class worth parsing.
    never_in_setup: bool = False
    # Never reports in code that runs once or offline (see ``execution``): tokens on the
    # lines ``plan_regions`` is told are cold select nothing. The engine sets it for the
    # rules that apply to hot paths only.
    never_in_cold: bool = False
    # Given the text from a token's line on (that line and the two after it), the names
    # whose uses the matcher also reads (``_x`` once ``self._x = ...`` is seen): lines
    # holding them as whole words are kept. Planning also asks it about the first line
    # of the statement a token's line goes on (a wrapped call's receiver sits there).
    companions: Companions | None = None
    # Which lines of a companion are kept: every line using it, or only the lines
    # binding it (``name = ...``, ``def name``), for matchers that ask where a value came from.
    companion_lines: CompanionLines = "uses"
    # Every hit lies in the statement holding one of its tokens, however much of the
    # function the matcher reads for evidence: in a diff, only tokens in the changed
    # statements and the headers around them can select a kept hit.
    hits_at_tokens: bool = False
    # Its tokens are worked out from the whole file (names the file's own code shows to
    # pair), so in a diff they are searched for in the whole file, not only near the
    # changed lines; hits are still kept only where they touch a changed line.
    file_tokens: bool = False


def search_scope(reach: MatcherReach) -> SearchScope:
    """Where, in a review limited to changed lines, a rule's tokens can select a kept hit.

    A rule hits only where it reads, in the function (or class-level statement) around
    its tokens, and a kept hit touches a changed line: so only tokens in the touched
    members matter, the class members (or whole top-level statements outside classes)
    that hold changed lines. A rule that reads only the header of the statement holding
    a token hits inside that statement, so the statement itself must hold a changed
    line: its tokens matter only in the headers of the statements around each changed
    line. Companions that keep assignments stay in the token's function too. A rule
    that reads every method of a class needs the touched top-level statements whole;
    one whose companions keep every use of a name needs the file: a token elsewhere may
    name what the changed lines use.
    """
    if reach.file_tokens or reach.companions is not None and reach.companion_lines == "uses":
        return "file"
    if reach.whole_class:
        return "statements"
    return "headers" if reach.reads == "header" or reach.hits_at_tokens else "members"
