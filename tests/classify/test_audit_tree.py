"""The committed report of each tree `make setup` unpacks (6.1 and 6.12) is what
the audit produces today."""

import json
from pathlib import Path

import pytest

from classify.audit import run_audit
from classify.census import take_census
from classify.paths import SETUP_TREES
from classify.report import load_patches, load_runtime, to_html, to_json, to_markdown
from classify.tree import TreeError, check_kernel_tree

REPO = Path(__file__).resolve().parents[2]
TREES = list(SETUP_TREES)


def setup_tree(version: str):
    try:
        tree = check_kernel_tree(SETUP_TREES[version])
    except TreeError as err:
        pytest.skip(str(err))
    return tree, REPO / "reports" / f"linux-{tree.version}"


@pytest.mark.slow
@pytest.mark.parametrize("version", TREES)
def test_committed_report_is_regenerated(version):
    tree, committed = setup_tree(version)
    audit = run_audit(tree.path, REPO / "work" / "cache", version=tree.version)
    # the patch status `make patches` recorded (committed next to the report)
    patches = load_patches(committed / "patches.json")
    # and the runtime records of `make boot-test SCENARIOS=runtime` (6.1 only)
    runtime = load_runtime(committed / "runtime.json")
    if version == "6.1":
        assert runtime is not None
    data = to_json(audit, patches, runtime)
    assert data == json.loads((committed / "audit.json").read_text())
    assert to_markdown(audit, patches, runtime) == (committed / "audit.md").read_text()
    assert to_html(audit, patches, runtime) == (committed / "audit.html").read_text()
    # every function with a semaphore call is analysed (the UFS sysfs macros of
    # ufs_hba.host_sem expanded, census.expand)
    assert not audit.failures
    unanalysed = [r.decl.id for r in audit.results
                  if any(x.startswith("not analysed") for x in r.verdict.reasons)]
    assert unanalysed == []


@pytest.mark.slow
@pytest.mark.parametrize("version", TREES)
def test_every_census_semaphore_is_in_the_report(version):
    tree, committed = setup_tree(version)
    census = take_census(tree.path)
    data = json.loads((committed / "audit.json").read_text())
    assert {s["id"] for s in data["semaphores"]} == set(census.sems)


def test_the_bcache_semaphores_are_counting_on_both_trees():
    """6.12 defines bcache's closure callbacks through CLOSURE_CALLBACK(): with the
    macro hints the four binary semaphores released there get 6.1's verdict
    (the committed reports; no tree needed)."""
    classes = {}
    for version in TREES:
        [path] = sorted(REPO.glob(f"reports/linux-{version}.*/audit.json"))
        data = json.loads(path.read_text())
        classes[version] = {s["id"]: s["class"] for s in data["semaphores"]
                            if s["id"].startswith("drivers/md/bcache/")}
    assert classes["6.1"] == classes["6.12"]
    assert set(classes["6.12"].values()) == {"counting"} and len(classes["6.12"]) == 6
