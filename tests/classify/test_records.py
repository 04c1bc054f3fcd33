"""classify/records/: the typed records between the stages read back what they write,
the committed files included, and refuse in one line a file that is not theirs."""

import json
from pathlib import Path

import pytest

from classify.records.base import RecordError
from classify.records.boot import Boot, Lock, LockClass, Report, lock_class_of
from classify.records.runtime import (BootEntry, RuntimeRecord, SemRuntime, VariantRecord)

REPO = Path(__file__).resolve().parents[2]
REPORTS = REPO / "reports" / "linux-6.1.192"


def test_the_committed_runtime_record_reads_back_to_the_same_bytes():
    text = (REPORTS / "runtime.json").read_text()
    rec = RuntimeRecord.load(REPORTS / "runtime.json")
    assert rec.dumps() == text
    assert RuntimeRecord.from_json(rec.to_json()) == rec


def test_the_runtime_entries_of_the_committed_audit_are_runtime_records():
    for s in json.loads((REPORTS / "audit.json").read_text())["semaphores"]:
        assert SemRuntime.from_json(s["runtime"]).to_json() == s["runtime"]


def test_an_absent_key_is_none_and_none_is_an_absent_key():
    e = BootEntry("b", "mutex", "clean", ops=3, lock_class="c")
    assert e.to_json() == {"boot": "b", "ran_as": "mutex", "result": "clean", "ops": 3,
                           "lock_class": "c"}
    assert BootEntry.from_json(e.to_json()) == e
    assert VariantRecord.from_json({"unmarks": "x"}) == VariantRecord(unmarks="x")


def test_a_boot_reads_back_with_its_reports_and_classes():
    boot = Boot("b", "unmark:x", frozenset({"z", "y"}),
                [LockClass.named("&a->s@fs/a.c:5#2", 7, "+.+.")],
                [Report("warning", "WARNING in f", "WARNING: CPU: 0 PID: 1 at x f", 12,
                        locks=[Lock.named("&a->s@fs/a.c:5/1", "involved")], frames=["f"],
                        detail="mutex_debug &a->s@fs/a.c:5 initialized with count 2")])
    data = boot.to_json()
    assert data["schema"] == "sem2mutex-boot-1" and data["marked"] == ["y", "z"]
    assert Boot.from_json(json.loads(json.dumps(data))) == boot
    assert boot.classes[0].lock_class == "&a->s@fs/a.c:5"
    assert boot.reports[0].locks[0].lock_class == "&a->s@fs/a.c:5"


@pytest.mark.parametrize("name,cls", [("&x->lock#2/1", "&x->lock"), ("&x->lock/3", "&x->lock"),
                                      ("&x->lock#12", "&x->lock"), ("rtnl_mutex", "rtnl_mutex"),
                                      ("#2", "#2")])
def test_lock_class_of(name, cls):
    assert lock_class_of(name) == cls


def test_the_wrong_file_is_refused_in_one_line(tmp_path):
    with pytest.raises(RecordError) as err:
        RuntimeRecord.load(REPORTS / "audit.json")
    assert str(err.value) == (f"{REPORTS / 'audit.json'}: not a RuntimeRecord: schema "
                              "'sem2mutex-audit-1', expected 'sem2mutex-runtime-1'")
    bad = tmp_path / "runtime.json"
    bad.write_text("{not json")
    with pytest.raises(RecordError, match=r"runtime.json: not a RuntimeRecord: not JSON"):
        RuntimeRecord.load(bad)
    bad.write_text("[]")
    with pytest.raises(RecordError, match=r"not a RuntimeRecord \(a JSON object\), but list"):
        RuntimeRecord.load(bad)


def test_a_damaged_record_is_refused_where_it_is_damaged():
    good = json.loads((REPORTS / "runtime.json").read_text())
    sid = next(iter(good["semaphores"]))
    for edit, message in [
            (lambda d: d.pop("counts"), "not a RuntimeRecord: no 'counts'"),
            (lambda d: d["semaphores"][sid].update(status=3),
             f"RuntimeRecord.semaphores['{sid}'].status: int, expected str"),
            (lambda d: d["semaphores"][sid].update(colour="red"),
             "not a SemRuntime: unknown field(s) colour"),
            (lambda d: d["boots"].update(x={"scenario": "x", "variant": "trust",
                                            "verdict": "completed", "reports": "none"}),
             "RuntimeRecord.boots['x'].reports: str, expected a list")]:
        data = json.loads(json.dumps(good))
        edit(data)
        with pytest.raises(RecordError) as err:
            RuntimeRecord.from_json(data)
        assert message in str(err.value) and "\n" not in str(err.value)
