"""The reader of the kernel's own locking tests (qemu/selftests.py), on real console
logs of our boots: the passing summary and the failing one, locktorture's runs and
the ww_mutex test; each also as a negative case (the log edited in memory, never a
fixture written by hand)."""

from pathlib import Path

from classify.records.selftest import (DISABLED, EXPECTED_FAILURES, FAILED, PASSED,
                                       UNFINISHED)
from qemu.parse import clean_lines, parse_log
from qemu.selftests import locking_api, read_selftests, torture, ww_mutex

LOGS = Path(__file__).parent / "logs"


def body(name: str) -> str:
    return (LOGS / name).read_text(errors="replace").partition("\n\n")[2]


PASSING = body("ww-mutex-references-overflow.log")      # 6.1.192 FULL, `selftest`
FAILING = body("locking-selftest-unexpected-failures.log")   # lockdep.prove_locking=0
HEADER = len((LOGS / "ww-mutex-references-overflow.log").read_text().partition(
    "\n\n")[0].splitlines()) + 1


def test_the_passing_summary():
    api = read_selftests(PASSING).locking_api
    assert (api.status, api.passed, api.total, api.unexpected) == (PASSED, 346, 346, 0)
    assert api.failed_tests == []
    assert PASSING.splitlines()[api.line - 1].startswith("Good, all 346 testcases passed!")


def test_the_failing_summary_and_the_testcases_it_failed():
    api = read_selftests(FAILING).locking_api
    assert (api.status, api.total, api.unexpected, api.passed) == (FAILED, 346, 196, 150)
    # every FAILED cell of the table is named, with its column
    assert len(api.failed_tests) == api.unexpected
    assert api.failed_tests[:3] == ["A-A deadlock [spin]", "A-A deadlock [wlock]",
                                    "A-A deadlock [mutex]"]
    assert "BUG: 196 unexpected failures (out of 346)" in FAILING.splitlines()[api.line - 1]
    # the summary is a report too: the boot's reports say lockdep found a problem
    assert [r.kind for r in parse_log(FAILING).reports] == ["bug"]


def test_a_summary_cut_short_or_absent():
    lines = clean_lines(PASSING)
    cut = [ln for ln in lines if not ln.startswith("Good, all")]
    assert locking_api(cut).status == UNFINISHED
    assert locking_api([ln for ln in lines if "Locking API testsuite" not in ln]) is None
    off = ["----------------------------------", "| Locking API testsuite disabled |"]
    assert locking_api(off).status == DISABLED


def test_the_other_summaries_of_lib_locking_selftest():
    """Without PROVE_LOCKING the kernel prints its expected failures (the same lines
    as the real table's, with the summary printk's words)."""
    lines = clean_lines(PASSING)
    n = next(i for i, ln in enumerate(lines) if ln.startswith("Good, all"))
    got = locking_api(lines[:n] + [" 36 out of 346 testcases failed, as expected. |"])
    assert (got.status, got.expected_failures, got.passed) == (EXPECTED_FAILURES, 36, 310)


def test_locktorture_runs():
    runs = read_selftests(PASSING).torture
    assert [(t.torture_type, t.status, t.fail) for t in runs] == [
        ("mutex_lock", "SUCCESS", 0), ("rwsem_lock", "SUCCESS", 0)]
    assert runs[0].writes > 0 and runs[0].reads is None
    assert runs[1].writes > 0 and runs[1].reads > 0


def test_a_locktorture_failure_and_a_run_with_no_end():
    lines = clean_lines(PASSING)
    failed = [ln.replace("End of test: SUCCESS", "End of test: FAILURE")
              .replace("Fail: 0", "Fail: 1") for ln in lines]
    assert [(t.status, t.fail > 0) for t in torture(failed)] == [("FAILURE", True)] * 2
    unended = [ln for ln in lines if "rwsem_lock-torture:--- End" not in ln]
    assert [t.status for t in torture(unended)] == ["SUCCESS", UNFINISHED]


def test_the_ww_mutex_selftest_passed_and_its_failure():
    lines = clean_lines(PASSING)
    assert ww_mutex(lines).status == PASSED
    failed = [ln for ln in lines if not ln.startswith("All ww mutex selftests passed")]
    failed.append("stress (stress_inorder_work) failed with -35")
    got = ww_mutex(failed)
    assert got.status == FAILED and got.errors == ["stress (stress_inorder_work) failed with -35"]
    assert ww_mutex(failed[:-1]).status == UNFINISHED
    assert ww_mutex(clean_lines(FAILING)) is None     # not loaded in that boot


def test_line_numbers_are_those_of_the_file():
    whole = (LOGS / "ww-mutex-references-overflow.log").read_text()
    tests = read_selftests(whole)
    assert whole.splitlines()[tests.ww_mutex.line - 1] == "Beginning ww mutex selftests"
    assert tests.ww_mutex.line == read_selftests(PASSING).ww_mutex.line + HEADER
