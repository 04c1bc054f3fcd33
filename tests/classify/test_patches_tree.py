"""`make patches` on one small subsystem of the real 6.1 tree, verified.

Slow (make test only): drivers/xen, two patches of one file; about three minutes on
2 shared cores with a prepared work/build/allmodconfig (generation ~8 s, four C=2
builds of pvcalls-back.c), plus `make allmodconfig prepare` when that is cold.
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
    # a copy of the audit: patches.json is written next to it, not into reports/
    shutil.copy(COMMITTED / "audit.json", tmp_path / "audit.json")
    out = tmp_path / "work" / "patches"
    res = subprocess.run([sys.executable, "-m", "classify", "patches", "--kernel", str(TREE),
                          "--audit", str(tmp_path / "audit.json"), "--subsys", "drivers/xen",
                          "--out", str(out), "--no-report",
                          "--build-dir", str(REPO / "work" / "build" / "allmodconfig")],
                         cwd=REPO, capture_output=True, text=True, timeout=3600)
    assert res.returncode == 0, res.stdout + res.stderr
    patches = sorted(p.name for p in (out / "drivers-xen").glob("*.patch"))
    assert len(patches) == 3 and patches[0] == "0000-cover-letter.patch"
    records = json.loads((tmp_path / "patches.json").read_text())["semaphores"]
    xen = {k: v for k, v in records.items() if k.startswith("drivers/xen/")}
    assert len(xen) == 2
    for rec in xen.values():
        assert rec["verify"] == "verified", rec
        assert rec["checkpatch"]["errors"] == 0 and rec["new_sparse"] == []
