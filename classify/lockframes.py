"""A report's call trace -> the semaphore it is about, or none.  Pure.

A frame is evidence only where a semaphore can be the report's subject and only one
frame can say which: the caller of the blocking (or releasing) call the task is in.

    hung task             blocked in down*() (or, on a DEBUG_MUTEX_FULL kernel, the
                          mutex_lock*() a semaphore's down() became)
    mutex-debug report    DEBUG_LOCKS_WARN_ON / a mutex_debug warning raised inside
                          the lock API
    sleeping in atomic    might_sleep() of the take itself; or a might_sleep() in the
                          body of the first reliable frame, when the report's file:line
                          is in a file of the one semaphore that function takes
    non-static key        lockdep meeting a semaphore's own spinlock uninitialised, in
                          down()/up() (a sema_init() that never ran)

The reliable frames (qemu.parse leaves out "? " frames and the reporting machinery)
must start with the lock API; the first frame after it is the caller, and it names a
semaphore only when every semaphore operation in it is on that one semaphore.  A call
to an rw_semaphore, a spinlock or an rt_mutex names nothing (a spinlock inside down()
is down's own), as does a caller in a
module that is none of the semaphore's files (out of tree), or a hung-task blocker
line saying the lock is a mutex or an rw-semaphore.  Any other report (an Oops, a
BUG, a lockdep report about its own lock classes) names no semaphore by its trace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from classify.records.boot import Report

FRAME_KINDS = frozenset({"hung_task", "debug_locks_warn_on", "mutex_debug_context",
                         "sleep_in_atomic", "non_static_key"})
_OTHER = re.compile(r"^(?:down_read\w*|down_write\w*|__down_read\w*|__down_write\w*|"
                    r"up_read\w*|up_write\w*|rwsem_\w+|__rwsem_\w+|percpu_\w+|"
                    r"rt_mutex\w*|__rt_mutex\w*|rt_spin_\w+|_raw_\w+|__raw_\w+|"
                    r"do_raw_\w+|queued_\w+|spin_\w+|ww_mutex\w*|__ww_mutex\w*)(?:\.\w+)*$")
_SEM_TAKE = re.compile(r"^(?:down|down_interruptible|down_killable|down_timeout|"
                       r"down_trylock|__down|__down_common|__down_interruptible|"
                       r"__down_killable|__down_timeout)(?:\.\w+)*$")
_MUTEX_TAKE = re.compile(r"^(?:mutex_lock\w*|__mutex_lock\w*|mutex_trylock\w*|"
                         r"mutex_debug_down\w*|__mutex_debug_\w+)(?:\.\w+)*$")
_RELEASE = re.compile(r"^(?:up|__up|mutex_unlock\w*|__mutex_unlock\w*|mutex_debug_up\w*|"
                      r"mutex_debug_\w+)(?:\.\w+)*$")


@dataclass(frozen=True)
class Attribution:
    """One semaphore a report names (id None: a link that was refused, and why)."""
    id: str | None
    by: str             # "lock class" | "call trace"
    link: str           # what tied the report to it, in words
    lock_class: str | None = None


def _api_run(frames: list[str]) -> list[str]:
    """The lock API frames the trace starts with."""
    run = []
    for func in frames:
        if not (_OTHER.match(func) or _SEM_TAKE.match(func) or _MUTEX_TAKE.match(func)
                or _RELEASE.match(func)):
            break
        run.append(func)
    return run


def _module_of(sid: str, files: dict[str, tuple[str, ...]], module: str) -> bool:
    """Is `module` (a frame's "[name]") one the semaphore's files can build?"""
    names = {module.replace("-", "_"), re.sub(r"_mod$", "", module.replace("-", "_"))}
    for path in files.get(sid, ()):
        parts = path[:-2].replace("-", "_").split("/")
        if names & set(parts):
            return True
    return False


def _blocking_call(report: Report, run: list[str]) -> str:
    """The call the caller made (the last frame of the lock API run), if a semaphore
    can be behind it: a take, for a blocked or sleeping task; down()/up() themselves
    for an uninitialised key.  Else ''."""
    call = run[-1] if run else ""
    if not call or _OTHER.match(call):
        return ""
    take = _SEM_TAKE.match(call) or _MUTEX_TAKE.match(call)
    if report.kind in ("hung_task", "sleep_in_atomic") and not take:
        return ""
    if report.kind == "non_static_key" and not (_SEM_TAKE.match(call) or call == "up"):
        return ""
    return call


def frame_attribution(report: Report, by_function: dict[str, list[str]],
                      ops: dict[str, frozenset[str]],
                      files: dict[str, tuple[str, ...]]) -> Attribution | None:
    """The semaphore the caller of the report's blocking call names (see above)."""
    if report.kind not in FRAME_KINDS or report.blocker.split(",")[0] in (
            "mutex", "rw-semaphore"):
        return None
    run = _api_run(report.frames)
    call = _blocking_call(report, run)
    if not run and report.kind == "sleep_in_atomic":
        return _sleep_check_in_taker(report, by_function, ops, files)
    if not call or len(report.frames) == len(run):
        return None
    caller = report.frames[len(run)]
    ids = by_function.get(caller, [])
    if len(ids) != 1:
        return None
    if report.kind in ("hung_task", "sleep_in_atomic") and not _takes(caller, ops):
        return None
    held = f"; {report.blocker}" if report.blocker else ""
    return _named(report, caller, ids[0], files, f"the caller of {call}(), operates on "
                  f"this semaphore only{held}")


def _takes(func: str, ops: dict[str, frozenset[str]]) -> bool:
    return any(op.startswith("down") for op in ops.get(func, ()))


def _named(report: Report, func: str, sid: str, files: dict[str, tuple[str, ...]],
           why: str) -> Attribution:
    """The attribution through frame func, unless its module is none of the
    semaphore's (out of tree)."""
    where = f"{func}() [{report.modules[func]}]" if func in report.modules else f"{func}()"
    if func in report.modules and not _module_of(sid, files, report.modules[func]):
        return Attribution(None, "call trace", f"frame {where}: a module none of "
                           f"{sid}'s files builds (out of tree)")
    return Attribution(sid, "call trace", f"frame {where}, {why}")


def _sleep_check_in_taker(report: Report, by_function: dict[str, list[str]],
                          ops: dict[str, frozenset[str]],
                          files: dict[str, tuple[str, ...]]) -> Attribution | None:
    """Sleeping in atomic context, the check fired in the first reliable frame itself
    (a might_sleep() in its own body, before its take: console_lock()): that frame
    names its semaphore when it takes that one semaphore only and the report's
    file:line is in one of the semaphore's files.  A check inlined from a header (an
    allocation's might_sleep()) is at a file:line of the header: nothing."""
    if not report.frames or not report.location:
        return None
    func = report.frames[0]
    ids = by_function.get(func, [])
    path = report.location.rsplit(":", 1)[0]
    if len(ids) != 1 or not _takes(func, ops) or path not in files.get(ids[0], ()):
        return None
    return _named(report, func, ids[0], files, f"where might_sleep() fired "
                  f"({report.location}, a file of this semaphore), takes this "
                  f"semaphore only")
