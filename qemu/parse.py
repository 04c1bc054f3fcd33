"""Stage 5, parse: a saved console log in, structured results out.  Pure functions; no
kernel and no QEMU needed, so everything here is tested against real logs kept as
fixtures in tests/qemu/logs/ (the way kunit_parser.py and syzkaller's pkg/report are).

  parse_ktap(lines)     nested KTAP (KUnit's boot-time suites, our /init's results)
  find_reports(lines)   lockdep / mutex-debug / BUG / Oops / WARNING / panic / hung task
                        reports, and the harness's timeout line as a "hang"
  verdict(...)          completed | panic | hang | qemu_failed | truncated
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

HARNESS_PREFIX = "s2m-harness: "
INIT_DONE = "s2m-init: done"

_PREFIX = re.compile(r"^\[\s*\d+\.\d+\](?:\[\s*[TC]\d+\])? ?")


def clean_lines(text: str) -> list[str]:
    """Console text -> lines without CRs and without printk timestamp prefixes."""
    return [_PREFIX.sub("", line.rstrip("\r")) for line in text.splitlines()]


# ---------------------------------------------------------------------------- KTAP

@dataclass
class KtapNode:
    name: str = ""
    status: str = ""          # ok | not ok | skip | missing ("" for a document)
    number: int = 0
    plan: int | None = None
    children: list["KtapNode"] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)

    def leaves(self, prefix: str = "") -> list[tuple[str, str]]:
        path = f"{prefix}/{self.name}" if prefix else self.name
        if not self.children:
            # an empty document ("1..0", KUnit with no suites) has no results at all
            return [(path, self.status)] if self.status else []
        out = []
        for child in self.children:
            out += child.leaves(path)
        return out


_VERSION = re.compile(r"^(?P<ind>\s*)(?:KTAP version \d+|TAP version \d+)\s*$")
_SUBTEST = re.compile(r"^(?P<ind>\s*)# Subtest: (?P<name>.+?)\s*$")
_PLAN = re.compile(r"^(?P<ind>\s*)1\.\.(?P<n>\d+)\s*$")
_RESULT = re.compile(r"^(?P<ind>\s*)(?P<st>ok|not ok) (?P<num>\d+)(?: -)?\s*(?P<name>[^#]*?)"
                     r"\s*(?:#\s*(?P<dir>\S+)(?P<reason>.*))?$")
_DIAG = re.compile(r"^(?P<ind>\s*)# (?P<text>.*)$")


def _indent(s: str) -> int:
    return len(s.expandtabs(8))


def parse_ktap(lines: list[str]) -> list[KtapNode]:
    """Every top-level KTAP document in the log, subtests nested by indentation.

    Lines that are not KTAP (kernel messages interleaved with the tests) are skipped.
    A document or subtest whose plan promised more results than it printed gets
    "missing" entries, so a crash in the middle of a suite shows up as a failure.
    """
    docs: list[KtapNode] = []
    open_: dict[int, KtapNode] = {}

    def close_from(level: int) -> None:
        for lvl in sorted([k for k in open_ if k >= level], reverse=True):
            node = open_.pop(lvl)
            _fill_missing(node)
            if lvl > 0:       # an unterminated subtest: attach it as missing
                parent = open_.get(max([k for k in open_ if k < lvl], default=-1))
                if parent is not None:
                    node.status = node.status or "missing"
                    parent.children.append(node)

    for raw in lines:
        if m := _VERSION.match(raw):
            lvl = _indent(m["ind"])
            close_from(lvl)
            node = KtapNode()
            open_[lvl] = node
            if lvl == 0:
                docs.append(node)
        elif m := _SUBTEST.match(raw):
            lvl = _indent(m["ind"])
            if lvl not in open_ and lvl > 0 and open_:
                open_[lvl] = KtapNode()
            if lvl in open_:
                open_[lvl].name = m["name"]
        elif m := _PLAN.match(raw):
            lvl = _indent(m["ind"])
            if lvl not in open_ and (open_ or lvl == 0):
                open_[lvl] = KtapNode()
                if lvl == 0:
                    docs.append(open_[lvl])
            if lvl in open_:
                open_[lvl].plan = int(m["n"])
        elif m := _RESULT.match(raw):
            lvl = _indent(m["ind"])
            if lvl not in open_:
                continue           # a stray "ok" outside any KTAP document
            child = open_.pop(lvl + 4, None) if (lvl + 4) in open_ else None
            for deeper in [k for k in open_ if k > lvl]:
                open_.pop(deeper)
            if child is None:
                child = KtapNode()
            else:
                _fill_missing(child)
            st = m["st"]
            if (m["dir"] or "").upper() == "SKIP":
                st = "skip"
            child.status, child.number = st, int(m["num"])
            child.name = child.name or m["name"].strip()
            open_[lvl].children.append(child)
        elif m := _DIAG.match(raw):
            lvl = _indent(m["ind"])
            if lvl in open_:
                open_[lvl].diagnostics.append(m["text"])
    close_from(0)
    n_kunit = 0
    for doc in docs:
        if any(d.startswith("s2m-init scenario:") for d in doc.diagnostics):
            doc.name = "s2m-init"
        elif doc.name:     # a document that names itself ("# Subtest: sem_bench")
            pass
        else:   # the other top-level document on our console is KUnit's, at boot
            n_kunit += 1
            doc.name = "kunit" if n_kunit == 1 else f"kunit{n_kunit}"
    return docs


def _fill_missing(node: KtapNode) -> None:
    if node.plan is not None and len(node.children) < node.plan:
        for n in range(len(node.children) + 1, node.plan + 1):
            node.children.append(KtapNode(name=f"#{n}", status="missing", number=n))


def ktap_summary(docs: list[KtapNode]) -> dict[str, int]:
    counts = {"ok": 0, "not ok": 0, "skip": 0, "missing": 0}
    for doc in docs:
        for _, st in doc.leaves():
            counts[st if st in counts else "missing"] += 1
    return counts


# ---------------------------------------------------------------------------- reports

@dataclass
class Lock:
    name: str                 # as lockdep prints it, e.g. "&x->lock#2/1"
    lock_class: str           # without the #version and /subclass suffixes
    role: str                 # acquiring | held | releasing | freed | chain | involved
    usage: str = ""           # "+.+." usage bits
    at: str = ""              # "func+0x12/0x30"


@dataclass
class Report:
    kind: str
    title: str                # headline + " in FUNC" when a function is known
    headline: str             # the kernel's own line
    line: int                 # 1-based line of the headline in the log
    task: str = ""
    locks: list[Lock] = field(default_factory=list)
    frames: list[str] = field(default_factory=list)
    location: str = ""        # "file:line" when the report names one
    body: list[str] = field(default_factory=list)


# (kind, regex on the headline); the first match wins.
REPORT_PATTERNS: list[tuple[str, re.Pattern[str]]] = [(k, re.compile(p)) for k, p in [
    ("circular_locking", r"^WARNING: possible circular locking dependency detected"),
    ("recursive_locking", r"^WARNING: possible recursive locking detected"),
    ("bad_unlock_balance", r"^WARNING: bad unlock balance detected!"),
    ("held_lock_freed", r"^WARNING: held lock freed!"),
    ("lock_held_at_exit", r"^WARNING: (?P<task>\S+) still has locks held!"),
    ("lock_held_return_to_user", r"^WARNING: lock held when returning to user space!"),
    ("inconsistent_lock_state", r"^WARNING: inconsistent lock state"),
    ("irq_lock_inversion", r"^WARNING: possible irq lock inversion dependency detected"),
    ("irq_unsafe_lock_order", r"^WARNING: \S+-safe -> \S+-unsafe lock order detected"),
    ("nested_lock", r"^WARNING: Nested lock was not taken"),
    ("suspicious_rcu", r"^WARNING: suspicious RCU usage"),
    ("sleep_in_atomic", r"^BUG: sleeping function called from invalid context"),
    ("sleep_in_atomic", r"^BUG: scheduling while atomic"),
    ("invalid_wait_context", r"^\[ BUG: Invalid wait context \]"),
    ("chain_key_collision", r"^WARNING: chain_key collision"),
    ("bad_contention", r"^WARNING: bad contention detected!"),
    ("non_static_key", r"^INFO: trying to register non-static key"),
    ("debug_locks_warn_on", r"^DEBUG_LOCKS_WARN_ON\(.*\)"),
    # kernel-patches 0009: a semaphore running as a debug mutex used in an interrupt
    ("mutex_debug_context", r"^mutex_debug (?P<lock>\S+): (?P<op>\w+)\(\) in interrupt context"),
    ("hung_task", r"^INFO: task (?P<task>\S+:\d+) blocked for more than \d+ seconds"),
    ("bug", r"^kernel BUG at (?P<loc>\S+)!"),
    ("oops", r"^BUG: kernel NULL pointer dereference"),
    ("oops", r"^BUG: unable to handle page fault"),
    ("oops", r"^(?:general protection fault|Oops: |invalid opcode: )"),
    ("bug", r"^BUG: "),
    ("warning", r"^WARNING: CPU: \d+ PID: \d+ at (?P<loc>\S+) (?P<func>\S+)"),
    ("panic", r"^Kernel panic - not syncing: "),
    ("hang", r"^" + re.escape(HARNESS_PREFIX) + r"timeout after "),
]]

# A headline of kind B right after an open report of kind A belongs to A (within N lines):
# DEBUG_LOCKS_WARN_ON() is followed by its WARNING: line, kernel BUG/NULL deref by Oops:.
_CONTINUES = {"debug_locks_warn_on": ({"warning"}, 4), "mutex_debug_context": ({"warning"}, 4),
              "bug": ({"oops"}, 12),
              "oops": ({"oops"}, 12), "non_static_key": ({"warning"}, 12)}
_LOCKDEP_KINDS = {"circular_locking", "recursive_locking", "bad_unlock_balance",
                  "held_lock_freed", "lock_held_at_exit", "lock_held_return_to_user",
                  "inconsistent_lock_state", "irq_lock_inversion", "irq_unsafe_lock_order",
                  "nested_lock", "suspicious_rcu", "non_static_key", "invalid_wait_context",
                  "chain_key_collision", "bad_contention"}
_MAX_BODY = 200

_LOCK = re.compile(r"\((?P<name>[^(){}]+(?:\([^)]*\)[^(){}]*)*)\)\{(?P<usage>[^}]*)\}"
                   r"-\{[\d:]+\}(?:, at: (?P<at>\S+))?")
_RELEASE = re.compile(r"^(?P<task>\S+) is trying to release lock \((?P<name>.+)\) at:")
_TASK = re.compile(r"^(?P<task>\S+/\d+) is (?:trying to acquire|trying to lock|trying to release|freeing "
                   r"memory|leaving the kernel)|^\d+ locks? held by (?P<task2>\S+/\d+):"
                   r"|pid: (?P<pid>\d+), name: (?P<comm>\S+)"
                   r"|^CPU: \d+ PID: (?P<pid2>\d+) Comm: (?P<comm2>\S+)")
_FRAME = re.compile(r"^\s+(?P<q>\? )?(?P<func>[A-Za-z0-9_.]+)\+0x[0-9a-f]+/0x[0-9a-f]+")
_AT_FRAME = re.compile(r"^\[<[0-9a-f]+>\] (?P<func>\S+)")
_AT_LOC = re.compile(r"(?:^BUG: sleeping function called from invalid context at |"
                     r"^WARNING: CPU: \d+ PID: \d+ at |^kernel BUG at )(?P<loc>[\w./-]+:\d+)")

# Frames that belong to the reporting machinery, never to the culprit.
_REPORTING = re.compile(
    r"^(dump_stack\w*|show_stack|__dump_stack|print_\w*bug\w*|print_lock\w*|"
    r"print_held_locks\w*|lockdep_\w+|__lock_acquire|lock_acquire|lock_release|"
    r"__lock_release|validate_chain|check_noncircular|check_prev_add|check_prevs_add|"
    r"check_deadlock|check_irq_usage|check_wait_context|check_flags|check_usage\w*|"
    r"check_chain_key|mark_lock\w*|mark_usage|__warn|warn_slowpath\w*|report_bug|"
    r"handle_bug|exc_\w+|asm_exc_\w+|__might_resched|__might_sleep|__schedule_bug|panic|"
    r"debug_check_no_\w+|__debug_check_no_\w+|register_lock_class|debug_locks_off|"
    r"vpanic|do_error_trap|do_trap|die|oops_end|__die\w*|do_exit|make_task_dead|"
    r"rewind_stack_\w+|hlock_class|look_up_lock_class|lockdep_init_map\w*|"
    r"lock_is_held\w*|add_lock_to_list|__bfs|check_path)(\.\w+)*$")
# The locking API itself: a report's culprit is the first frame outside it.
_LOCK_API = re.compile(
    r"^(__mutex_\w+|mutex_lock\w*|mutex_unlock\w*|mutex_trylock\w*|mutex_debug_\w+|"
    r"__mutex_debug_\w+|_raw_\w+|__raw_\w+|down|down_\w+|__down\w*|up|__up\w*|"
    r"sema_init|__sema_init|rt_mutex\w*|lock_acquire\w*|spin_\w+)(\.\w+)*$")


def find_reports(lines: list[str]) -> list[Report]:
    """Every report in a console log (lines from clean_lines), in log order."""
    starts: list[tuple[int, str, re.Match[str]]] = []
    for i, line in enumerate(lines):
        for kind, pat in REPORT_PATTERNS:
            if m := pat.match(line):
                if starts:
                    pi, pkind, _ = starts[-1]
                    follow, window = _CONTINUES.get(pkind, (set(), 0))
                    if kind in follow and i - pi <= window:
                        break
                starts.append((i, kind, m))
                break
    reports = []
    for n, (i, kind, m) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        body = _cut_body(lines[i:min(end, i + _MAX_BODY)], kind)
        rep = _make_report(kind, m, i, body)
        # WARN(cond, fmt, ...) prints its message before the WARNING line: the count
        # warning of a mutex_debug (kernel-patches 0002) names the semaphore there
        if kind == "warning" and i and (mm := _COUNT_WARN.match(lines[i - 1].strip())):
            rep.locks.insert(0, _lock(mm["lock"], "involved", "", ""))
        reports.append(rep)
    return reports


_COUNT_WARN = re.compile(r"^mutex_debug (?P<lock>\S+) initialized with count -?\d+")


def _cut_body(body: list[str], kind: str) -> list[str]:
    for j, line in enumerate(body):
        if j and (line.startswith("---[ end ") or line.startswith(INIT_DONE)
                  or line.startswith(HARNESS_PREFIX)):
            return body[: j + 1] if line.startswith("---[ end ") else body[:j]
        if j and kind in _LOCKDEP_KINDS and line.strip() == "</TASK>":
            return body[: j + 1]
        if j and _VERSION.match(line):
            return body[:j]
    return body


def _make_report(kind: str, m: re.Match[str], index: int, body: list[str]) -> Report:
    headline = body[0].strip()
    locks: list[Lock] = []
    frames: list[str] = []
    task = ""
    location = ""
    role = "involved"
    in_trace = False
    release_pending: Lock | None = None
    groups = m.groupdict()
    if groups.get("lock"):      # the mutex_debug warnings name their semaphore
        locks.append(_lock(groups["lock"], "involved", "", ""))
    if groups.get("task"):
        task = groups["task"].replace(":", "/")
    for line in body:
        if lm := _AT_LOC.match(line):
            location = location or lm["loc"]
        if (tm := _TASK.search(line)) and not task:
            task = (tm["task"] or tm["task2"]
                    or (f"{tm['comm']}/{tm['pid']}" if tm["pid"] else "")
                    or (f"{tm['comm2']}/{tm['pid2']}" if tm["pid2"] else ""))
        stripped = line.strip()
        if "is trying to acquire lock:" in line or "is trying to lock:" in line:
            role = "acquiring"
        elif "but task is already holding lock:" in line:
            role = "held"
        elif re.match(r"^\d+ locks? held by ", stripped) or "no locks held by" in stripped:
            role = "held"
        elif "with a lock still held there!" in line:
            role = "freed"
        elif stripped.startswith("the existing dependency chain"):
            role = "chain"
        elif stripped.startswith("other info that might help") or stripped.startswith(
                "stack backtrace:"):
            role = "done"
        if rm := _RELEASE.match(line):
            task = task or rm["task"]
            release_pending = _lock(rm["name"], "releasing", "", "")
            locks.append(release_pending)
            continue
        if release_pending is not None:
            if am := _AT_FRAME.match(stripped):
                release_pending.at = am["func"]
            release_pending = None
        if role != "done" and (lk := _LOCK.search(line)) and not _FRAME.match(line):
            locks.append(_lock(lk["name"], role, lk["usage"], lk["at"] or ""))
        if stripped.startswith("Call Trace:"):
            in_trace = True
            continue
        if in_trace and (fm := _FRAME.match(line)) and not fm["q"]:
            func = fm["func"]
            if not _REPORTING.match(func) and func not in frames:
                frames.append(func)
    frames = frames[:8]
    seen: set[tuple[str, str]] = set()
    uniq = []
    for lk in locks:
        if (lk.name, lk.role) not in seen:
            seen.add((lk.name, lk.role))
            uniq.append(lk)
    culprit = _culprit(kind, uniq, frames, groups, body)
    title = headline if not culprit else f"{headline} in {culprit}"
    if kind == "warning":   # syzkaller style: CPU, PID, offsets vary from boot to boot
        title = f"WARNING in {(groups.get('func') or '?').split('+')[0]}"
    elif kind == "lock_held_at_exit":
        title = re.sub(r"^WARNING: \S+ still", "WARNING: <task> still", title)
    if kind == "hang":    # drop the measured elapsed time: titles must be stable
        title = re.sub(r" after [\d.]+ s$", "", headline)
    return Report(kind, title, headline, index + 1, task, uniq, frames, location,
                  [ln for ln in body])


# Frames that are plumbing (allocator, kthread and initcall entry), never the culprit.
_PLUMBING = re.compile(
    r"^(kfree|__kmem_cache_free|kmem_cache_free|slab_free\w*|__slab_free|do_slab_free|"
    r"free_pages\w*|__free_pages\w*|vfree|__vunmap|kthread|kthread_exit|ret_from_fork|"
    r"kernel_init|kernel_init_freeable|do_one_initcall|do_initcalls|do_basic_setup|"
    r"syscall_exit_to_user_mode\w*|exit_to_user_mode\w*|do_syscall_64|"
    r"entry_SYSCALL_64\w*)(\.\w+)*$")
_RIP = re.compile(r"^RIP: [0-9a-f]{4}:(?P<func>[A-Za-z0-9_.]+)\+0x")


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
        if func and not _LOCK_API.match(func):
            return func
    return (groups.get("func") or "").split("+")[0]


_SUFFIX = re.compile(r"(?:#\d+)?(?:/\d+)?$")


def _lock(name: str, role: str, usage: str, at: str) -> Lock:
    cls = _SUFFIX.sub("", name) or name
    return Lock(name, cls, role, usage, at)


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
    if re.search(r"exited with status (?!0 )", harness):
        return "qemu_failed", harness, done
    if done:
        return "completed", harness, done
    return "truncated", harness, done


_DEBUG_LOCKS = re.compile(r"^# lockdep_stats:\s+debug_locks:\s+(\d+)")


def parse_log(text: str) -> ParsedLog:
    lines = clean_lines(text)
    reports = find_reports(lines)
    docs = parse_ktap(lines)
    v, harness, done = verdict(lines, reports)
    dl = next((int(m[1]) for ln in lines if (m := _DEBUG_LOCKS.match(ln))), None)
    return ParsedLog(v, docs, ktap_summary(docs), reports, dl, done, harness, len(lines))
