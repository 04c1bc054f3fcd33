"""Scenario evaluation: expected report missing -> fail, unexpected -> fail, negative
controls pass when the expected failure is observed."""

from qemu.ktap import KtapNode
from qemu.parse import ParsedLog, Report
from qemu.scenarios import (ExpectedReport, Scenario, evaluate, list_scenarios,
                            load_scenario)


def _parsed(verdict="completed", reports=(), kunit_ok=True):
    init = KtapNode("s2m-init", children=[KtapNode("boot", "ok", 1)], plan=1)
    kunit = KtapNode("kunit", plan=1, children=[KtapNode(
        "suite", "ok" if kunit_ok else "not ok", 1,
        children=[KtapNode("case", "ok" if kunit_ok else "not ok", 1)])])
    return ParsedLog(verdict, [kunit, init], {}, list(reports), 1, True, "", 10)


def _report(kind, title):
    return Report(kind, title, title, 1)


ABBA = Scenario("rule-abba", "", ("base",), reports=(
    ExpectedReport("circular_locking", "possible circular locking dependency"),))


def test_expected_report_present_passes():
    rep = _report("circular_locking",
                  "WARNING: possible circular locking dependency detected in f")
    assert evaluate(ABBA, _parsed(reports=[rep])).passed


def test_expected_report_missing_fails():
    ev = evaluate(ABBA, _parsed())
    assert not ev.passed
    assert ev.problems == ["missing expected report: circular_locking "
                           "'possible circular locking dependency'"]


def test_unexpected_report_fails():
    clean = Scenario("clean", "", ("base",), ktap_all_ok=True)
    ev = evaluate(clean, _parsed(reports=[_report("bad_unlock_balance", "WARNING: bad")]))
    assert not ev.passed and ev.problems[0].startswith("unexpected report: bad_unlock")
    assert evaluate(clean, _parsed()).passed


def test_wrong_kind_with_matching_title_does_not_count():
    rep = _report("recursive_locking", "possible circular locking dependency")
    assert not evaluate(ABBA, _parsed(reports=[rep])).passed


def test_kunit_failure_fails_clean():
    clean = Scenario("clean", "", ("base",), ktap_all_ok=True)
    ev = evaluate(clean, _parsed(kunit_ok=False))
    assert not ev.passed and "KTAP not all ok" in ev.problems[0]


def test_ktap_path_expectation():
    sc = Scenario("x", "", ("base",), ktap={"s2m-init/boot": "ok", "s2m-init/other": "ok"})
    assert evaluate(sc, _parsed()).problems == ["KTAP s2m-init/other: absent, expected ok"]


def test_negative_control_hang_passes_only_on_hang():
    hang = load_scenario("hang")
    rep = _report("hang", "s2m-harness: no console output for 5 s, killed qemu")
    assert evaluate(hang, _parsed("hang", [rep])).passed
    assert hang.silence == 5 and hang.timeout == 40
    # killed at the outer deadline instead: not the hang the control expects
    late = _report("hang", "s2m-harness: timeout after 40 s, killed qemu")
    assert not evaluate(hang, _parsed("hang", [late])).passed
    assert not evaluate(hang, _parsed("completed")).passed


def test_negative_control_panic_passes_only_on_panic():
    panic = load_scenario("panic")
    rep = _report("panic", "Kernel panic - not syncing: sysrq triggered crash")
    assert evaluate(panic, _parsed("panic", [rep])).passed
    ev = evaluate(panic, _parsed("completed"))
    assert not ev.passed and "verdict completed, expected panic" in ev.problems


def test_standard_set_loads():
    names = list_scenarios()
    assert {"clean", "hang", "panic", "smoke", "rule-abba"} <= set(names)
    for n in names:
        sc = load_scenario(n)
        # the bench kernels have their own base: no lock debugging, SMP
        assert sc.fragments[0] == ("bench-base" if n.startswith("bench") else "base")
        assert f"s2m.scenario={n}" in sc.append()


def test_bench_scenarios_are_not_standard_and_use_every_host_core():
    import os
    for n in ("bench", "bench-sizes-debug"):
        sc = load_scenario(n)
        assert not sc.standard and sc.smp == 0
        assert sc.vcpus() == len(os.sched_getaffinity(0))
        assert "sem-bench" in sc.fragments and "sem_bench=" in sc.cmdline
    assert "bench-nodebug" in load_scenario("bench").fragments
    assert load_scenario("clean").vcpus() == 1


def test_arch_expectation_replaces_the_reports_there_only():
    """rule-user_return: arm64 6.1 has no lockdep_sys_exit() (no generic entry), so
    no report is expected there; x86_64 must still report."""
    sc = load_scenario("rule-user_return")
    report = _report("lock_held_return_to_user", "WARNING: lock held when returning to "
                     "user space!")
    assert evaluate(sc.for_arch("x86_64"), _parsed(reports=[report])).passed
    assert not evaluate(sc.for_arch("x86_64"), _parsed()).passed
    assert evaluate(sc.for_arch("arm64"), _parsed()).passed
    assert not evaluate(sc.for_arch("arm64"), _parsed(reports=[report])).passed
    assert "lockdep_sys_exit" in sc.arch_reports["arm64"][0]


def test_every_arch_expectation_says_why():
    for name in list_scenarios():
        for arch, (why, _) in load_scenario(name).arch_reports.items():
            assert arch in ("arm64",) and len(why) > 40, name


def test_partial_pair_expects_the_mutex_debug_and_nothing_else():
    from qemu.parse import Lock
    from qemu.scenarios import console_problems
    partial, clean = load_scenario("partial"), load_scenario("partial-clean")
    assert partial.fragments == clean.fragments == ("base", "mode-partial", "rule-check")
    assert partial.standard and clean.standard
    md = _report("bad_unlock_balance", "WARNING: bad unlock balance detected! in check_partial")
    md.locks = [Lock("partial_md.lock", "partial_md.lock", "releasing")]
    assert evaluate(partial, _parsed(reports=[md])).passed
    # look-alike: the same report about a plain semaphore's lock is not the one expected
    sem = _report("bad_unlock_balance", "WARNING: bad unlock balance detected! in check_partial")
    sem.locks = [Lock("partial_event.lock", "partial_event.lock", "releasing")]
    ev = evaluate(partial, _parsed(reports=[sem]))
    assert not ev.passed and any("missing expected report" in p for p in ev.problems)
    assert any(p.startswith("unexpected report") for p in ev.problems)
    # the clean one takes no report at all
    assert evaluate(clean, _parsed()).passed
    assert not evaluate(clean, _parsed(reports=[md])).passed
    # and both need the line that says the plain semaphores ran
    lines = ["mutex_rule_check: running partial",
             "mutex_rule_check: partial: plain semaphores used as counting semaphores",
             "mutex_rule_check: done partial"]
    assert console_problems(partial, lines) == []
    assert console_problems(partial, lines[:1]) == [
        "console line missing: 'mutex_rule_check: partial: plain semaphores used as "
        "counting semaphores'", "console line missing: 'mutex_rule_check: done partial'"]
