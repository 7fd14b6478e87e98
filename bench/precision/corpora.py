"""Real inference-engine histories for precision triage.

Each corpus is a git repository whose commits are successive released versions of a
package fetched from the package registry by name (see ``bench/history.py``), so a
version-to-version range is an ordinary change of that engine.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from history import RegistryUnavailable, build_history  # noqa: E402

WORK = os.path.join(os.path.dirname(HERE), "work", "precision")
CORPORA: dict[str, tuple[str, ...]] = {
    "sglang": ("0.5.20", "0.5.21", "0.5.22", "0.5.23"),
    "lmdeploy": ("0.16.0", "0.17.0", "0.18.0"),
    "vllm-ascend": ("0.18.0", "0.23.0"),
    "vllm": ("0.32.0", "0.33.0"),
}


def repo_for(package: str) -> str:
    return os.path.join(WORK, f"{package}-history")


def main(names: list[str]) -> None:
    for name in names or list(CORPORA):
        try:
            history = build_history(name, CORPORA[name], repo_for(name))
        except RegistryUnavailable as exc:
            print(f"{name}: skipped ({exc})")
            continue
        print(f"{name}: {history.repo} {' '.join(history.versions)}")


if __name__ == "__main__":
    main(sys.argv[1:])
