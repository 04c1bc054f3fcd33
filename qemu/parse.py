"""Stage 5, parse: a saved console log in, structured results out.  Pure functions; no
kernel and no QEMU needed, so everything here is tested against real logs kept as
fixtures in tests/qemu/logs/ (the way kunit_parser.py and syzkaller's pkg/report are).
Any machine's log: x86_64, arm64 and arm; console captures, dmesg and journalctl -k
output; lockdep's banners since 2.6.18; logs of other kernels and tools are fixtures
derived from ours by tests/qemu/logs/derive.py.

  parse_ktap(lines)     nested KTAP (KUnit's boot-time suites, our /init's results)
  find_reports(lines)   lockdep / mutex-debug / BUG / Oops / WARNING / panic / hung task
                        reports, and the harness's timeout line as a "hang"
  lockdep_classes(lines)  the "# lockdep-class:" lines our /init prints
  verdict(...)          completed | panic | hang | qemu_failed | truncated

Every log goes through qemu.logtext.normalise first (colour, CRLF, journal and time
prefixes, mail quoting and wrapped lines); a report's line is that of the file.
This is the one reader of console lines: every later stage reads its records (Lock,
Report, LockClass: classify.records.boot), kernel_version() and scenario_of().
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from classify.records.boot import Lock, LockClass, Report
from qemu.ktap import KTAP_VERSION, KtapNode, ktap_summary, parse_ktap
from qemu.frames import (_ARM_FRAME, _LOCK_API, _REPORTING, _SYM, _TRACE_FILLER,  # noqa: F401
                         _TRACE_START, _blocker, _frame, _modules)
from qemu.logtext import normalise

HARNESS_PREFIX = "s2m-harness: "
INIT_DONE = "s2m-init: done"

def clean_lines(text: str) -> list[str]:
    """Console text -> the kernel's lines: colour codes, CRs, reply quoting and the
    journal, log level, printk time and caller id prefixes gone (qemu.logtext)."""
    return normalise(text)[0]


# ---------------------------------------------------------------------------- reports

# Lockdep's banners: "WARNING: <what>" since 4.14, "[ INFO: <what> ]" or "[ BUG: <what> ]"
# from 2.6.18 to 4.13 (commit a5dd63efda3d, "lockdep: Use "WARNING" tag on lockdep
# splats").  Both spellings are one kind, and the title always uses the modern one so
# that the same bug has the same title on every kernel.
def _lockdep(what: str, old: str = "(?:INFO|BUG)") -> str:
    return rf"^(?:WARNING: |(?P<old>\[ {old}: )){what}(?(old).*\]\s*$)"


# (kind, regex on the headline); the first match wins.
REPORT_PATTERNS: list[tuple[str, re.Pattern[str]]] = [(k, re.compile(p)) for k, p in [
    ("circular_locking", _lockdep(r"possible circular locking dependency detected")),
    ("recursive_locking", _lockdep(r"possible recursive locking detected")),
    ("bad_unlock_balance", _lockdep(r"bad unlock balance detected!")),
    ("held_lock_freed", _lockdep(r"held lock freed!")),
    ("lock_held_at_exit", _lockdep(r"(?P<task>\S+) still has locks held!")),
    # 2.6.18 to 3.x said it without naming the task (the next line does)
    ("lock_held_at_exit", r"^\[ BUG: lock held at task exit time! \]"),
    ("lock_held_return_to_user", _lockdep(r"lock held when returning to user space!")),
    ("inconsistent_lock_state", _lockdep(r"inconsistent lock state")),
    ("irq_lock_inversion", _lockdep(r"possible irq lock inversion dependency detected")),
    ("irq_unsafe_lock_order", _lockdep(r"\S+-safe -> \S+-unsafe lock order detected")),
    ("nested_lock", _lockdep(r"Nested lock was not taken")),
    ("suspicious_rcu", _lockdep(r"suspicious (?:RCU|rcu_dereference_check\(\)) usage")),
    ("sleep_in_atomic", r"^BUG: sleeping function called from invalid context"),
    ("sleep_in_atomic", r"^BUG: scheduling while atomic"),
    ("invalid_wait_context", r"^\[ BUG: Invalid wait context \]"),
    ("chain_key_collision", r"^WARNING: chain_key collision"),
    ("bad_contention", _lockdep(r"bad contention detected!")),
    ("non_static_key", r"^INFO: trying to register non-static key"),
    ("debug_locks_warn_on", r"^DEBUG_LOCKS_WARN_ON\(.*\)"),
    # kernel-patches 0009: a semaphore running as a debug mutex used in an interrupt
    ("mutex_debug_context", r"^mutex_debug (?P<lock>\S+): (?P<op>\w+)\(\) in interrupt context"),
    # hung_task.c prints "%s:%d": the comm may itself hold ':' (kworker/0:1), so the
    # pid is what follows the last one
    ("hung_task", r"^INFO: task (?P<comm>.+):(?P<pid>\d+) blocked for more than \d+ seconds"),
    ("bug", r"^kernel BUG at (?P<loc>\S+)!"),
    ("oops", r"^BUG: kernel NULL pointer dereference"),
    ("oops", r"^BUG: unable to handle (?:page fault|kernel )"),
    ("oops", r"^(?:general protection fault|Oops: |invalid opcode: )"),
    # arm and arm64 (mm/fault.c die_kernel_fault / __do_kernel_fault, traps.c die)
    ("oops", r"^Unable to handle kernel (?P<what>.+?) at virtual address "),
    ("oops", r"^Internal error: "),
    ("bug", r"^BUG: "),
    ("warning", r"^WARNING: CPU: \d+ PID: \d+ at (?P<loc>\S+) (?P<func>\S+)"),
    ("warning", r"^WARNING: at (?P<loc>\S+) (?P<func>\S+)"),      # before 3.10
    ("panic", r"^Kernel panic - not syncing: "),
    # the harness killed QEMU: at the deadline, or a console silent for too long
    ("hang", r"^" + re.escape(HARNESS_PREFIX) + r"(?:timeout after |no console output for )"),
]]

# A headline of kind B right after an open report of kind A belongs to A (within N lines):
# DEBUG_LOCKS_WARN_ON() is followed by its WARNING: line, kernel BUG/NULL deref by Oops:
# (arm: "Internal error: Oops").
_CONTINUES = {"debug_locks_warn_on": ({"warning"}, 4), "mutex_debug_context": ({"warning"}, 4),
              "bug": ({"oops"}, 12),
              "oops": ({"oops"}, 12), "non_static_key": ({"warning"}, 12)}
# ... and the other order: where WARN() has no trap (arm, every arch before 4.x's
# __WARN_FLAGS), warn_slowpath_fmt() prints "WARNING: CPU:" first and the message
# after it.  The message names the event, so the report takes its kind and headline.
_ADOPTS = {"warning": ({"debug_locks_warn_on", "mutex_debug_context"}, 2)}
_LOCKDEP_KINDS = {"circular_locking", "recursive_locking", "bad_unlock_balance",
                  "held_lock_freed", "lock_held_at_exit", "lock_held_return_to_user",
                  "inconsistent_lock_state", "irq_lock_inversion", "irq_unsafe_lock_order",
                  "nested_lock", "suspicious_rcu", "non_static_key", "invalid_wait_context",
                  "chain_key_collision", "bad_contention"}
_MAX_BODY = 200

# A held lock as lockdep prints it.  The instance address in front came in 4.15, the
# "-{n:n}" wait-type suffix in 5.7, and ", at: [<addr>] func" lost its address in 4.15;
# the name may hold parentheses: "&(&q->lock)->rlock", "(wq_completion)events".
_LOCK = re.compile(r"\((?P<name>(?:[^(){}\s]|\([^(){}]*\))(?:[^(){}]|\([^(){}]*\))*)\)"
                   r"\{(?P<usage>[-+.?]*)\}(?:-\{[\d:]+\})?"
                   r"(?:, at: (?:\[<[0-9a-f]+>\] )?(?P<at>\S+))?")
_RELEASE = re.compile(r"^(?P<task>\S+) is trying to release lock \((?P<name>.+)\) at:")
_TASK = re.compile(r"^(?P<task>\S+/\d+) is (?:trying to acquire|trying to lock|trying to "
                   r"release|freeing memory|leaving the kernel|exiting with locks)"
                   r"|^\d+ locks? held by (?P<task2>\S+/\d+):"
                   r"|pid: (?P<pid>\d+), name: (?P<comm>\S+)"
                   r"|^CPU: \d+ PID: (?P<pid2>\d+) Comm: (?P<comm2>\S+)"
                   r"|^Pid: (?P<pid3>\d+), comm: (?P<comm3>\S+)"            # x86 before 3.x
                   r"|^Process (?P<comm4>\S+) \(pid: (?P<pid4>\d+), stack limit")   # arm
_HELD_BY = re.compile(r"^(?:\d+ locks? held by|no locks held by) (?P<task>\S+/\d+)[:.]")
_AT_FRAME = re.compile(r"^\[<[0-9a-f]+>\] (?P<func>\S+)")
_AT_LOC = re.compile(r"(?:^BUG: sleeping function called from invalid context at |"
                     r"^WARNING: CPU: \d+ PID: \d+ at |^WARNING: at |^kernel BUG at )"
                     r"(?P<loc>[\w./-]+:\d+)")

def find_reports(lines: list[str]) -> list[Report]:
    """Every report in a console log (lines from clean_lines), in log order."""
    # (first line, headline line, kind, match)
    starts: list[tuple[int, int, str, re.Match[str]]] = []
    for i, line in enumerate(lines):
        for kind, pat in REPORT_PATTERNS:
            if m := pat.match(line):
                if starts:
                    first, head, pkind, _ = starts[-1]
                    follow, window = _CONTINUES.get(pkind, (set(), 0))
                    if kind in follow and i - head <= window:
                        break
                    adopt, window = _ADOPTS.get(pkind, (set(), 0))
                    if kind in adopt and i - head <= window:
                        starts[-1] = (first, i, kind, m)
                        break
                starts.append((i, i, kind, m))
                break
    reports = []
    for n, (i, head, kind, m) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        body = _cut_body(lines[i:min(end, i + _MAX_BODY)], kind)
        rep = _make_report(kind, m, i, head - i, body)
        # WARN(cond, fmt, ...) prints its message before the WARNING line: the count
        # warning of a mutex_debug (kernel-patches 0002) names the semaphore there
        if kind == "warning" and i and (mm := _COUNT_WARN.match(lines[i - 1].strip())):
            rep.locks.insert(0, Lock.named(mm["lock"], "involved"))
            rep.body.insert(0, lines[i - 1].strip())     # the count, for the record
        _count_warnings(rep)
        if reports and _same_event(reports[-1], rep):
            continue
        reports.append(rep)
    return reports


_COUNT_WARN = re.compile(r"^mutex_debug (?P<lock>\S+) initialized with count -?\d+")


def _count_warnings(rep: Report) -> None:
    """A mutex_debug's count warning in the body (warn_slowpath_fmt prints it after the
    WARNING line) names its semaphore too; the first is the report's detail."""
    for line in rep.body:
        if m := _COUNT_WARN.match(line.strip()):
            rep.detail = rep.detail or line.strip()
            if all(lk.name != m["lock"] for lk in rep.locks):
                rep.locks.append(Lock.named(m["lock"], "involved"))


_RULE = re.compile(r"^\s*(?:=+|-+)?\s*$")


def _same_event(prev: Report, rep: Report) -> bool:
    """A splat printed twice back to back (two consoles in one capture, a console log
    with the dmesg pasted after it) is one event: the same kind and title, the same
    text, and nothing but separator rules between the two copies."""
    if (prev.kind, prev.title) != (rep.kind, rep.title):
        return False
    core = list(prev.body)
    while core and _RULE.match(core[-1]):
        core.pop()
    return [ln.rstrip() for ln in core] == [ln.rstrip() for ln in rep.body[:len(core)]]


def _cut_body(body: list[str], kind: str) -> list[str]:
    in_trace = seen_frame = False
    for j, line in enumerate(body):
        if j and (line.startswith("---[ end ") or line.startswith(INIT_DONE)
                  or line.startswith(HARNESS_PREFIX)):
            return body[: j + 1] if line.startswith("---[ end ") else body[:j]
        if j and kind in _LOCKDEP_KINDS and line.strip() == "</TASK>":
            return body[: j + 1]
        if j and KTAP_VERSION.match(line):
            return body[:j]
        # a lockdep splat ends with its one stack dump; kernels before 5.13 print no
        # </TASK> after it, so the first line that is no longer the trace ends it
        if kind in _LOCKDEP_KINDS:
            if line.strip().startswith("stack backtrace:"):
                in_trace = True
            elif in_trace and _frame(line):
                seen_frame = True
            elif seen_frame and not _TRACE_FILLER.match(line):
                return body[:j]
    return body


# The kernel's banner turned into the title's stable form.
def _title_headline(kind: str, headline: str) -> str:
    if kind in _LOCKDEP_KINDS and (m := re.match(r"^\[ (?:INFO|BUG): (.*?)\.? \]$", headline)) \
            and kind != "invalid_wait_context":
        headline = "WARNING: " + m[1]
    if kind == "lock_held_at_exit":
        return "WARNING: <task> still has locks held!"
    if kind == "oops":   # the faulting address and the die counter vary from run to run
        headline = re.sub(r"(?:, address:| at virtual address) \S+$", "", headline)
        headline = re.sub(r"^(Internal error: .*?) \[#\d+\].*$", r"\1", headline)
    return headline


def _task_of(tm: re.Match[str]) -> str:
    """comm/pid of a task line, whichever of _TASK's forms matched."""
    return (tm["task"] or tm["task2"]
            or (f"{tm['comm']}/{tm['pid']}" if tm["pid"] else "")
            or (f"{tm['comm2']}/{tm['pid2']}" if tm["pid2"] else "")
            or (f"{tm['comm3']}/{tm['pid3']}" if tm["pid3"] else "")
            or (f"{tm['comm4']}/{tm['pid4']}" if tm["pid4"] else ""))


def _title(kind: str, headline: str, groups: dict, culprit: str) -> str:
    """A title stable from boot to boot: no pid, no seconds, no offsets."""
    title = _title_headline(kind, headline)
    if kind == "hung_task":
        title = f"INFO: task {groups['comm']} blocked for more than N seconds"
    if culprit and kind != "lock_held_at_exit":
        title = f"{title} in {culprit}"
    if kind == "warning":   # syzkaller style: CPU, PID, offsets vary from boot to boot
        title = f"WARNING in {(groups.get('func') or '?').split('+')[0]}"
    if kind == "hang":    # drop the measured elapsed time
        title = re.sub(r" after [\d.]+ s$", "", headline)
    return title


def _make_report(kind: str, m: re.Match[str], index: int, head: int,
                 body: list[str]) -> Report:
    headline = body[head].strip()
    locks: list[Lock] = []
    frames: list[str] = []
    task = ""
    location = ""
    role = "involved"
    in_trace = trace_done = False
    release_pending: Lock | None = None
    groups = m.groupdict()
    if groups.get("lock"):      # the mutex_debug warnings name their semaphore
        locks.append(Lock.named(groups["lock"], "involved"))
    if groups.get("task"):
        task = groups["task"]
    if groups.get("comm"):
        task = f"{groups['comm']}/{groups['pid']}"
    for line in body:
        if lm := _AT_LOC.match(line):
            location = location or lm["loc"]
        if (tm := _TASK.search(line)) and not task:
            task = _task_of(tm)
        stripped = line.strip()
        if "is trying to acquire lock:" in line or "is trying to lock:" in line:
            role = "acquiring"
        elif "but task is already holding lock:" in line:
            role = "held"
        elif hm := _HELD_BY.match(stripped):
            # "Showing all locks held in the system" (hung task, sysrq) lists every
            # task's locks: only the report's own task holds the report's locks
            if role != "done":
                role = "held" if not task or hm["task"] == task else "other"
        elif "with a lock still held there!" in line:
            role = "freed"
        elif stripped.startswith("the existing dependency chain"):
            role = "chain"
        elif stripped.startswith("other info that might help") or stripped.startswith(
                "stack backtrace:"):
            role = "done"
        if rm := _RELEASE.match(line):
            task = task or rm["task"]
            release_pending = Lock.named(rm["name"], "releasing")
            locks.append(release_pending)
            continue
        if release_pending is not None:
            if am := _AT_FRAME.match(stripped):
                release_pending.at = am["func"]
            release_pending = None
        fr = _frame(line)
        if role not in ("done", "other") and (lk := _LOCK.search(line)) and not fr:
            locks.append(Lock.named(lk["name"], role, lk["usage"], lk["at"] or ""))
        if _TRACE_START.match(line) and not trace_done:
            in_trace = True
            continue
        if trace_done:
            continue
        # arm's frames have no header before them when the unwinder prints them
        if fr and (in_trace or _ARM_FRAME.match(line)):
            in_trace = True
            func, reliable = fr
            if reliable and not _REPORTING.match(func) and func not in frames:
                frames.append(func)
        elif in_trace and frames and not _TRACE_FILLER.match(line):
            trace_done = True       # only the first trace: the report's own stack
    frames = frames[:8]
    first: dict[tuple[str, str], Lock] = {}
    for lk in locks:
        first.setdefault((lk.name, lk.role), lk)
    uniq = list(first.values())
    culprit = _culprit(kind, uniq, frames, groups, body)
    title = _title(kind, headline, groups, culprit)
    # the function the title names: a WARNING's own, else the culprit
    function = (groups.get("func") or "").split("+")[0] if kind == "warning" else culprit
    return Report(kind, title, headline, index + head + 1, task, uniq, frames, location,
                  [ln for ln in body], modules=_modules(body), blocker=_blocker(body),
                  function=function)


# Frames that are plumbing (allocator, kthread and initcall entry), never the culprit.
_PLUMBING = re.compile(
    r"^(kfree|__kmem_cache_free|kmem_cache_free|slab_free\w*|__slab_free|do_slab_free|"
    r"free_pages\w*|__free_pages\w*|vfree|__vunmap|kthread|kthread_exit|ret_from_fork\w*|"
    r"kernel_init|kernel_init_freeable|do_one_initcall|do_initcalls|do_basic_setup|"
    r"syscall_exit_to_user_mode\w*|exit_to_user_mode\w*|do_syscall_64|"
    r"entry_SYSCALL_64\w*|el0_\w+|el0t_64_\w+|invoke_syscall|do_el0_svc|"
    r"ret_fast_syscall|vector_swi|ret_to_user\w*)(\.\w+)*$")
# Where an Oops happened: x86's RIP (before 4.x with the address twice), arm64's
# "pc : ", arm's and old arm64's "PC is at ".
_RIP = re.compile(rf"^(?:RIP: [0-9a-f]{{4}}:(?:\[<[0-9a-f]+>\]\s+\[<[0-9a-f]+>\] )?|"
                  rf"pc : |PC is at )(?P<func>{_SYM})\+0x")


def _culprit(kind: str, locks: list[Lock], frames: list[str], groups: dict,
             body: list[str]) -> str:
    """The function a human would name: where an Oops happened, else the first frame
    that is neither lock API nor plumbing, else a lock's at: outside the lock API."""
    if kind in ("panic", "hang"):
        return ""
    if kind in ("bug", "oops"):
        for line in body:
            if m := _RIP.match(line):
                return m["func"]
    for func in frames:
        if not _LOCK_API.match(func) and not _PLUMBING.match(func):
            return func
    for lk in locks:
        func = lk.at.split("+")[0]
        if func and not _LOCK_API.match(func) and not _REPORTING.match(func):
            return func
    return (groups.get("func") or "").split("+")[0]


# ---------------------------------------------------------------------------- verdict

@dataclass
class ParsedLog:
    verdict: str
    ktap: list[KtapNode]
    ktap_counts: dict[str, int]
    reports: list[Report]
    debug_locks: int | None
    init_done: bool
    harness: str
    lines: int


def verdict(lines: list[str], reports: list[Report]) -> tuple[str, str, bool]:
    """(verdict, harness line, init finished) for a whole log."""
    harness = next((ln for ln in reversed(lines) if ln.startswith(HARNESS_PREFIX)), "")
    done = any(ln.startswith(INIT_DONE) for ln in lines)
    if any(r.kind == "panic" for r in reports):
        return "panic", harness, done
    if any(r.kind == "hang" for r in reports):
        return "hang", harness, done
    # a task blocked for minutes in a log that stops before /init finished (a console
    # capture cut short, a dmesg of another machine): the hang is what the log shows
    if not done and any(r.kind == "hung_task" for r in reports):
        return "hang", harness, done
    if re.search(r"exited with status (?!0 )", harness):
        return "qemu_failed", harness, done
    if done:
        return "completed", harness, done
    return "truncated", harness, done


_DEBUG_LOCKS = re.compile(r"^# lockdep_stats:\s+debug_locks:\s+(\d+)")
_VERSION = re.compile(r"Linux version (\d+\.\d+(?:\.\d+)?)")
# a report's "CPU: 0 PID: 1 Comm: x Not tainted 6.1.192 #1" (or "Tainted: G  W  4.15.0-rc1+")
_RELEASE_OF = re.compile(r"(?:Not tainted|Tainted: [A-Z ]+?) +(\d+\.\d+(?:\.\d+)?)[-+ .]")
_SCENARIO = re.compile(r"Command line:.*\bs2m\.scenario=(\S+)")


def kernel_version(text: str) -> str:
    """The version of the kernel a log is of ("6.1.192"), from its banner or else a
    report's taint line, or "" when neither says."""
    text = _kernel_text(text)
    m = _VERSION.search(text) or _RELEASE_OF.search(text)
    return (m[1] if m[1].count(".") == 2 else m[1] + ".0") if m else ""


def scenario_of(text: str) -> str:
    """The scenario our harness booted (s2m.scenario= on the command line), or ""."""
    return m[1] if (m := _SCENARIO.search(_kernel_text(text))) else ""


def _kernel_text(text: str) -> str:
    return "\n".join(clean_lines(text)) if "\x1b" in text or "\n>" in text else text


def _file_lines(nodes: list[KtapNode], origin: list[int]) -> None:
    """Each KTAP result's line, of the log as given (as a report's)."""
    for node in nodes:
        node.line = origin[node.line - 1] + 1 if node.line else 0
        _file_lines(node.children, origin)


def parse_log(text: str) -> ParsedLog:
    lines, origin = normalise(text)
    reports = find_reports(lines)
    for rep in reports:         # the line of the log as given, not of its kernel text
        rep.line = origin[rep.line - 1] + 1
    docs = parse_ktap(lines)
    _file_lines(docs, origin)
    v, harness, done = verdict(lines, reports)
    dl = next((int(m[1]) for ln in lines if (m := _DEBUG_LOCKS.match(ln))), None)
    return ParsedLog(v, docs, ktap_summary(docs), reports, dl, done, harness, len(lines))


# ---------------------------------------------------------------------------- lock classes

# "# lockdep-class: <key> [OPS: <n>] [FD: <n> BD: <n> <usage>]: <name>", what our /init
# prints of /proc/lockdep at the end of its workload (OPS with CONFIG_DEBUG_LOCKDEP)
_CLASS_LINE = re.compile(r"^# lockdep-class: \S+(?: OPS:\s*(?P<ops>\d+))?(?: FD:\s*\d+ BD:\s*\d+"
                         r" (?P<usage>[^:]*))?: (?P<name>.+?)\s*$")


def lockdep_classes(lines: list[str]) -> list[LockClass]:
    """The lock classes a boot used, from its "# lockdep-class:" lines (clean_lines)."""
    return [LockClass.named(m["name"], int(m["ops"]) if m["ops"] else None,
                            (m["usage"] or "").strip())
            for line in lines if (m := _CLASS_LINE.match(line.strip()))]
