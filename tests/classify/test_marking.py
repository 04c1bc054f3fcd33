"""classify.marking without the real kernel: which semaphores are marked, where the
patch goes in the series, its message, and the marking of a small synthetic tree
(the counting semaphores marked, the others untouched, the same bytes twice)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from classify.convert import marking as M
from classify.tree import GIT_ENV

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from test_patches import COUNTED, DRIVER, sem  # noqa: E402
from test_tree import fake_kernel  # noqa: E402

needs_spatch = pytest.mark.skipif(shutil.which("spatch") is None, reason="spatch missing")

POOL = [sem("drivers/foo/pool.c:pool.slots", "counting", struct="pool"),
        sem("drivers/foo/foo.c:dev.lock"),
        sem("drivers/foo/limit.c:limit_sem", "counting", kind="static"),
        sem("drivers/foo/foo.c:dev.other", "unknown")]


# ------------------------------------------------------------------ choice

def test_counting_pool_is_the_counting_class_only():
    assert [s["id"] for s in M.counting_pool({"semaphores": POOL})] == [
        "drivers/foo/limit.c:limit_sem", "drivers/foo/pool.c:pool.slots"]


def test_counting_pool_less_the_excluded():
    pool = M.counting_pool({"semaphores": POOL}, ["drivers/foo/limit.c:limit_sem"])
    assert [s["id"] for s in pool] == ["drivers/foo/pool.c:pool.slots"]


@pytest.mark.parametrize("stray", ["drivers/foo/foo.c:dev.lock", "no/such.c:sem"])
def test_only_a_counting_semaphore_can_be_excluded(stray):
    with pytest.raises(M.MarkingError, match="not in the counting pool"):
        M.counting_pool({"semaphores": POOL}, [stray])


def test_place_in_series():
    entries = ["0001-a.patch", "0002-b.patch", M.MARKING_NAME, "0005-c.patch"]
    assert M.place_in_series(entries) == (["0001-a.patch", "0002-b.patch"], 3, 4)
    with pytest.raises(M.MarkingError, match="has no"):
        M.place_in_series(["0001-a.patch"])


# ------------------------------------------------------------------ message

def test_commit_message_gives_each_reason_and_what_was_not_marked():
    sems = {s["id"]: s for s in POOL}
    marks = [M.Mark("drivers/foo/pool.c:pool.slots", "marked", ["drivers/foo/pool.c"]),
             M.Mark("drivers/foo/limit.c:limit_sem", "refused", [],
                    ["limit.c:9: its address goes elsewhere"])]
    text = M.commit_message(marks, sems, "6.1.192", ["x.c:excluded_sem"], 7)
    lines = text.splitlines()
    assert lines[0] == M.SUBJECT and lines[1] == ""
    assert max(len(ln) for ln in lines) <= 75
    assert "the 1 semaphores it classes as counting" in " ".join(lines)
    assert "- pool.slots (drivers/foo/pool.c:5): initial count 1" in text
    assert "- drivers/foo/limit.c:limit_sem: limit.c:9: its address goes elsewhere" in text
    assert "- x.c:excluded_sem: left out on request (--exclude)" in text
    assert "The 7 semaphores the audit could not class are not marked" in " ".join(lines)
    # a marked semaphore is not among those not marked, and the reverse
    assert "- limit_sem (" not in text


# ------------------------------------------------------------------ a small tree


LIMIT = """\
// SPDX-License-Identifier: GPL-2.0
#include <linux/semaphore.h>

static struct semaphore limit_sem = __SEMAPHORE_INITIALIZER(limit_sem, 8);

static struct semaphore *get_slot(void)
{
	struct semaphore *limiter = &limit_sem;

	down(limiter);
	return limiter;
}
"""

FIRST_PATCH = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: sem2mutex <sem2mutex@localhost>
Date: Thu, 3 Dec 2026 03:41:45 +0000
Subject: [PATCH 1/3] locking: semaphore: Introduce struct arch_semaphore

---
 Kconfig | 1 +
 1 file changed, 1 insertion(+)

diff --git a/Kconfig b/Kconfig
--- a/Kconfig
+++ b/Kconfig
@@ -1 +1,2 @@
 mainmenu "Linux"
+# arch_semaphore
--\x20
2.39.5
"""


def small_tree(root: Path) -> Path:
    fake_kernel(root)
    (root / "drivers/foo").mkdir(parents=True)
    (root / "drivers/foo/foo.c").write_text(DRIVER)
    (root / "drivers/foo/pool.c").write_text(COUNTED)
    (root / "drivers/foo/limit.c").write_text(LIMIT)
    return root


def small_series(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "0001-first.patch").write_text(FIRST_PATCH)
    (root / "series").write_text(f"0001-first.patch\n{M.MARKING_NAME}\n0005-last.patch\n")
    return root / "series"


def audit() -> dict:
    slots = sem("drivers/foo/pool.c:pool.slots", "counting", struct="pool",
                ops=[("drivers/foo/pool.c", 11, "down"), ("drivers/foo/pool.c", 12, "up")],
                init=[("drivers/foo/pool.c", 10)])
    slots["reasons"] = ["count above 1: initial count 2"]
    limit = sem("drivers/foo/limit.c:limit_sem", "counting", kind="static",
                ops=[("drivers/foo/limit.c", 10, "down")])
    limit["declared"]["line"] = 4
    lock = sem("drivers/foo/foo.c:dev.lock", ops=[("drivers/foo/foo.c", 12, "down")])
    return {"kernel_version": "6.1.192", "semaphores": [slots, limit, lock]}


def run(tmp_path, name, exclude=()):
    kernel = tmp_path / "linux"
    if not kernel.exists():
        small_tree(kernel)
    series = small_series(tmp_path / "kp")
    return M.generate(kernel, audit(), tmp_path / name / "0004.patch",
                      tmp_path / name / "tree", list(exclude), series_file=series)


@needs_spatch
def test_the_counting_pool_is_marked_and_nothing_else(tmp_path):
    res = run(tmp_path, "a")
    assert [(m.id, m.status) for m in res.marks] == [
        ("drivers/foo/limit.c:limit_sem", "marked"), ("drivers/foo/pool.c:pool.slots", "marked")]
    text = res.patch.read_text()
    assert "Subject: [PATCH 2/3] locking: semaphore: Keep the counting semaphores" in text
    # the date of the patch before it, so the file does not change from run to run
    assert "Date: Thu, 3 Dec 2026 03:41:45 +0000" in text
    assert "Signed-off-by: sem2mutex <sem2mutex@localhost>" in text
    added = [ln[1:] for ln in text.splitlines() if ln.startswith("+") and ln[1:2] != "+"]
    removed = [ln[1:] for ln in text.splitlines() if ln.startswith("-") and ln[1:2] != "-"]
    assert "\tstruct arch_semaphore slots;" in added
    assert "static struct arch_semaphore limit_sem = __SEMAPHORE_INITIALIZER(limit_sem, 8);" \
        in added
    # the local pointer and the function returning it follow
    assert "static struct arch_semaphore *get_slot(void)" in added
    assert "\tstruct arch_semaphore *limiter = &limit_sem;" in added
    # the mutex-class semaphores are not touched, nor is any call
    assert "drivers/foo/foo.c" not in text.split("---", 1)[1]
    assert not [ln for ln in removed + added if "down(" in ln or "up(" in ln]
    assert res.files == ["drivers/foo/limit.c", "drivers/foo/pool.c"]


@needs_spatch
def test_the_same_audit_gives_the_same_bytes(tmp_path):
    assert run(tmp_path, "a").patch.read_bytes() == run(tmp_path, "b").patch.read_bytes()


@needs_spatch
def test_an_excluded_semaphore_stays_unmarked(tmp_path):
    res = run(tmp_path, "x", exclude=["drivers/foo/limit.c:limit_sem"])
    text = res.patch.read_text()
    assert [m.id for m in res.marks] == ["drivers/foo/pool.c:pool.slots"]
    assert "limit.c" not in text.split("---", 1)[1]
    assert "- drivers/foo/limit.c:limit_sem: left out on request (--exclude)" in text


def test_check_verdict_names_the_files_the_marking_breaks():
    record = {"files": {"a.c": {"before": {"status": "failed"}, "after": {"status": "ok"}},
                        "b.c": {"before": {"status": "ok"}, "after": {"status": "failed"}},
                        "c.c": {"before": {"status": "not built"},
                                "after": {"status": "failed"}},
                        "d.c": {"before": {"status": "failed"},
                                "after": {"status": "failed"}},
                        "e.c": {"before": {"status": "not built"},
                                "after": {"status": "not built"}}}}
    assert M.check_verdict(record) == (["b.c", "c.c"], ["d.c"])


def test_a_semaphore_whose_address_sits_in_a_shared_pointer_is_not_marked(tmp_path):
    shared = sem("drivers/foo/pool.c:pool.slots", "counting", struct="pool",
                 ops=[("drivers/foo/pool.c", 11, "down")])
    shared["followed"] = [{"at": "drivers/foo/pool.c:20", "pointer": "include/foo.h:.act.sem",
                           "kind": "member", "calls": 2, "also": []}]
    [mark] = M.mark_all(tmp_path, [shared])
    assert mark.status == "refused" and not mark.files
    assert "member pointer include/foo.h:.act.sem" in mark.why[0]
    assert "struct arch_semaphore *" in mark.why[0]


def test_the_check_names_the_architecture_of_each_file(capsys):
    def r(status, arch="x86_64", why=""):
        return {"status": status, "arch": arch, "why": why, "errors": []}
    check = {"files": {
        "drivers/parport/parport_amiga.c": {"before": r("ok", "m68k"), "after": r("ok", "m68k")},
        "drivers/x/plain.c": {"before": r("ok"), "after": r("ok")},
        "drivers/pps/gone.c": {"before": r("failed", why="CONFIG_GONE depends on BROKEN"),
                               "after": r("failed", why="CONFIG_GONE depends on BROKEN")}}}
    assert M.print_check(check, 1.0) == []
    out = capsys.readouterr().out
    assert "drivers/parport/parport_amiga.c: ok on m68k (before: ok)" in out
    assert "plain.c: ok on" not in out                      # x86_64: not named
    assert "gone.c does not build here, with or without the marking: CONFIG_GONE " \
        "depends on BROKEN" in out


def test_check_only_wants_a_last_marking(tmp_path):
    from types import SimpleNamespace
    with pytest.raises(M.MarkingError, match="run `make marking` first"):
        M._last_record(SimpleNamespace(out=None), tmp_path / "marking.json")


def test_check_only_refuses_the_last_marking_of_another_tree(tmp_path):
    """work/marking.json is the last run's, whatever its tree: a 6.12 record is
    not checked against 6.1 (its files are 6.12's); the same version's is."""
    from types import SimpleNamespace
    patch = tmp_path / M.MARKING_NAME
    patch.write_text("")
    dest = tmp_path / "marking.json"
    dest.write_text(json.dumps({"patch": M.MARKING_NAME, "kernel_version": "6.12.118",
                                "files": ["drivers/md/bcache/bcache.h"]}))
    args = SimpleNamespace(out=None)
    with pytest.raises(M.MarkingError, match="made for Linux 6.12.118, not 6.1.192"):
        M._last_record(args, dest, tmp_path, "6.1.192")
    record = M._last_record(args, dest, tmp_path, "6.12.118")
    assert record["files"] == ["drivers/md/bcache/bcache.h"]
    assert record["patch_path"] == str(patch)


# ------------------------------------------------------------------ one semaphore's commit

MEMBER = "struct x {\n\tstruct semaphore\tic_sema;\n\tstruct semaphore other;\n};\n"
PRINTK = "int x;\nint y;\nstatic DEFINE_SEMAPHORE(console_sem);\n"


def small_repo(root: Path) -> Path:
    (root / "fs").mkdir(parents=True)
    (root / "kernel").mkdir()
    (root / "fs" / "x.h").write_text(MEMBER)
    (root / "kernel" / "printk.c").write_text(PRINTK)
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                       env={**os.environ, **GIT_ENV})
    return root


def decl(sid, path, line, kind):
    return {"id": sid, "class": "counting", "init": [], "ops": [],
            "declared": {"path": path, "line": line, "kind": kind}}


@needs_spatch
def test_marking_one_semaphore_is_the_marking_mechanism_and_revert_its_inverse(tmp_path):
    """What the runtime variants are made of (the line edit set_marking was replaced by
    classify.convert.marking): one commit per semaphore, only its declaration (the
    neighbour on the next line untouched; DEFINE_SEMAPHORE too), `git revert` the exact
    inverse, and a semaphore that is not there refused with no commit."""
    repo = small_repo(tmp_path / "k")
    ic, con = decl("fs/x.h:x.ic_sema", "fs/x.h", 2, "member"), \
        decl("kernel/printk.c:console_sem", "kernel/printk.c", 3, "static")
    gone = decl("fs/x.h:x.sem", "fs/x.h", 2, "member")
    marks = M.mark_commits(repo, [ic, con, gone])
    assert {i: m.status for i, m in marks.items()} == {
        ic["id"]: "marked", con["id"]: "marked", gone["id"]: "error"}
    assert not marks[gone["id"]].commit and marks[gone["id"]].why

    def show(commit, path):
        return subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"],
                              capture_output=True, text=True, check=True).stdout
    head = marks[con["id"]].commit
    assert show(marks[ic["id"]].commit, "fs/x.h").splitlines() == [
        "struct x {", "\tstruct arch_semaphore ic_sema;", "\tstruct semaphore other;", "};"]
    assert show(head, "kernel/printk.c") == PRINTK.replace("DEFINE_SEMAPHORE",
                                                           "DEFINE_ARCH_SEMAPHORE")
    subprocess.run(["git", "-C", str(repo), "revert", "--no-edit", marks[ic["id"]].commit],
                   check=True, capture_output=True, env={**os.environ, **GIT_ENV})
    assert (repo / "fs" / "x.h").read_text() == MEMBER
    assert "DEFINE_ARCH_SEMAPHORE(console_sem)" in (repo / "kernel" / "printk.c").read_text()
