"""The measured commands: anchors (from ``bench/work/anchors-venv``) and rltrefactor.

Every command scans the current directory (a corpus repository) with 2 processes where
the tool lets us choose, output thrown away. Anchors are installed from the package
registry into their own venv so their dependencies never touch the project's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Callable

import rltcli
from history import WORK

HERE = os.path.dirname(os.path.abspath(__file__))
ANCHORS = os.path.join(WORK, "anchors-venv")
ABIN = os.path.join(ANCHORS, "bin")
# fixit 2.2.1 and libcst 1.9 are the newest releases; TorchFix 0.7.0 asks for
# libcst<1.6 but runs on 1.9, so it is installed without its dependency pins.
ANCHOR_PACKAGES = ("fixit==2.2.1", "semgrep", "ruff", "libcst", "tree-sitter", "tree-sitter-python", "flake8", "pyyaml")
NO_DEPS_PACKAGES = ("torchfix==0.7.0",)
QUIET_ENV = {"SEMGREP_SEND_METRICS": "off", "SEMGREP_ENABLE_VERSION_CHECK": "0", "NO_COLOR": "1"}


@dataclass(frozen=True)
class Tool:
    name: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    # Runs before each measured run (e.g. empty the cache for a cold run).
    prepare: Callable[[], None] | None = None
    prime: bool = False  # one unmeasured run first (warm cache)
    note: str = ""


def install_anchors(log: Callable[[str], None]) -> list[str]:
    """Create/refresh the anchors venv; returns notes on anything left out."""
    notes: list[str] = []
    pip = [os.path.join(ABIN, "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    if not os.path.exists(os.path.join(ABIN, "semgrep")):
        log("installing anchors into bench/work/anchors-venv (one time)")
        subprocess.run([sys.executable, "-m", "venv", "--clear", ANCHORS], check=True)
        subprocess.run([*pip, *ANCHOR_PACKAGES], check=True, capture_output=True)
    if not os.path.exists(os.path.join(ABIN, "torchfix")):
        done = subprocess.run([*pip, "--no-deps", *NO_DEPS_PACKAGES], capture_output=True, text=True)
        if done.returncode != 0:
            notes.append(f"TorchFix not installed: {done.stderr.strip().splitlines()[-1:]}")
    return notes


def _fresh_dir(path: str) -> Callable[[], None]:
    def reset() -> None:
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
    return reset


def anchors() -> list[Tool]:
    tools = [
        Tool("LibCST parse", (os.path.join(ABIN, "python"), os.path.join(HERE, "anchors", "parse_libcst.py"), "."),
             note="parse only, no rules, 1 process"),
        Tool("tree-sitter parse", (os.path.join(ABIN, "python"), os.path.join(HERE, "anchors", "parse_treesitter.py"), "."),
             note="parse only, no rules, 1 process"),
        Tool("Fixit", (os.path.join(ABIN, "fixit"), "lint", "."), note="default rules; its own process pool (2 cores)"),
        Tool("Semgrep", (os.path.join(ABIN, "semgrep"), "scan", "--config", os.path.join(HERE, "semgrep-rules.yaml"),
                         "--metrics=off", "--disable-version-check", "-j", "2", "--no-git-ignore",
                         "--max-target-bytes", "0", "--json", "--quiet", "."),
             env=QUIET_ENV, note="4 host-sync pattern rules"),
        Tool("ruff", (os.path.join(ABIN, "ruff"), "check", "--select", "ALL", "--no-cache", "--isolated",
                      "--exit-zero", "--quiet", "."), note="--select ALL"),
    ]
    if os.path.exists(os.path.join(ABIN, "torchfix")):
        tools.append(Tool("TorchFix", (os.path.join(ABIN, "torchfix"), "-j", "2", "."), note="default rules"))
    return [t for t in tools if os.access(t.argv[0], os.X_OK)]


def semgrep_diff(base: str, label: str) -> Tool | None:
    """Semgrep's diff mode: findings in the files changed since ``base``, new ones only
    (it scans the changed files at the head and again at ``base``)."""
    semgrep = os.path.join(ABIN, "semgrep")
    if not os.access(semgrep, os.X_OK):
        return None
    return Tool(label, (semgrep, "scan", "--config", os.path.join(HERE, "semgrep-rules.yaml"), "--baseline-commit", base,
                        "--metrics=off", "--disable-version-check", "-j", "2", "--no-git-ignore",
                        "--max-target-bytes", "0", "--json", "--quiet", "."),
                env=QUIET_ENV, note="4 host-sync pattern rules, --baseline-commit diff mode")


def rltrefactor_variants(label: str) -> list[Tool]:
    """Cold (fresh cache dir) and warm cache, 1 and 2 processes where --jobs exists."""
    base = (*rltcli.command(), "review", ".", "--format", "json")
    jobs = (1, 2) if rltcli.supports("--jobs") else (None,)
    tools = []
    for n in jobs:
        jobs_args = ("--jobs", str(n)) if n else ()
        suffix = f", --jobs {n}" if n else ""
        cold = os.path.join(WORK, "cache", f"{label}-cold-{n}")
        warm = os.path.join(WORK, "cache", f"{label}-warm-{n}")
        cold_env = rltcli.env(RLTREFACTOR_CACHE_DIR=cold)
        tools.append(Tool(f"rltrefactor cold{suffix}", (*base, *jobs_args), cold_env, _fresh_dir(cold),
                          note="fresh cache dir each run"))
        tools.append(Tool(f"rltrefactor warm{suffix}", (*base, *jobs_args), rltcli.env(RLTREFACTOR_CACHE_DIR=warm),
                          prime=True, note="cache filled by an unmeasured run"))
        if rltcli.supports("--no-cache"):
            tools.append(Tool(f"rltrefactor --no-cache{suffix}", (*base, "--no-cache", *jobs_args), rltcli.env()))
    return tools


def versions() -> dict[str, str]:
    def first_line(argv: list[str]) -> str:
        if not os.access(argv[0], os.X_OK):
            return "not installed"
        done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **QUIET_ENV}, timeout=120)
        return ((done.stdout or done.stderr).strip().splitlines() or ["unknown"])[-1]

    py = os.path.join(ABIN, "python")
    lib = "import importlib.metadata as m;print('libcst', m.version('libcst'), '/ tree-sitter', m.version('tree-sitter'), m.version('tree-sitter-python'))"
    return {
        "rltrefactor": rltcli.version(),
        "fixit": first_line([os.path.join(ABIN, "fixit"), "--version"]),
        "semgrep": first_line([os.path.join(ABIN, "semgrep"), "--version"]),
        "ruff": first_line([os.path.join(ABIN, "ruff"), "--version"]),
        "torchfix": first_line([os.path.join(ABIN, "torchfix"), "--version"]),
        "anchors' libcst / tree-sitter": first_line([py, "-c", lib]),
        "python": sys.version.split()[0],
    }
