"""`make patches` on one small subsystem of the real 6.1 tree, verified.

Slow (make test only): drivers/xen, three semaphores in two patches of one
MAINTAINERS entry (the two pvcalls-back.c locks in one, and xenbus' reclaim_sem with
the 41 files that include xen/xenbus.h); minutes on 2 shared cores with a prepared work/build/allmodconfig,
plus `make allmodconfig prepare` when that is cold.  Signed-off-by is left out
(--no-signoff): CI's identity is a placeholder, which the command refuses to sign.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from classify.tree import TreeError, check_kernel_tree

REPO = Path(__file__).resolve().parents[2]
TREE = REPO / "work" / "linux-6.1"
COMMITTED = REPO / "reports" / "linux-6.1.192"


@pytest.mark.slow
def test_make_patches_for_drivers_xen(tmp_path):
    try:
        check_kernel_tree(TREE)
    except TreeError as err:
        pytest.skip(str(err))
    # a copy of the audit: whatever the command did, it could not touch reports/
    shutil.copy(COMMITTED / "audit.json", tmp_path / "audit.json")
    out = tmp_path / "work" / "patches"
    res = subprocess.run([sys.executable, "-m", "classify", "patches", "--kernel", str(TREE),
                          "--audit", str(tmp_path / "audit.json"), "--subsys", "drivers/xen",
                          "--out", str(out), "--no-report", "--no-signoff",
                          "--build-dir", str(REPO / "work" / "build" / "allmodconfig")],
                         cwd=REPO, capture_output=True, text=True, timeout=3600)
    assert res.returncode == 0, res.stdout + res.stderr
    series = {p.parent.name: p.name for p in out.glob("*/*.patch")}
    patches = sorted(p for p in out.glob("*/*.patch") if "cover-letter" not in p.name)
    assert len(patches) == 2, series      # one per driver
    # nothing is written beside the committed audit: the records stay in work/
    assert not (tmp_path / "patches.json").exists()
    records = json.loads((out / "patches.json").read_text())["semaphores"]
    xen = {k: v for k, v in records.items() if "xen" in k}
    assert len(xen) == 3
    for rec in xen.values():
        assert rec["verify"] == "verified", rec
        assert rec["checkpatch"] == {"errors": 0, "warnings": 0, "checks": 0}, rec
        assert rec["new_sparse"] == []
    for patch in patches:
        text = patch.read_text()
        message, notes = text.split("\n---\n", 1)
        rec = next(r for r in xen.values() if r["patch"] == patch.name)
        # the testing line is what the verification recorded, and only that
        assert rec["testing"].startswith("Compile-tested only: built with sparse")
        assert rec["testing"] in " ".join(message.split())
        # an added line past 80 columns is named in the notes, never silent
        for line in text.split("\ndiff --git ", 1)[1].splitlines():
            if line.startswith("+") and len(line[1:].expandtabs(8)) > 80:
                assert "longer than 80 columns" in " ".join(notes.split()), line
    pvcalls = next(p.read_text() for p in patches if "pvcalls" in p.name)
    assert "destroy_workqueue()" in pvcalls.split("\n---\n")[0]   # the wait it shows
