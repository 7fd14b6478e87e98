"""Real-history soak: review successive released versions of a real package.

The repository is built from wheels of ``packaging`` (four versions, small and pure
Python), downloaded from the package registry into ``bench/work/wheels`` once and
reused. Every consecutive range is reviewed through the command line in every output
format; see ``bench/soakcheck.py`` for what must hold. ``bench/soak.py`` runs the same
checks at a larger scale.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import history  # noqa: E402
import soakcheck  # noqa: E402

PACKAGE, VERSIONS = "packaging", ("23.2", "24.0", "24.1", "24.2")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def packaging_history() -> history.History:
    try:
        return history.build_history(PACKAGE, VERSIONS)
    except history.RegistryUnavailable as exc:
        pytest.skip(f"package registry unreachable, cannot build the history: {exc}")


def test_every_range_and_format_reviews_cleanly(packaging_history: history.History) -> None:
    result = soakcheck.soak(packaging_history)
    assert [p for p in result.problems] == []
    assert len(result.records) == len(VERSIONS) - 1
    # The ranges really change Python code, so the check above had something to check.
    assert all(r.reviewed > 0 for r in result.records), result.records


def test_touched_set_follows_renames_and_skips_deletions(tmp_path: Path) -> None:
    repo = str(tmp_path)
    history.git(repo, "init", "-q", "-b", "main")
    (tmp_path / "keep.py").write_text("".join(f"line_{i} = {i}\n" for i in range(40)))
    (tmp_path / "gone.py").write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("not python\n")
    history.git(repo, "add", "-A")
    history.git(repo, "commit", "-q", "-m", "base")
    (tmp_path / "keep.py").rename(tmp_path / "moved.py")
    with open(tmp_path / "moved.py", "a") as handle:
        handle.write("added = True\n")
    (tmp_path / "gone.py").unlink()
    (tmp_path / "new.py").write_text("y = 2\n")
    (tmp_path / "notes.txt").write_text("changed\n")
    history.git(repo, "add", "-A")
    history.git(repo, "commit", "-q", "-m", "head")

    touched = {t.path: (t.status, t.added_lines) for t in history.touched_python(repo, "HEAD~1", "HEAD")}

    assert touched == {"moved.py": ("R", 1), "new.py": ("A", 1)}


def test_coverage_check_reports_a_touched_file_left_out() -> None:
    document = {
        "reviewed": {"files": ["a.py"]},
        "errors": [{"path": "b.py", "line": 3, "message": "b.py:3: cannot parse"}],
        "findings": [{"path": "z.py", "line": 1}],
    }

    problems = soakcheck.coverage_problems("v1..v2", document, {"a.py", "b.py", "c.py"})

    assert [p.what.split(":")[0] for p in problems] == ["c.py", "z.py"]
