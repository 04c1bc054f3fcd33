"""Stack frames as qemu.parse reads them: each form the kernel has printed, which
frames are the reporting machinery or the locking API, a frame's "[module]" tag, and
the hung-task blocker line.  Pure; only qemu.parse uses it.
"""

from __future__ import annotations

import re

# One stack frame, in each form the kernel has printed:
#   x86 since 4.9, arm64 since 4.15  " func+0x12/0x34 [mod]"   " ? func+0x12/0x34"
#   x86 before, arm64 before         " [<ffffffff81234567>] func+0x12/0x34"  (and "? ")
#   arm (CONFIG_BACKTRACE_VERBOSE,   "[<c0123456>] (func) from [<c0123457>] (caller+0x1c/0x40)"
#        and every arm before 5.x)   "[<c0123456>] (func+0x1c/0x40) from [<c...>] (caller+..)"
#   arm since 5.x                    " func from caller+0x1c/0x40"
_SYM = r"[A-Za-z_$][\w.$]*"
_OFF = r"\+0x[0-9a-f]+/0x[0-9a-f]+"
_FRAME = re.compile(rf"^\s+(?P<q>\? )?(?P<func>{_SYM}){_OFF}")
_OLD_FRAME = re.compile(rf"^\s*\[<[0-9a-f]+>\] (?P<q>\? )?(?P<func>{_SYM}){_OFF}(?:\s|$)")
_ARM_FRAME = re.compile(rf"^\s*(?:\[<[0-9a-f]+>\] \((?P<func>{_SYM})(?:{_OFF})?\) from "
                        rf"\[<[0-9a-f]+>\] \(|(?P<func2>{_SYM}) from {_SYM}{_OFF}$)")
_TRACE_START = re.compile(r"^\s*(?:Call Trace:|Call trace:|Backtrace:)")
# Lines a stack trace may hold between its frames without having ended.
_TRACE_FILLER = re.compile(r"^\s*(?:</?(?:TASK|IRQ|NMI|SOFTIRQ)>|<EOI>|Call Trace:|Call trace:|"
                           r"Backtrace:|r\d+:|Exception stack|[0-9a-f]{8}: |"
                           r"Function entered at )|^\s*$")


def _frame(line: str) -> tuple[str, bool] | None:
    """(function, reliable) of a stack-frame line in any of the forms above."""
    if m := _ARM_FRAME.match(line):
        return (m["func"] or m["func2"]), True
    if m := _OLD_FRAME.match(line) or _FRAME.match(line):
        return m["func"], not m["q"]
    return None


# Frames that belong to the reporting machinery, never to the culprit: the stack dump,
# lockdep, the WARN/BUG/die paths of x86, arm64 and arm, might_sleep, the scheduler
# (a hung or sleeping task's stack starts there) and KASAN's report.
_REPORTING = re.compile(
    r"^(dump_stack\w*|show_stack|__dump_stack|dump_backtrace\w*|unwind_backtrace|"
    r"print_\w*bug\w*|print_lock\w*|print_address_description\w*|print_report|"
    r"print_held_locks\w*|lockdep_\w+|__lock_acquire|lock_acquire\w*|lock_release|"
    r"__lock_release|validate_chain|check_noncircular|check_prev_add|check_prevs_add|"
    r"check_deadlock|check_irq_usage|check_wait_context|check_flags|check_usage\w*|"
    r"check_chain_key|mark_lock\w*|mark_usage|mark_held_locks|__warn\w*|warn_slowpath\w*|"
    r"report_bug|handle_bug|exc_\w+|asm_exc_\w+|_*might_resched|_*might_sleep|_*might_fault|"
    r"__schedule_bug|panic|"
    r"debug_check_no_\w+|__debug_check_no_\w+|register_lock_class|debug_locks_off|"
    r"vpanic|do_error_trap|do_trap|die|oops_end|__die\w*|do_exit|make_task_dead|"
    r"rewind_stack_\w+|hlock_class|look_up_lock_class|lockdep_init_map\w*|"
    r"lock_is_held\w*|add_lock_to_list|__bfs|check_path|trace_hardirqs_\w+|"
    r"__schedule|schedule|schedule_(?:timeout\w*|preempt_disabled|hrtimeout\w*|idle)|"
    r"io_schedule\w*|preempt_schedule\w*|_*cond_resched|"
    r"__wait_for_common|wait_for_common\w*|do_wait_for_common|wait_for_completion\w*|"
    r"kasan_\w+|__kasan_\w+|__asan_\w+|check_memory_region\w*|start_report|end_report|"
    r"arm64_notify_die|do_mem_abort|el1_\w+|el1h_64_\w+|__do_kernel_fault|"
    r"die_kernel_fault|do_page_fault|do_translation_fault|do_bad_area|do_kernel_fault|"
    r"do_debug_exception|bug_handler|call_break_hook|brk_handler|early_brk64|"
    r"do_DataAbort|__dabt_svc|do_undefinstr|__und_svc|do_PrefetchAbort|__pabt_svc)"
    r"(\.\w+)*$")
# The locking API itself: a report's culprit is the first frame outside it.
_LOCK_API = re.compile(
    r"^(__mutex_\w+|mutex_lock\w*|mutex_unlock\w*|mutex_trylock\w*|mutex_debug_\w+|"
    r"__mutex_debug_\w+|_raw_\w+|__raw_\w+|do_raw_\w+|queued_\w+|down|down_\w+|__down\w*|"
    r"up|up_read\w*|up_write\w*|__up\w*|rwsem_\w+|__rwsem_\w+|percpu_down_\w+|percpu_up_\w+|"
    r"sema_init|__sema_init|rt_mutex\w*|__rt_mutex\w*|rt_spin_\w+|spin_\w+|"
    r"ww_mutex_\w+|__ww_mutex_\w+|ww_acquire_\w+)(\.\w+)*$")


# " func+0x12/0x34 [mod]" (or with syzkaller's "file:line" before the tag); and the
# hung-task blocker line (CONFIG_DETECT_HUNG_TASK_BLOCKER, 6.14 and later)
_MODULE = re.compile(rf"(?:^|\s|\(){_SYM}{_OFF}\)?(?:\s+\S+:\d+)?\s+\[(?P<mod>[\w-]+)\]")
_FUNC = re.compile(rf"(?P<func>{_SYM}){_OFF}")
_BLOCKER = re.compile(r"^INFO: task .+:\d+ (?:is |reader |writer )?blocked on an? (?P<what>[\w-]+)"
                      r"\b.*? by "
                      r"task (?P<comm>.+?):(?P<pid>\d+)")


def _modules(body: list[str]) -> dict[str, str]:
    """The module tag of each frame that has one."""
    out: dict[str, str] = {}
    for line in body:
        if (m := _MODULE.search(line)) and m["mod"] != "inline" and (f := _FUNC.search(line)):
            out.setdefault(f["func"], m["mod"])
    return out


def _blocker(body: list[str]) -> str:
    """"<lock kind>, last held by task comm/pid" of a hung-task blocker line, or ""."""
    m = next((m for ln in body if (m := _BLOCKER.match(ln.strip()))), None)
    return f"{m['what']}, last held by task {m['comm']}/{m['pid']}" if m else ""
