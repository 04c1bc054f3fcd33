"""The committed runtime record is what its committed artifacts say.

reports/linux-6.1.192/runtime/ holds each boot's console log and each failed build's
compiler errors; runtime.json is re-derived from them with the code the run uses
(qemu.runrecord.derive) and must be the same bytes.  Negative controls: an edited log,
an edited build error or an edited record no longer agree.  The runtime table of
docs/runtime.md is the one runtime.json gives."""

import json
import shutil
from pathlib import Path

import pytest

from classify import lockmap
from classify.records.runtime import RuntimeRecord
from classify.report import readme
from qemu import parse, runrecord
from qemu.scenarios import load_scenario

REPO = Path(__file__).resolve().parents[2]
REPORTS = REPO / "reports" / "linux-6.1.192"
ARTS = REPORTS / "runtime"
AUDIT = json.loads((REPORTS / "audit.json").read_text())
COMMITTED = (REPORTS / "runtime.json").read_text()
RECORD = json.loads(COMMITTED)
RUN = json.loads((ARTS / "run.json").read_text())
LOG_BOOTS = [b for b in RUN["boots"] if "log" in b]
RUNTIME_DOC = REPO / "docs" / "runtime.md"     # holds the generated runtime table


def test_runtime_json_is_derived_from_the_committed_artifacts():
    assert runrecord.derive(AUDIT, ARTS).dumps() == COMMITTED


def test_every_artifact_belongs_to_a_boot_and_every_boot_has_one():
    named = {b.get("log") or b.get("build_errors") for b in RUN["boots"]} - {None}
    assert named == {p.name for p in ARTS.iterdir()} - {runrecord.RUN_FILE}
    assert [b["name"] for b in RUN["boots"]] == list(RECORD["boots"]) or \
        sorted(b["name"] for b in RUN["boots"]) == sorted(RECORD["boots"])


def copy_of_artifacts(tmp_path: Path) -> Path:
    dest = tmp_path / "runtime"
    shutil.copytree(ARTS, dest)
    return dest


def violated_with_class() -> tuple[str, dict]:
    """A semaphore a boot with a log reported, and that boot's entry (with its class)."""
    for sid, rec in sorted(RECORD["semaphores"].items()):
        for e in rec.get("boots", []):
            if e["result"] == "violated" and e.get("lock_class"):
                return sid, e
    pytest.skip("no violated record with a lock class")


def test_an_edited_log_no_longer_gives_the_committed_record(tmp_path):
    sid, entry = violated_with_class()
    arts = copy_of_artifacts(tmp_path)
    log = arts / next(b["log"] for b in LOG_BOOTS if b["name"] == entry["boot"])
    text = log.read_text(errors="replace")
    assert entry["lock_class"] in text
    log.write_text(text.replace(entry["lock_class"], "&edited->lock@kernel/edited.c:1"))
    edited = runrecord.derive(AUDIT, arts)
    assert edited.dumps() != COMMITTED
    assert edited.semaphores[sid].to_json() != RECORD["semaphores"][sid]


def test_an_edited_build_error_no_longer_gives_the_committed_record(tmp_path):
    failed = [b for b in RUN["boots"] if "build_errors" in b]
    if not failed:
        pytest.skip("every variant built")
    arts = copy_of_artifacts(tmp_path)
    path = arts / failed[0]["build_errors"]
    path.write_text(path.read_text().replace("error:", "error: edited:", 1))
    assert runrecord.derive(AUDIT, arts).dumps() != COMMITTED


def test_an_edited_record_is_not_what_the_artifacts_give():
    sid, entry = violated_with_class()
    edited = json.loads(COMMITTED)
    edited["semaphores"][sid]["title"] = "WARNING: lock held when returning to user space!" \
        if "bad unlock" in edited["semaphores"][sid]["title"] else \
        "WARNING: bad unlock balance detected!"
    assert runrecord.derive(AUDIT, ARTS).to_json() != edited


@pytest.mark.parametrize("boot", LOG_BOOTS, ids=[b["name"] for b in LOG_BOOTS])
def test_each_report_is_about_the_semaphore_its_kernel_left_a_mutex(boot):
    """A trust boot reports nothing; a challenge or probe boot reports only on the one
    semaphore it leaves a debug mutex (what the run's evaluation requires), but for the
    reports about no semaphore its scenario declares (bcache's reboot, a hang)."""
    text = (ARTS / boot["log"]).read_text(errors="replace")
    parsed = parse.parse_log(text)
    assert f"s2m.scenario={boot['scenario']}" in text
    index = lockmap.build_index(AUDIT["semaphores"])
    unmarked = boot["variant"][len("unmark:"):] if boot["variant"].startswith("unmark:") \
        else None
    declared = load_scenario(boot["scenario"]).reports
    reports = [r for r in parsed.reports if not any(d.matches(r) for d in declared)]
    for r in reports:
        assert unmarked in lockmap.report_ids(r, index), r.title
    if unmarked is None:
        assert reports == []


def test_the_docs_table_is_the_one_runtime_json_gives():
    text = RUNTIME_DOC.read_text()
    block = readme.table(RuntimeRecord.from_json(RECORD), AUDIT)
    assert block in text
    assert readme.replace_block(text, block) == text
    # negative control: a document whose table says something else is caught
    row = next(ln for ln in block.splitlines() if ln.startswith("| `"))
    wrong = text.replace(row, row.replace("|", "| edited", 1), 1)
    assert block not in wrong
    assert readme.main(["--check", "--readme", str(RUNTIME_DOC)]) == 0


def test_the_table_check_fails_on_an_edited_table(tmp_path, capsys):
    text = RUNTIME_DOC.read_text()
    row = next(ln for ln in readme.table(RuntimeRecord.from_json(RECORD), AUDIT).splitlines()
               if ln.startswith("| `"))
    edited = tmp_path / "runtime.md"
    edited.write_text(text.replace(row, row + " edited", 1))
    assert readme.main(["--check", "--readme", str(edited)]) == 1
    assert "not the one runtime.json gives" in capsys.readouterr().err
    assert readme.main(["--readme", str(edited)]) == 0
    assert edited.read_text() == text
