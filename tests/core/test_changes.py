"""Change sources on real git repositories."""

from __future__ import annotations

import pytest

from rltrefactor.change.changeset import collect_changes, parse_unified_diff
from rltrefactor.errors import ChangeInputError


def _by_path(change):
    return {f.path: f for f in change.files}


def test_diff_ref_covers_committed_and_uncommitted_work(repo):
    repo.write("a.py", "x = 1\ny = 2\n")
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("a.py", "x = 1\ny = 3\nz = 4\n")
    repo.commit("feature")
    repo.write("b.py", "print('uncommitted')\n")
    repo.git("add", "b.py")
    repo.write("a.py", "x = 10\ny = 3\nz = 4\n")  # unstaged edit on top
    repo.write("new.py", "n = 1\nm = 2")  # untracked, no final newline
    repo.write(".gitignore", "ignored.py\n")
    repo.write("ignored.py", "i = 1\n")
    change = collect_changes(str(repo.path), diff="main")
    files = _by_path(change)
    assert files["a.py"].added_lines == {1, 2, 3}
    assert files["b.py"].status == "added" and files["b.py"].added_lines == {1}
    assert files["new.py"].status == "added" and files["new.py"].added_lines == {1, 2}
    assert "ignored.py" not in files
    assert change.head.kind == "worktree"
    assert change.base == repo.git("rev-parse", "main").strip()


def test_two_dot_range_reads_lines_added_by_b_only(repo):
    repo.write("m.py", "a = 1\n")
    a = repo.commit("a")
    repo.write("m.py", "a = 1\nb = 2\n")
    b = repo.commit("b")
    repo.write("m.py", "a = 1\nb = 2\nc = 3\n")  # working tree must be ignored
    change = collect_changes(str(repo.path), diff=f"{a}..{b}")
    assert change.head.kind == "git" and change.head.ref == b
    assert _by_path(change)["m.py"].added_lines == {2}


def test_three_dot_range_starts_at_merge_base(repo):
    repo.write("m.py", "a = 1\n")
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "topic")
    repo.write("t.py", "t = 1\n")
    topic = repo.commit("topic")
    repo.git("checkout", "-q", "main")
    repo.write("m.py", "a = 2\n")
    repo.commit("main moves on")
    change = collect_changes(str(repo.path), diff=f"main...{topic}")
    assert set(_by_path(change)) == {"t.py"}  # main's own change is not the topic's


def test_rename_with_edits_delete_binary_and_mode_only(repo):
    repo.write("old.py", "a = 1\nb = 2\nc = 3\nd = 4\n")
    repo.write("gone.py", "x = 1\n")
    repo.write("blob.bin", b"\x00\x01\x02")
    repo.write("run.sh", "echo hi\n")
    base = repo.commit("base")
    repo.git("mv", "old.py", "new.py")
    repo.write("new.py", "a = 1\nb = 2\nc = 30\nd = 4\n")
    repo.git("rm", "-q", "gone.py")
    repo.write("blob.bin", b"\x00\x01\x03")
    (repo.path / "run.sh").chmod(0o755)
    head = repo.commit("head")
    files = _by_path(collect_changes(str(repo.path), diff=f"{base}..{head}"))
    assert files["new.py"].status == "renamed" and files["new.py"].old_path == "old.py"
    assert files["new.py"].added_lines == {3}
    assert files["gone.py"].status == "deleted"
    assert files["blob.bin"].binary
    assert files["run.sh"].added_lines == frozenset()


def test_staged_reads_the_index_against_head(repo):
    repo.write("s.py", "a = 1\n")
    repo.commit("base")
    repo.write("s.py", "a = 1\nb = 2\n")
    repo.git("add", "s.py")
    repo.write("s.py", "a = 1\nb = 2\nc = 3\n")  # unstaged: not part of the commit
    change = collect_changes(str(repo.path), staged=True)
    assert change.head.kind == "index"
    assert _by_path(change)["s.py"].added_lines == {2}


def test_staged_in_a_repository_without_commits(repo):
    repo.write("first.py", "a = 1\n")
    repo.git("add", "first.py")
    change = collect_changes(str(repo.path), staged=True)
    assert _by_path(change)["first.py"].added_lines == {1}
    assert change.base is None


def test_crlf_lines_are_counted_like_lf(repo):
    repo.write("w.py", b"a = 1\r\nb = 2\r\n")
    base = repo.commit("base")
    repo.write("w.py", b"a = 1\r\nb = 3\r\nc = 4\r\n")
    head = repo.commit("head")
    assert _by_path(collect_changes(str(repo.path), diff=f"{base}..{head}"))["w.py"].added_lines == {2, 3}


def test_empty_change_has_no_files(repo):
    repo.write("a.py", "a = 1\n")
    repo.commit("base")
    assert collect_changes(str(repo.path), diff="HEAD").files == ()


def test_paths_full_scan_lists_python_files(repo):
    repo.write("pkg/a.py", "a = 1\n")
    repo.write("pkg/notes.txt", "n\n")
    repo.write("pkg/.hidden/b.py", "b = 1\n")
    change = collect_changes(str(repo.path), paths=(str(repo.path / "pkg"),))
    assert [f.path for f in change.files] == ["pkg/a.py"]
    assert change.full_scan


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"diff": "--output=/tmp/x"}, "invalid ref '--output=/tmp/x'"),
        ({"diff": "no-such-branch"}, "unknown revision 'no-such-branch'"),
        ({"diff": "a..--exec=x"}, "invalid ref"),
        ({"diff": "main", "staged": True}, "choose one change source"),
    ],
)
def test_bad_ranges_are_one_line_errors(repo, kwargs, message):
    repo.write("a.py", "a = 1\n")
    repo.commit("base")
    with pytest.raises(ChangeInputError) as info:
        collect_changes(str(repo.path), **kwargs)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_outside_a_repository(tmp_path):
    with pytest.raises(ChangeInputError, match="not inside a git repository"):
        collect_changes(str(tmp_path), diff="main")


def test_repository_without_commits_says_so(repo):
    with pytest.raises(ChangeInputError, match="no commits yet"):
        collect_changes(str(repo.path), diff="main")


def test_patch_paths_may_not_escape_the_repository():
    patch = "--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n"
    with pytest.raises(ChangeInputError, match="escapes the repository"):
        parse_unified_diff(patch)
    absolute = "--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n"
    with pytest.raises(ChangeInputError, match="escapes the repository"):
        parse_unified_diff(absolute)


def test_patch_file_that_is_not_a_diff(tmp_path):
    patch = tmp_path / "p.patch"
    patch.write_text("this is not a diff\n")
    with pytest.raises(ChangeInputError, match="not a unified diff"):
        collect_changes(str(tmp_path), diff_file=str(patch))


def test_truncated_patch_is_a_clear_error(tmp_path):
    patch = tmp_path / "p.patch"
    patch.write_text("--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,4 @@\n a\n+b\n")
    with pytest.raises(ChangeInputError, match="malformed patch"):
        collect_changes(str(tmp_path), diff_file=str(patch))


_OLD = "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\ng = 7\nh = 8\n"
_NEW = "a = 1\nb = 20\nb2 = 21\nc = 3\nd = 4\nf = 6\ng = 7\nh = 8\n"  # b edited and grown; e deleted


def test_hunks_carry_edits_and_deletion_anchors_once_parsed(repo):
    from rltrefactor.types import Hunk

    repo.write("m.py", _OLD)
    a = repo.commit("a")
    repo.write("m.py", _NEW)
    b = repo.commit("b")
    changed = _by_path(collect_changes(str(repo.path), diff=f"{a}..{b}"))["m.py"]
    assert changed.hunks == (Hunk(2, 1, 2, 2), Hunk(5, 1, 5, 0))
    assert changed.added_lines == {2, 3}
    assert changed.deletion_anchors == {5}  # "d = 4", the head line just before the deleted "e = 5"


def test_a_patch_with_context_gives_the_same_hunks_as_git(repo, tmp_path):
    repo.write("m.py", _OLD)
    a = repo.commit("a")
    repo.write("m.py", _NEW)
    b = repo.commit("b")
    from_git = _by_path(collect_changes(str(repo.path), diff=f"{a}..{b}"))["m.py"]
    (from_patch,) = parse_unified_diff(repo.git("diff", "-U3", a, b))
    assert (from_patch.hunks, from_patch.added_lines) == (from_git.hunks, from_git.added_lines)


def test_a_deletion_at_the_top_of_a_file_anchors_on_its_first_line():
    (changed,) = parse_unified_diff("--- a/m.py\n+++ b/m.py\n@@ -1,2 +1 @@\n-x = 0\n y = 1\n")
    assert changed.deletion_anchors == {1} and changed.added_lines == frozenset()
