"""Each series itself, against the real tree of its version (6.1 and 6.12, both
unpacked by `make setup`): it applies with `git am` in order, every commit is one
of its patches, and checkpatch --strict finds no error in any of them.  (That a
patch which does not apply is named is tested on a small tree in
tests/qemu/test_source.py.)"""

import os
import re
import subprocess

import pytest

from classify.paths import SETUP_TREES
from classify.versions import series_file
from qemu.common import PROJECT_DIR, WORK_DIR
from qemu.source import prepare_source, read_series

pytestmark = [pytest.mark.slow]

# (base version, its tree, its series' patches)
SERIES = [(v, tree, read_series(PROJECT_DIR / "kernel-patches" / v / "series"))
          for v, tree in SETUP_TREES.items()]


def needs_tree(tree):
    if not (tree / ".git").exists():
        pytest.skip(f"no {tree.name} tree: run `make setup`")


def subject(patch) -> str:
    text = patch.read_text()
    m = re.search(r"^Subject: (?:\[PATCH[^\]]*\] )?(.*(?:\n .*)*)", text, re.M)
    return " ".join(m.group(1).split())


@pytest.mark.parametrize("version,tree,patches", SERIES, ids=[s[0] for s in SERIES])
def test_series_applies_to_its_pristine_tree_in_order(version, tree, patches):
    needs_tree(tree)
    assert series_file(tree) == PROJECT_DIR / "kernel-patches" / version / "series"
    source = prepare_source(tree)
    log = subprocess.run(["git", "-C", str(source.tree), "log", "--reverse", "--format=%s",
                          "pristine..HEAD"], capture_output=True, text=True, check=True)
    assert log.stdout.splitlines() == [subject(p) for p in patches]
    assert len(patches) >= 6


@pytest.mark.parametrize("tree,patch", [(t, p) for _, t, ps in SERIES for p in ps],
                         ids=[f"{v}-{p.name[:4]}" for v, _, ps in SERIES for p in ps])
def test_checkpatch_strict_finds_no_error(tree, patch):
    needs_tree(tree)
    result = subprocess.run(["perl", "scripts/checkpatch.pl", "--strict", "--no-color",
                             "--show-types", str(patch)],
                            cwd=tree, capture_output=True, text=True)
    total = re.search(r"^total: (\d+) errors, (\d+) warnings", result.stdout, re.M)
    assert total, result.stdout[-2000:] + result.stderr
    assert total.group(1) == "0", result.stdout
    assert "Signed-off-by:" in patch.read_text()


@pytest.mark.parametrize("version,tree,patches", SERIES, ids=[s[0] for s in SERIES])
def test_the_marking_is_the_one_the_audit_gives(tmp_path, version, tree, patches):
    """kernel-patches/<version>/0004 is generated (make marking): regenerating it
    from the committed audit gives the committed file, byte for byte.  6.12's
    takes about as long as 6.1's (minutes of spatch): CI runs 6.1's, and 6.12's
    with SEM2MUTEX_ALL_SLOW=1; a fast test (test_marking_matches_audit.py) checks
    on every run that 6.12's is about the counting pool of the committed audit."""
    needs_tree(tree)
    if version != "6.1" and os.environ.get("SEM2MUTEX_ALL_SLOW") != "1":
        pytest.skip(f"the {version} marking regenerated: SEM2MUTEX_ALL_SLOW=1")
    from classify.convert.marking import MARKING_NAME, generate
    from classify.convert.select import load_audit
    from classify.tree import kernel_version
    audit = load_audit(PROJECT_DIR / "reports" / f"linux-{kernel_version(tree)}" / "audit.json")
    out = tmp_path / MARKING_NAME
    res = generate(tree, audit, out, WORK_DIR / "trees" / f"marking-test-{version}")
    committed = PROJECT_DIR / "kernel-patches" / version / MARKING_NAME
    assert out.read_text() == committed.read_text()
    counting = sum(1 for s in audit["semaphores"] + audit.get("allocated", [])
                   if s["class"] == "counting")
    # every counting semaphore, declared or allocated, is marked, or named with the reason it is not
    assert len(res.marks) == counting
    for m in res.marks:
        assert m.status == "marked" or m.why, m
