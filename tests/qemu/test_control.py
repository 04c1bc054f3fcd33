"""The pristine control's logic, without a kernel: a report of the series boot is the
tree's when the control boot shows it and the series' when it does not; a scenario's
expected origin is checked both ways; the control kernel's configuration leaves out
only what the pristine tree has no Kconfig entry for; the modules reach /init through
a second cpio archive.  The committed boots are checked in test_selftest_records.py."""

import subprocess

from classify.records.selftest import SERIES, TREE, UNATTRIBUTED, LockingApi, Selftests, \
    Torture, WwMutex
from qemu import control, pristine
from qemu.config import undefined_options
from qemu.ktap import KtapNode
from qemu.parse import ParsedLog, Report
from qemu.rootfs import Entry, newc, with_modules
from qemu.scenarios import (ExpectedReport, Scenario, control_set, load_scenario,
                            selftest_problems, standard_set)

WW = "DEBUG_LOCKS_WARN_ON(hlock->references < references) in stress_inorder_work"
FAULT = "WARNING: bad unlock balance detected! in check_double_unlock"


def _parsed(*reports, verdict="completed"):
    init = KtapNode("s2m-init", children=[KtapNode("boot", "ok", 1)], plan=1)
    return ParsedLog(verdict, [init], {}, list(reports), 1, True, "", 10)


def _report(kind, title, line=1):
    return Report(kind, title, title, line)


def test_a_report_the_control_shows_is_the_trees_one_it_does_not_is_the_series():
    ww, fault = _report("debug_locks_warn_on", WW, 900), _report("bad_unlock_balance", FAULT, 40)
    got = control.attribute([ww, fault], _parsed(_report("debug_locks_warn_on", WW, 870)))
    assert [(a.title, a.origin, a.control_line) for a in got] == [
        (WW, TREE, 870), (FAULT, SERIES, None)]


def test_without_a_control_that_ran_nothing_is_attributed():
    ww = _report("debug_locks_warn_on", WW)
    assert control.attribute([ww], None)[0].origin == UNATTRIBUTED
    cut_short = _parsed(_report("debug_locks_warn_on", WW), verdict="truncated")
    assert control.attribute([ww], cut_short)[0].origin == UNATTRIBUTED


SELFTEST = Scenario("selftest", "", ("base",), control=True)
FAULTY = Scenario("selftest-fault", "", ("base",), control=True, reports=(
    ExpectedReport("bad_unlock_balance", "bad unlock balance", origin=SERIES),))


def test_the_trees_report_passes_the_series_report_fails():
    ww = _report("debug_locks_warn_on", WW)
    ev = control.evaluate_with_control(SELFTEST, _parsed(ww), _parsed(ww))
    assert ev.passed, ev.problems
    ev = control.evaluate_with_control(SELFTEST, _parsed(ww), _parsed())
    assert not ev.passed
    assert ev.problems == [f"unexpected report: debug_locks_warn_on: {WW} (line 1)"]


def test_the_negative_control_must_be_classed_only_with_the_series():
    fault = _report("bad_unlock_balance", FAULT)
    assert control.evaluate_with_control(FAULTY, _parsed(fault), _parsed()).passed
    # the same report on the pristine boot too: the attribution says "tree", and the
    # scenario that injected it only into the series kernel fails
    ev = control.evaluate_with_control(FAULTY, _parsed(fault), _parsed(fault))
    assert not ev.passed
    assert "is also on pristine (the tree's), expected only with the series" in ev.problems[0]
    ev = control.evaluate_with_control(FAULTY, _parsed(fault), None)
    assert not ev.passed and "unattributed" in ev.problems[0]


def test_an_unattributed_report_names_the_command_that_settles_it():
    ev = control.evaluate_with_control(SELFTEST, _parsed(_report("warning", "WARNING in f")),
                                       None)
    assert any("make selftest-control" in p for p in ev.problems)


def test_the_selftest_expectations_both_ways():
    sc = Scenario("selftest", "", ("base",), locking_api="passed", ww_mutex="passed",
                  torture=("mutex_lock", "rwsem_lock"))
    good = Selftests(LockingApi("passed", 346, 346, 10), WwMutex("passed", 20),
                     [Torture("mutex_lock", "SUCCESS", 30), Torture("rwsem_lock", "SUCCESS", 40)])
    assert selftest_problems(sc, good) == []
    bad = Selftests(LockingApi("failed", 346, 300, 10, unexpected=46), None,
                    [Torture("mutex_lock", "FAILURE", 30)])
    assert selftest_problems(sc, bad) == [
        "locking API self-tests: failed (300/346), expected passed",
        "ww_mutex self-test: absent, expected passed",
        "locktorture mutex_lock: FAILURE, expected SUCCESS",
        "locktorture rwsem_lock: absent, expected SUCCESS"]


def test_the_control_scenarios_share_the_standard_full_kernel():
    assert control_set() == ["selftest", "selftest-fault"]
    full = load_scenario("clean").fragments
    assert full[-1] == "selftest"
    for name in control_set():
        sc = load_scenario(name)
        assert sc.fragments == full and name in standard_set()
        assert sc.locking_api == "passed"
    assert load_scenario("selftest-fault").reports[0].origin == SERIES
    broken = load_scenario("selftest-broken")
    assert broken.fragments == full and not broken.standard and broken.locking_api == "failed"


def test_config_differences_count_an_absent_option_as_n():
    series = {"CONFIG_DEBUG_MUTEX_FULL": "y", "CONFIG_DEBUG_MUTEX_NONE": "n", "CONFIG_A": "y"}
    got = pristine.config_differences(series, {"CONFIG_A": "y", "CONFIG_B": "n"})
    assert got == ["CONFIG_DEBUG_MUTEX_FULL: series y, pristine n"]
    assert pristine.config_differences({"CONFIG_A": "y"}, {"CONFIG_A": "m"}) == [
        "CONFIG_A: series y, pristine m"]


def test_only_the_options_no_kconfig_defines_are_left_out(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "Kconfig.debug").write_text(
        "config DEBUG_LOCKING_API_SELFTESTS\n\tbool \"x\"\nmenuconfig MODULES\n\tbool\n"
        "config DEBUG_MUTEX_FULL_NOT\n\tbool\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    wanted = {"CONFIG_DEBUG_LOCKING_API_SELFTESTS": "y", "CONFIG_MODULES": "y",
              "CONFIG_DEBUG_MUTEX_FULL": "y", "CONFIG_MUTEX_RULE_CHECK": "y"}
    assert undefined_options(tmp_path, wanted) == ["CONFIG_DEBUG_MUTEX_FULL",
                                                   "CONFIG_MUTEX_RULE_CHECK"]


def test_the_modules_are_a_second_archive_after_the_shared_initramfs(tmp_path):
    base = tmp_path / "initramfs.cpio"
    base.write_bytes(newc([Entry("init", 0o100755, b"#!/bin/sh\n")]))
    ko = tmp_path / "locktorture.ko"
    ko.write_bytes(b"\x7fELF module")
    dest = with_modules(base, [ko], tmp_path / "with.cpio")
    data = dest.read_bytes()
    assert data.startswith(base.read_bytes()) and len(data) % 512 == 0
    second = data[len(base.read_bytes()):]
    assert second.startswith(b"070701") and b"lib/modules/locktorture.ko\0" in second
    assert b"\x7fELF module" in second and second.rstrip(b"\0").endswith(b"TRAILER!!!")
    mtime = dest.stat().st_mtime_ns
    with_modules(base, [ko], dest)          # the same bytes: the file is left alone
    assert dest.stat().st_mtime_ns == mtime
