"""The source stage on a tiny fake kernel git tree: the series is applied with git am in
a worktree, an unchanged source is reused, a moved kernel HEAD or a changed series is
re-applied, a patch that does not apply is named."""

import os
import subprocess
from pathlib import Path

import pytest

from classify.tree import TreeError
from qemu.source import prepare_source, read_series

ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@t"}


def git(tree: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True,
                          text=True, env=ENV).stdout.strip()


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    k = tmp_path / "linux"
    for rel, text in {"Makefile": "VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 0\n",
                      "Kconfig": "", "include/linux/semaphore.h": "struct semaphore;\n",
                      "kernel/locking/semaphore.c": "int x;\n"}.items():
        (k / rel).parent.mkdir(parents=True, exist_ok=True)
        (k / rel).write_text(text)
    git(k, "init", "-q")
    git(k, "add", "-A")
    git(k, "commit", "-q", "-m", "base")
    return k


def make_series(tmp_path: Path, kernel: Path, text: str) -> Path:
    """A one-patch series made with git format-patch on a scratch clone."""
    scratch = tmp_path / "scratch"
    subprocess.run(["git", "clone", "-q", str(kernel), str(scratch)], check=True)
    (scratch / "kernel/locking/semaphore.c").write_text(text)
    git(scratch, "commit", "-q", "-am", "locking: change x")
    out = tmp_path / "patches"
    out.mkdir(exist_ok=True)
    name = git(scratch, "format-patch", "-1", "-o", str(out))
    (out / "series").write_text(f"# comment\n\n{Path(name).name}\n")
    subprocess.run(["rm", "-rf", str(scratch)], check=True)
    return out / "series"


def test_read_series_skips_comments(tmp_path):
    s = tmp_path / "series"
    s.write_text("# c\n\n0001-a.patch\n0002-b.patch -p1\n")
    assert [p.name for p in read_series(s)] == ["0001-a.patch", "0002-b.patch"]
    assert read_series(tmp_path / "absent") == []


def test_series_applied_reused_and_reapplied(tmp_path, kernel):
    series = make_series(tmp_path, kernel, "int x = 1;\n")
    trees = tmp_path / "trees"
    src = prepare_source(kernel, series, trees)
    assert (src.tree / "kernel/locking/semaphore.c").read_text() == "int x = 1;\n"
    assert src.series == [read_series(series)[0].name]
    assert (kernel / "kernel/locking/semaphore.c").read_text() == "int x;\n"  # untouched
    head = git(src.tree, "rev-parse", "HEAD")
    assert prepare_source(kernel, series, trees).tree == src.tree
    assert git(src.tree, "rev-parse", "HEAD") == head            # reused, not re-applied
    # the kernel moves on: the worktree follows the kernel's commit, not its own HEAD
    (kernel / "Kconfig").write_text("# changed\n")
    git(kernel, "commit", "-q", "-am", "kconfig")
    prepare_source(kernel, series, trees)
    assert (src.tree / "Kconfig").read_text() == "# changed\n"
    assert git(src.tree, "rev-parse", "HEAD~1") == git(kernel, "rev-parse", "HEAD")


def test_patch_that_does_not_apply_is_named(tmp_path, kernel):
    series = make_series(tmp_path, kernel, "int x = 1;\n")
    (kernel / "kernel/locking/semaphore.c").write_text("long y;\n")
    git(kernel, "commit", "-q", "-am", "conflicting")
    with pytest.raises(TreeError, match="0001-locking-change-x.patch does not apply"):
        prepare_source(kernel, series, tmp_path / "trees")


def test_two_processes_at_once_share_one_worktree(tmp_path, kernel):
    """Parallel test workers (or a boot-test beside a full-kernel) prepare the same
    worktree: the second waits for the first and reuses what it made, rather than
    remaking it under its feet."""
    from concurrent.futures import ProcessPoolExecutor
    series = make_series(tmp_path, kernel, "int x = 3;\n")
    trees = tmp_path / "trees"
    with ProcessPoolExecutor(2) as pool:
        results = list(pool.map(prepare_source, [kernel] * 4, [series] * 4, [trees] * 4))
    assert len({r.tree for r in results}) == 1
    tree = results[0].tree
    assert (tree / "kernel/locking/semaphore.c").read_text() == "int x = 3;\n"
    assert git(tree, "status", "--porcelain") == ""
    assert len(git(tree, "log", "--format=%s").splitlines()) == 2
