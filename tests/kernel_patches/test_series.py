"""The series itself, against the real 6.1 tree: it applies with `git am` in
order, every commit is one of its patches, and checkpatch --strict finds no
error in any of them.  (That a patch which does not apply is named is tested on
a small tree in tests/qemu/test_source.py.)"""

import re
import subprocess

import pytest

from qemu.common import DEFAULT_KERNEL, SERIES_FILE
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
