"""The report parser on other machines' logs: each format it must read (derived
fixtures, see logs/derive.py) and the look-alikes it must not misread."""

import importlib.util
from pathlib import Path

import pytest

from qemu.parse import (_LOCK, _LOCK_API, _REPORTING, _frame, clean_lines, find_reports,
                        parse_log, verdict)

LOGS = Path(__file__).parent / "logs"
_spec = importlib.util.spec_from_file_location("derive", LOGS / "derive.py")
derive = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(derive)


def reports(name: str):
    body = (LOGS / name).read_text(errors="replace").partition("\n\n")[2]
    return find_reports(clean_lines(body))


@pytest.mark.parametrize("name", sorted(derive.DERIVED))
def test_derived_fixture_is_the_scripts_output(name):
    assert (LOGS / name).read_text(errors="replace") == derive.render(name), \
        f"run: python3 tests/qemu/logs/derive.py ({name} was edited by hand?)"


def _summary(rep):
    return (rep.kind, rep.title, rep.task, [(lk.role, lk.lock_class) for lk in rep.locks],
            rep.frames[:4])


@pytest.mark.parametrize("name", sorted(set(derive.DERIVED) - {"twice-warning-one-holder.log"}))
def test_derived_log_reads_as_its_source(name):
    """Another kernel's, machine's or tool's spelling of the same event: same kind,
    title, task, locks and culprit frames as the real log it was derived from."""
    source = derive.DERIVED[name][0]
    if not reports(source):         # a clean boot: clean in every form
        assert reports(name) == []
        return
    ours, theirs = reports(source)[0], reports(name)[0]
    if name.startswith(("arm64-old-oops", )):   # a different fault banner, same place
        assert (theirs.kind, theirs.task) == (ours.kind, ours.task)
        return
    assert _summary(theirs)[:4] == _summary(ours)[:4]
    if not name.startswith(("arm-", "arm64-")):     # arm has no "? " and one frame less
        assert theirs.frames == ours.frames


# ------------------------------------------------------------------ one report per event

def test_a_splat_printed_twice_back_to_back_is_one_report():
    assert len(reports("warning-one-holder.log")) == 1
    assert len(reports("twice-warning-one-holder.log")) == 1


def test_two_different_reports_back_to_back_stay_two():
    assert [r.kind for r in reports("sleep-in-atomic.log")] == \
        ["sleep_in_atomic", "invalid_wait_context"]


def test_warning_line_before_its_debug_locks_message_is_one_report():
    reps = reports("arm-debug-locks-warn-on-memset-init.log")
    assert [r.kind for r in reps] == ["debug_locks_warn_on"]
    assert reps[0].headline == "DEBUG_LOCKS_WARN_ON(lock->magic != lock)"
    # look-alike: a WARNING whose next line is not a lockdep message stays a warning
    assert [r.kind for r in reports("warning-one-holder.log")] == ["warning"]


# ------------------------------------------------------------------ lockdep before 4.14

def test_bracketed_banners_of_every_era():
    for line, kind in [
            ("[ INFO: possible circular locking dependency detected ]", "circular_locking"),
            ("[ INFO: possible recursive locking detected ]", "recursive_locking"),
            ("[ BUG: bad unlock balance detected! ]", "bad_unlock_balance"),
            ("[ BUG: held lock freed! ]", "held_lock_freed"),
            ("[ BUG: syz-executor/13525 still has locks held! ]", "lock_held_at_exit"),
            ("[ BUG: lock held at task exit time! ]", "lock_held_at_exit"),
            ("[ BUG: lock held when returning to user space! ]", "lock_held_return_to_user"),
            ("[ INFO: inconsistent lock state ]", "inconsistent_lock_state"),
            ("[ INFO: possible irq lock inversion dependency detected ]", "irq_lock_inversion"),
            ("[ INFO: HARDIRQ-safe -> HARDIRQ-unsafe lock order detected ]",
             "irq_unsafe_lock_order"),
            ("[ INFO: suspicious RCU usage. ]", "suspicious_rcu"),
            ("[ INFO: suspicious rcu_dereference_check() usage. ]", "suspicious_rcu"),
            ("[ BUG: Nested lock was not taken ]", "nested_lock"),
            ("[ BUG: bad contention detected! ]", "bad_contention"),
            ("[ BUG: Invalid wait context ]", "invalid_wait_context")]:
        assert [r.kind for r in find_reports([line])] == [kind], line
    assert find_reports(["[ INFO: suspicious RCU usage. ]"])[0].title == \
        "WARNING: suspicious RCU usage"
    assert find_reports(["[ BUG: Invalid wait context ]"])[0].title == \
        "[ BUG: Invalid wait context ]"


def test_bracketed_look_alikes_are_not_reports():
    for line in ["[ INFO: something else detected ]",
                 "[ INFO: possible recursive locking detected",     # no closing bracket
                 "foo: [ BUG: bad unlock balance detected! ]",      # not at line start
                 "[    1.234567]"]:
        assert find_reports(clean_lines(line)) == [], line


def test_lock_lines_of_every_era():
    for line, name, at in [
            (" #0:  (&sb->s_type->i_mutex_key#3){+.+.+.}, at: [<ffffffff811e5b6c>] "
             "lookup_slow+0x2c/0xa0", "&sb->s_type->i_mutex_key#3", "lookup_slow+0x2c/0xa0"),
            (" (&dev->mutex){......}", "&dev->mutex", None),
            (" #1:  (&(&q->__queue_lock)->rlock){-.-...}, at: [<c110707c>] f+0x4c/0x80",
             "&(&q->__queue_lock)->rlock", "f+0x4c/0x80"),
            ("ffff88800360d3e0 ((wq_completion)xfs-log/vda){+.+.}-{0:0}, at: "
             "process_one_work+0x16d/0x310", "(wq_completion)xfs-log/vda",
             "process_one_work+0x16d/0x310"),
            ("-> #1 (rule_b.lock){+.+.}:", "rule_b.lock", None)]:
        m = _LOCK.search(line)
        assert m and (m["name"], m["at"]) == (name, at), line
    for line in ["  lock(rule_b.lock);", "(foo){bar baz}", "struct (x){ y }",
                 "Memory: 230948K/261624K available (4098K kernel code)"]:
        assert _LOCK.search(line) is None, line


# ------------------------------------------------------------------ stack frames

def test_frames_of_every_arch_and_era():
    for line, func in [
            (" dump_stack_lvl+0x43/0x46", "dump_stack_lvl"),                  # x86, arm64
            (" xfs_buf_lock+0x1c/0x40 [xfs]", "xfs_buf_lock"),
            (" [<ffffffff81234567>] func+0x12/0x34", "func"),                # x86 < 4.9
            ("[<ffff800008123456>] foo+0x1c/0x40", "foo"),                    # arm64 < 4.15
            ("[<c0123456>] (func) from [<c0123457>] (caller+0x1c/0x40)", "func"),   # arm
            ("[<c0123456>] (func+0x10/0x20) from [<c0123457>] (caller+0x1c/0x40)", "func"),
            (" unwind_backtrace from show_stack+0x10/0x14", "unwind_backtrace"),   # arm 6.1
            ("  ___might_sleep.cold+0x5/0x9", "___might_sleep.cold")]:
        assert _frame(line) == (func, True), line
    assert _frame(" [<ffffffff81234567>] ? func+0x12/0x34") == ("func", False)
    for line in ["RIP: 0010:[<ffffffff81234567>]  [<ffffffff81234567>] func+0x12/0x34",
                 "hardirqs last  enabled at (9057): [<ffffffff8105f29e>] f+0x54/0x57",
                 "pc : bug_thread+0xd/0xf", "PC is at bug_thread+0xd/0xf",
                 " r7:c0123456 r6:00000000 r5:c0de0000",
                 "Function entered at [<c0123456>] from [<c0123457>]",
                 "RIP: 0010:bug_thread+0xd/0xf",
                 "ffffffff818507e0 (rule_a.lock){+.+.}-{3:3}, at: mutex_debug_down+0xb/0xd"]:
        assert _frame(line) is None, line


def test_culprit_skips_lock_lockdep_might_sleep_scheduler_and_kasan_internals():
    for func in ["___might_sleep.cold", "__might_resched", "__might_sleep", "might_fault",
                 "mark_held_locks", "__schedule", "schedule", "schedule_timeout",
                 "schedule_preempt_disabled", "print_address_description.constprop.0",
                 "dump_stack_lvl", "lock_acquire", "lock_acquire.part.0", "kasan_report",
                 "__kasan_check_read", "dump_backtrace", "el1h_64_sync_handler",
                 "wait_for_completion"]:
        assert _REPORTING.match(func), func
    for func in ["__mutex_lock", "mutex_lock_nested", "down_read", "up_write",
                 "_raw_spin_lock_irqsave"]:
        assert _LOCK_API.match(func), func
    for func in ["schedule_work", "up_thread", "xlog_ioend_work", "check_abba",
                 "lock_torture_writer", "sched_show_task_foo", "kasan"]:
        assert not _REPORTING.match(func) and not _LOCK_API.match(func), func


# ------------------------------------------------------------------ arm64, arm oopses

def test_arm_oops_banners():
    rep = reports("arm64-old-oops-null-deref.log")
    assert [r.kind for r in rep] == ["oops"]        # "Internal error" is the same oops
    assert rep[0].headline.startswith("Unable to handle kernel NULL pointer dereference")
    assert [r.kind for r in reports("arm64-bug-kernel-bug-at.log")] == ["bug"]
    for line in ["Unable to handle kernel paging request at virtual address ffff000012345678",
                 "Internal error: Oops: 0000000096000005 [#1] PREEMPT SMP"]:
        assert [r.kind for r in find_reports([line])] == ["oops"], line
    assert find_reports(["Internal error: Oops: 0000000096000005 [#2] PREEMPT SMP"])[0].title \
        == "Internal error: Oops: 0000000096000005"
    # look-alikes: a driver's message, not the fault handler's
    for line in ["mmc0: Unable to handle kernel request", "foo: Internal error: bad cmd"]:
        assert find_reports([line]) == [], line


# ------------------------------------------------------------------ hung tasks

def test_hung_task_title_is_stable_and_keeps_the_comm():
    a = find_reports(["INFO: task kworker/0:1:123 blocked for more than 120 seconds."])[0]
    b = find_reports(["INFO: task kworker/0:1:4567 blocked for more than 245 seconds."])[0]
    assert a.title == b.title == "INFO: task kworker/0:1 blocked for more than N seconds"
    assert (a.task, b.task) == ("kworker/0:1/123", "kworker/0:1/4567")
    rep = [r for r in reports("hung-task-recursive-locking.log") if r.kind == "hung_task"]
    assert rep[0].title == \
        "INFO: task mutex_rule_chk blocked for more than N seconds in recursive_thread"
    assert rep[0].task == "mutex_rule_chk/17" and rep[0].locks == []


def test_hung_task_verdict():
    body = (LOGS / "hung-task-recursive-locking.log").read_text().partition("\n\n")[2]
    assert parse_log(body).verdict == "hang"
    # look-alike: the same report in a log whose /init went on to finish
    lines = clean_lines(body) + ["s2m-init: done"]
    assert verdict(lines, find_reports(lines))[0] == "completed"
    # and a log with no report at all, cut short, stays truncated
    lines = clean_lines(body)[:50]
    assert verdict(lines, find_reports(lines))[0] == "truncated"


# ------------------------------------------------------------------ prefixes

def test_prefixes_of_every_tool_go_and_the_kernels_own_text_stays():
    for raw, clean in [
            ("[    1.234567] foo", "foo"),
            ("[    1.234567][    T1]  dump_stack+0x10/0x12", " dump_stack+0x10/0x12"),
            ("[    1.234567] [     C0] irq", "irq"),
            ("Dec 03 12:00:00 s2m kernel:  #0:  (x){+.+.}", " #0:  (x){+.+.}"),
            ("2026-12-03T12:00:00,123456+01:00 s2m kernel: [    1.2] x", "x"),
            ("<4>[    1.234567] foo", "foo"),
            ("[    1.234567] ", "")]:
        assert clean_lines(raw) == [clean], raw
    for keep in ["[ BUG: held lock freed! ]", " [<ffffffff81234567>] func+0x12/0x34",
                 "[mem 0x10000000-0xfffbffff] available for PCI devices",
                 "[<c0123456>] (func) from [<c0123457>] (caller+0x1c/0x40)",
                 "<TASK>", " </TASK>", "Dec 03 12:00:00 s2m systemd[1]: Started foo"]:
        assert clean_lines(keep) == [keep], keep
