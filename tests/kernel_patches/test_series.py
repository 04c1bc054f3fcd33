"""The series itself, against the real 6.1 tree: it applies with `git am` in
order, every commit is one of its patches, and checkpatch --strict finds no
error in any of them.  (That a patch which does not apply is named is tested on
a small tree in tests/qemu/test_source.py.)"""

import re
import subprocess

import pytest

from qemu.common import DEFAULT_KERNEL, PROJECT_DIR, SERIES_FILE, WORK_DIR
from qemu.source import prepare_source, read_series

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not (DEFAULT_KERNEL / ".git").exists(),
                                 reason="no 6.1 tree: run `make setup`")]

PATCHES = read_series(SERIES_FILE)


def subject(patch) -> str:
    text = patch.read_text()
    m = re.search(r"^Subject: (?:\[PATCH[^\]]*\] )?(.*(?:\n .*)*)", text, re.M)
    return " ".join(m.group(1).split())


def test_series_applies_to_pristine_6_1_in_order():
    source = prepare_source(DEFAULT_KERNEL)
    log = subprocess.run(["git", "-C", str(source.tree), "log", "--reverse", "--format=%s",
                          "pristine..HEAD"], capture_output=True, text=True, check=True)
    assert log.stdout.splitlines() == [subject(p) for p in PATCHES]
    assert len(PATCHES) >= 6


@pytest.mark.parametrize("patch", PATCHES, ids=[p.name[:4] for p in PATCHES])
def test_checkpatch_strict_finds_no_error(patch):
    result = subprocess.run(["perl", "scripts/checkpatch.pl", "--strict", "--no-color",
                             "--show-types", str(patch)],
                            cwd=DEFAULT_KERNEL, capture_output=True, text=True)
    total = re.search(r"^total: (\d+) errors, (\d+) warnings", result.stdout, re.M)
    assert total, result.stdout[-2000:] + result.stderr
    assert total.group(1) == "0", result.stdout
    assert "Signed-off-by:" in patch.read_text()


def test_the_marking_is_the_one_the_audit_gives(tmp_path):
    """kernel-patches/0004 is generated (make marking): regenerating it from the
    committed audit gives the committed file, byte for byte."""
    from classify.convert.marking import MARKING_NAME, generate
    from classify.convert.select import load_audit
    audit = load_audit(PROJECT_DIR / "reports" / "linux-6.1.192" / "audit.json")
    out = tmp_path / MARKING_NAME
    res = generate(DEFAULT_KERNEL, audit, out, WORK_DIR / "trees" / "marking-test")
    committed = SERIES_FILE.parent / MARKING_NAME
    assert out.read_text() == committed.read_text()
    counting = sum(1 for s in audit["semaphores"] if s["class"] == "counting")
    # every counting semaphore is marked, or named with the reason it is not
    assert len(res.marks) == counting
    for m in res.marks:
        assert m.status == "marked" or m.why, m
