"""``rltrefactor perf scaffold PATH::QUALNAME``: write a micro-check of one function.

``perf`` takes paths as positional arguments, so ``perf scaffold`` is told apart before
parsing (``cli.main``): the word ``scaffold`` right after ``perf`` is this command (a
path of that name is written ``./scaffold``). Errors (``RltError``) propagate to
``cli.main``, which prints them in one line and exits with 2.
"""

from __future__ import annotations

import argparse
from typing import Sequence

SCAFFOLD_WORDS = ("perf", "scaffold")
EXIT_CODES = ("exit codes: 0 the check was written; 2 refused (a missing file, a name not defined there, a class, "
              "a nested or async function, an existing check file) or a usage error, in one line on stderr naming "
              "the file and the fix")


def is_scaffold(argv: Sequence[str]) -> bool:
    return tuple(argv[:2]) == SCAFFOLD_WORDS


def scaffold_parser(parser_class: type[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = parser_class(
        prog="rltrefactor perf scaffold",
        description="Write a micro-check of one function into the perf hooks directory (perf-hooks, default "
                    "perf_hooks/) from the template installed with rltrefactor: it imports the function's module, "
                    "builds what the call needs (placeholders to fill in) and measures the one call. "
                    "'rltrefactor perf' lists the changed functions no check measured, in this form.",
        epilog=EXIT_CODES,
    )
    parser.add_argument("target", metavar="PATH::QUALNAME",
                        help="the function, e.g. loopy/engine.py::LLMEngine.step (path from the repository root)")
    parser.add_argument("--repo", default=".", help="repository root (default: current directory)")
    parser.add_argument("--force", action="store_true", help="overwrite the check file if it exists")
    parser.add_argument("--config", metavar="PATH", help="the configuration file, for its perf-hooks (default: the "
                                                         "repository root's rltrefactor.toml, .rltrefactor.toml or pyproject.toml)")
    parser.set_defaults(handler=run_scaffold, command_parser=parser, command="perf scaffold")
    return parser


def run_scaffold(args: argparse.Namespace) -> int:
    from ..api import ScaffoldRequest, scaffold

    written = scaffold(ScaffoldRequest(args.target, repo=args.repo, force=args.force, config=args.config))
    todo = ", ".join(p.name for p in written.placeholders)
    step = f"fill in its set-up ({todo}), then " if todo else ""
    print(f"rltrefactor: wrote {written.path}: micro-check {written.check} of {written.target}; "
          f"{step}run rltrefactor perf --diff REF")
    return 0
