"""The committed report of the default tree is what the audit produces today."""

import json
from pathlib import Path

import pytest

from classify.audit import run_audit
from classify.census import take_census
from classify.report import load_patches, load_runtime, to_html, to_json, to_markdown
from classify.tree import TreeError, check_kernel_tree

REPO = Path(__file__).resolve().parents[2]
TREE = REPO / "work" / "linux-6.1"
COMMITTED = REPO / "reports" / "linux-6.1.192"


def default_tree():
    try:
        return check_kernel_tree(TREE)
    except TreeError as err:
        pytest.skip(str(err))


@pytest.mark.slow
def test_committed_report_is_regenerated(tmp_path):
    tree = default_tree()
    audit = run_audit(tree.path, REPO / "work" / "cache", version=tree.version)
    # the patch status `make patches` recorded (committed next to the report)
    patches = load_patches(COMMITTED / "patches.json")
    # and the runtime records of `make boot-test SCENARIOS=runtime` (committed too)
    runtime = load_runtime(COMMITTED / "runtime.json")
    assert runtime is not None
    data = to_json(audit, patches, runtime)
    committed = json.loads((COMMITTED / "audit.json").read_text())
    assert data == committed
    assert to_markdown(audit, patches, runtime) == (COMMITTED / "audit.md").read_text()
    assert to_html(audit, patches, runtime) == (COMMITTED / "audit.html").read_text()


@pytest.mark.slow
def test_every_census_semaphore_is_in_the_report(tmp_path):
    tree = default_tree()
    census = take_census(tree.path)
    committed = json.loads((COMMITTED / "audit.json").read_text())
    assert {s["id"] for s in committed["semaphores"]} == set(census.sems)
