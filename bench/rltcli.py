"""How the benchmarks and the soak reach the ``rltrefactor`` command line.

The installed console script is preferred; a source checkout without an editable
install runs ``python -m rltrefactor`` with ``src`` on the path. Flags that land later
(``--jobs``, ``--no-cache``) are detected from ``review --help`` rather than assumed.
"""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.join(ROOT, ".venv", "bin")


def command() -> list[str]:
    script = os.path.join(VENV_BIN, "rltrefactor")
    if os.access(script, os.X_OK):
        return [script]
    return [os.path.join(VENV_BIN, "python"), "-m", "rltrefactor"]


def env(**extra: str) -> dict[str, str]:
    """The environment every run gets: source on the path, no colour, no debug re-raise."""
    base = {k: v for k, v in os.environ.items() if k not in ("RLTREFACTOR_DEBUG", "FORCE_COLOR")}
    # BENCH_RLTREFACTOR_SRC measures another checkout's sources with this harness.
    src = os.environ.get("BENCH_RLTREFACTOR_SRC") or os.path.join(ROOT, "src")  # rltrefactor: ignore[env-read-outside-config] the harness's only switch, documented in bench/README.md
    base["PYTHONPATH"] = src + (os.pathsep + base["PYTHONPATH"] if base.get("PYTHONPATH") else "")
    base["NO_COLOR"] = "1"
    base.update(extra)
    return base


@lru_cache(maxsize=1)
def review_help() -> str:
    done = subprocess.run([*command(), "review", "--help"], capture_output=True, text=True, env=env(), timeout=120)
    return done.stdout + done.stderr


def supports(flag: str) -> bool:
    return flag in review_help()


def prepare_rule_index() -> bool:
    """Build the compiled rule index the way a first review does; False for sources
    that have none."""
    python = os.path.join(VENV_BIN, "python")
    script = "from rltrefactor.matching.rule_index import load_rules; load_rules()"
    return subprocess.run([python, "-c", script], capture_output=True, env=env(), timeout=300).returncode == 0


def version() -> str:
    done = subprocess.run([*command(), "--version"], capture_output=True, text=True, env=env(), timeout=120)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"unavailable (exit {done.returncode}: {last})"
    return done.stdout.strip() or "unknown"
