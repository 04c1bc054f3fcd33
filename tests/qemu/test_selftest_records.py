"""The committed locking test records (reports/linux-<version>/selftest/): each is what
qemu.control derives from its console log and the control log it names; the 6.1
ww_mutex warning is the tree's by the committed pristine boot, and the fault injected
only into the series kernel is the series' (the attribution asserted both ways, on the
real logs); the control kernel differs from the series kernel by the series alone."""

import re
from pathlib import Path

import pytest

from classify.records.selftest import (PASSED, SERIES, TREE, ControlRecord,
                                       SelftestRecord)
from qemu import control
from qemu.fullcli import the_series_reports
from qemu.parse import parse_log

ROOT = Path(__file__).resolve().parents[2]
DIRS = sorted(ROOT.glob("reports/linux-*/selftest"))
RECORDS = sorted(p for d in DIRS for p in [*d.glob("*.json"), *d.glob("pristine/*.json")]
                 if p.name != "control.json")
WW = "DEBUG_LOCKS_WARN_ON(hlock->references < references) in stress_inorder_work"


def version_of(d: Path) -> str:
    return d.parent.name.removeprefix("linux-")


def test_both_trees_have_their_records_and_controls():
    assert [version_of(d) for d in DIRS] == ["6.1.192", "6.12.118"]
    for d in DIRS:
        for name in ("selftest", "selftest-fault"):
            assert (d / f"{name}.json").is_file() and (d / f"{name}.log").is_file()
            assert (d / "pristine" / f"{name}.log").is_file()
        assert (d / "pristine" / "control.json").is_file()


def record_id(path: Path) -> str:
    d = path.parent if path.parent.name == "selftest" else path.parent.parent
    return f"{version_of(d)}/{path.relative_to(d).with_suffix('')}"


@pytest.mark.parametrize("path", RECORDS, ids=[record_id(p) for p in RECORDS])
def test_a_record_is_what_its_logs_give(path):
    rec = SelftestRecord.load(path)
    text = (path.parent / rec.log).read_text(errors="replace")
    ctl = (path.parent / rec.control).read_text(errors="replace") if rec.control else None
    again = control.derive(text, rec.scenario, rec.version, rec.kernel, rec.log, ctl,
                           rec.control)
    assert again == rec
    assert record_id(path).startswith(rec.version + "/")


@pytest.mark.parametrize("d", DIRS, ids=[version_of(d) for d in DIRS])
def test_every_tree_passes_the_locking_api_selftests(d):
    for kernel in ("", "pristine/"):
        rec = SelftestRecord.load(d / f"{kernel}selftest.json")
        api = rec.selftests.locking_api
        assert api.status == PASSED and api.passed == api.total >= 300, (kernel, api)
        assert [t.status for t in rec.selftests.torture] == ["SUCCESS", "SUCCESS"]
        assert rec.selftests.ww_mutex.status == PASSED and rec.verdict == "completed"


def test_the_61_ww_mutex_warning_is_the_trees():
    d = ROOT / "reports/linux-6.1.192/selftest"
    rec = SelftestRecord.load(d / "selftest.json")
    assert [(a.kind, a.title, a.origin) for a in rec.reports] == [
        ("debug_locks_warn_on", WW, TREE)]
    pristine = parse_log((d / "pristine/selftest.log").read_text())
    assert [(r.kind, r.title) for r in pristine.reports] == [("debug_locks_warn_on", WW)]
    assert pristine.reports[0].line == rec.reports[0].control_line
    assert rec.debug_locks == 0          # lockdep turned itself off, on pristine too
    assert SelftestRecord.load(d / "pristine/selftest.json").debug_locks == 0


def test_612_shows_no_report_and_keeps_lockdep_on():
    rec = SelftestRecord.load(ROOT / "reports/linux-6.12.118/selftest/selftest.json")
    assert rec.reports == [] and rec.debug_locks == 1


@pytest.mark.parametrize("d", DIRS, ids=[version_of(d) for d in DIRS])
def test_the_injected_fault_is_only_with_the_series(d):
    rec = SelftestRecord.load(d / "selftest-fault.json")
    assert [(a.kind, a.origin) for a in rec.reports] == [("bad_unlock_balance", SERIES)]
    assert rec.selftests.locking_api.status == PASSED
    pristine = parse_log((d / "pristine/selftest-fault.log").read_text())
    assert pristine.verdict == "completed" and pristine.reports == []


def test_the_attribution_both_ways_on_the_real_logs():
    """The same function, the same real logs: the tree's warning is classed "tree"
    against the pristine boot, and the series' fault is classed "series" against it;
    the fault's log as its own control would make it the tree's (the attribution is
    no constant)."""
    d = ROOT / "reports/linux-6.1.192/selftest"
    series = parse_log((d / "selftest.log").read_text())
    fault = parse_log((d / "selftest-fault.log").read_text())
    pristine = parse_log((d / "pristine/selftest.log").read_text())
    assert [a.origin for a in control.attribute(series.reports, pristine)] == [TREE]
    assert [a.origin for a in control.attribute(fault.reports, pristine)] == [SERIES]
    assert [a.origin for a in control.attribute(fault.reports, fault)] == [TREE]
    assert [a.origin for a in control.attribute(series.reports, fault)] == [SERIES]


def test_full_kernel_boot_names_the_trees_warning(capsys):
    """`make full-kernel BOOT=1` on a config with the tests: the 6.1 warning is the
    tree's and does not fail the boot; the series' fault does."""
    d = ROOT / "reports/linux-6.1.192/selftest"
    text = (d / "selftest.log").read_text()
    assert the_series_reports(text, parse_log(text), ROOT / "work/linux-6.1") == []
    out = capsys.readouterr().out
    assert "locking API 346/346 passed" in out and "also on pristine (the tree's)" in out
    text = (d / "selftest-fault.log").read_text()
    assert the_series_reports(text, parse_log(text), ROOT / "work/linux-6.1") == [
        "WARNING: bad unlock balance detected! in check_double_unlock"]


def series_symbols(version: str) -> set[str]:
    major_minor = ".".join(version.split(".")[:2])
    text = "".join(p.read_text() for p in (ROOT / "kernel-patches" / major_minor).glob(
        "*.patch"))
    return {f"CONFIG_{m}" for m in re.findall(r"^\+\s*(?:menu)?config\s+(\w+)", text, re.M)}


@pytest.mark.parametrize("d", DIRS, ids=[version_of(d) for d in DIRS])
def test_the_control_kernel_differs_by_the_series_alone(d):
    rec = ControlRecord.load(d / "pristine" / "control.json")
    ours = series_symbols(rec.version)
    assert rec.dropped and set(rec.dropped) <= ours
    assert "CONFIG_DEBUG_MUTEX_FULL" in rec.dropped
    assert rec.differences, "the two .config files were compared"
    for line in rec.differences:
        sym = line.split(":", 1)[0]
        assert sym in ours, line
    assert rec.scenarios == ["selftest", "selftest-fault"]


def test_the_series_symbols_are_read_from_the_patches():
    """The look-alike: an option of the tree is no symbol of the series."""
    ours = series_symbols("6.1.192")
    assert "CONFIG_DEBUG_MUTEX_FULL" in ours and "CONFIG_PROVE_LOCKING" not in ours
