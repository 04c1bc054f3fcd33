"""classify.tree and classify.preflight on small synthetic trees: what is a kernel
tree, the pristine unpack (idempotent, atomic), worktrees that leave the user's tree
alone, and the one-line errors for each kind of bad input."""

import subprocess
import time
from pathlib import Path

import pytest

from classify import preflight, tree
from classify.tree import TreeError


def fake_kernel(root: Path, sublevel: str = "192", patchlevel: str = "1") -> Path:
    """The few files check_kernel_tree looks at, nothing more."""
    (root / "include/linux").mkdir(parents=True)
    (root / "kernel/locking").mkdir(parents=True)
    (root / "Makefile").write_text(
        f"# SPDX-License-Identifier: GPL-2.0\nVERSION = 6\nPATCHLEVEL = {patchlevel}\n"
        f"SUBLEVEL = {sublevel}\nEXTRAVERSION =\nNAME = Curry Ramen\n")
    (root / "Kconfig").write_text("mainmenu \"Linux\"\n")
    (root / "include/linux/semaphore.h").write_text("struct semaphore;\n")
    (root / "kernel/locking/semaphore.c").write_text("/* down, up */\n")
    return root


def fake_tarball(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    fake_kernel(src / "linux-source-6.1")
    # A file the kernel's .gitignore would hide must still be recorded.
    (src / "linux-source-6.1/.gitignore").write_text("*.o\n")
    (src / "linux-source-6.1/shipped.o").write_text("not really an object\n")
    tarball = tmp_path / "linux-source-6.1.tar.xz"
    subprocess.run(["tar", "-cJf", str(tarball), "-C", str(src), "linux-source-6.1"],
                   check=True)
    return tarball


def test_kernel_tree_is_recognised(tmp_path):
    found = tree.check_kernel_tree(fake_kernel(tmp_path / "linux"))
    assert found.version == "6.1.192"
    assert found.path == (tmp_path / "linux").resolve()


@pytest.mark.parametrize("breakage, message", [
    (lambda t: t.joinpath("Makefile").unlink(), "no top-level Makefile"),
    (lambda t: t.joinpath("Makefile").write_text("all:\n"), "no VERSION/PATCHLEVEL"),
    (lambda t: t.joinpath("include/linux/semaphore.h").unlink(), "semaphore.h is missing"),
])
def test_not_a_kernel_tree_is_refused(tmp_path, breakage, message):
    root = fake_kernel(tmp_path / "linux")
    breakage(root)
    with pytest.raises(TreeError, match=message):
        tree.check_kernel_tree(root)


def test_missing_directory_says_how_to_get_it(tmp_path):
    with pytest.raises(TreeError, match=r"no such directory.*make setup"):
        tree.check_kernel_tree(tmp_path / "nowhere")


def test_prepare_records_pristine_commit_and_is_idempotent(tmp_path):
    tarball = fake_tarball(tmp_path)
    dest = tmp_path / "work/linux-6.1"
    first = tree.prepare_pristine(tarball, dest)
    assert first.version == "6.1.192"
    assert tree.is_pristine_repo(dest)
    files = tree.git(dest, "ls-files").split()
    assert "shipped.o" in files and "Makefile" in files
    head = tree.git(dest, "rev-parse", "HEAD")
    # Leftover unpack directories would be trusted by nobody, but must not pile up.
    assert [p.name for p in dest.parent.iterdir()] == ["linux-6.1"]

    started = time.monotonic()
    tree.prepare_pristine(tarball, dest)
    assert time.monotonic() - started < 5
    assert tree.git(dest, "rev-parse", "HEAD") == head


def test_pristine_commit_is_the_same_on_every_machine(tmp_path):
    tarball = fake_tarball(tmp_path)
    one = tree.prepare_pristine(tarball, tmp_path / "a/linux-6.1")
    two = tree.prepare_pristine(tarball, tmp_path / "b/linux-6.1")
    assert tree.git(one.path, "rev-parse", "HEAD") == tree.git(two.path, "rev-parse", "HEAD")


def test_half_written_tree_is_not_trusted(tmp_path):
    dest = tmp_path / "linux-6.1"
    fake_kernel(dest)  # unpacked, but never committed and tagged
    with pytest.raises(TreeError, match="not a finished sem2mutex tree"):
        tree.prepare_pristine(fake_tarball(tmp_path), dest)


def test_missing_tarball_names_the_package(tmp_path):
    with pytest.raises(TreeError, match="apt-get install linux-source-6.12`"):
        tree.prepare_pristine(tmp_path / "linux-source-6.12.tar.xz", tmp_path / "linux-6.12")


def test_corrupt_tarball_leaves_nothing_behind(tmp_path):
    bad = tmp_path / "linux-source-6.1.tar.xz"
    bad.write_bytes(b"\xfd7zXZ\x00 truncated")
    (tmp_path / "work").mkdir()
    with pytest.raises(TreeError, match="tar failed"):
        tree.prepare_pristine(bad, tmp_path / "work/linux-6.1")
    assert list((tmp_path / "work").iterdir()) == []


def test_no_free_disk_is_refused(tmp_path):
    with pytest.raises(TreeError, match="GiB free.*free some space"):
        tree.require_free_space(tmp_path, needed=1 << 60)


def test_worktree_of_git_tree_leaves_the_tree_alone(tmp_path):
    pristine = tree.prepare_pristine(fake_tarball(tmp_path), tmp_path / "linux-6.1").path
    wt = tree.make_worktree(pristine, tmp_path / "trees/boot")
    (wt / "Kconfig").write_text("changed\n")
    assert (pristine / "Kconfig").read_text() == "mainmenu \"Linux\"\n"
    # Asking again resets the worktree to the tree's commit, even past commits made
    # in the worktree (a `git am` of a series).
    tree.git(wt, "commit", "-q", "-am", "a patch", env=tree.GIT_ENV)
    tree.make_worktree(pristine, tmp_path / "trees/boot")
    assert (wt / "Kconfig").read_text() == "mainmenu \"Linux\"\n"
    assert tree.git(wt, "rev-parse", "HEAD") == tree.git(pristine, "rev-parse", "HEAD")


def test_worktree_of_plain_tree_is_a_committed_copy(tmp_path):
    user_tree = fake_kernel(tmp_path / "my-linux")
    wt = tree.make_worktree(user_tree, tmp_path / "trees/copy")
    assert not (user_tree / ".git").exists()
    assert tree.is_pristine_repo(wt)
    (wt / "Kconfig").write_text("changed\n")
    (wt / "new.c").write_text("int x;\n")
    tree.make_worktree(user_tree, tmp_path / "trees/copy")
    assert (wt / "Kconfig").read_text() == "mainmenu \"Linux\"\n"
    assert not (wt / "new.c").exists()


def test_missing_tool_names_its_debian_package(tmp_path):
    with pytest.raises(TreeError, match=r"spatch: not found.*coccinelle"):
        preflight.require_tools(["spatch"], search_path=str(tmp_path))


def test_present_tool_passes(tmp_path):
    tool = tmp_path / "spatch"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    preflight.require_tools(["spatch"], search_path=str(tmp_path))
