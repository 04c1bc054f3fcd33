"""The words of a conversion patch: the commit message a maintainer reads (why
the semaphore is a mutex or an event, who takes and releases it, where) and the
notes below the --- (what to check, how the patch was made).  The cover letter
is classify.convert.cover's, the identity classify.convert.identity's.

The body is prose about the driver, with function names and no line numbers of
the tree the tool read: those mean nothing upstream.  The audit's listing, the
rule that decided and the command go below the ---, where git am drops them.
The testing statement is not written here: the verification writes it from
what it ran (classify.convert.testing).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field



@dataclass
class Converted:
    """One semaphore of a patch, as the conversion left it."""
    sem: dict
    new_name: str = ""          # the lock's name after the patch, "" when unchanged
    name_kept: str = ""         # why a name that says "sem" stays
    notes: list[str] = field(default_factory=list)   # for the reviewer
    waits: list[str] = field(default_factory=list)   # waits under the lock, sentences
    mapped: bool = False        # a wait's -ERESTARTSYS mapped back to -EINTR


def wrap(text: str, indent: str = "", width: int = 72, hang: int = 0) -> list[str]:
    """text as lines of at most width columns; a "- " indent hangs, and
    continuation lines are indented hang columns more."""
    # an arrow stays with the path after it (no "->" alone on a line)
    glued = " ".join(text.split()).replace("-> ", "->\0")
    return [x.replace("\0", " ") for x in
            textwrap.wrap(glued, width, initial_indent=indent,
                          subsequent_indent=" " * (len(indent) + hang),
                          break_long_words=False, break_on_hyphens=False)]


def and_list(items: list[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def lock_name(sem: dict) -> str:
    """The name a reader finds in the code: `poll_sem` for a member (with its
    struct when the name says nothing alone: `hisi_hba.sem`), a global's name."""
    name = sem["id"].rsplit(":", 1)[-1].split("@")[0]
    field_name = name.split(".")[-1]
    if "." in name and not _VAGUE.match(field_name):
        return field_name
    return name


_VAGUE = re.compile(r"^(sem|sema|semaphore|lock|mutex|irq|wait|done|.{1,2})$")


def functions(sem: dict, ops: tuple[str, ...]) -> list[str]:
    """The functions holding the operations named by ops (prefixes: "down",
    "up"), in the order of their first line."""
    seen: dict[str, tuple] = {}
    for o in sorted(sem.get("ops", []), key=lambda o: (o["path"], o["line"])):
        if o["op"].startswith(ops) and o.get("function") and o["function"] not in seen:
            seen[o["function"]] = (o["path"], o["line"])
    return [f"{f}()" for f in seen]


def some_of(funcs: list[str], most: int = 8, others: str = "other functions") -> str:
    if len(funcs) <= most:
        return and_list(funcs)
    return ", ".join(funcs[:most - 1]) + f" and {len(funcs) - most + 1} {others}"


def _kinds(sem: dict, ops: tuple[str, ...]) -> list[str]:
    """The contexts the operations named by ops run in, from the audit's call
    graph ("process", "softirq", "hardirq", "under a lock", "unknown")."""
    kinds: dict[str, None] = {}
    for o in sem.get("ops", []):
        if o["op"].startswith(ops) and o.get("context"):
            for kind in o["context"].split(": ", 1)[0].split(" + "):
                kinds[kind.strip()] = None
    return list(kinds)


def sleeping_takes(items: list[Converted]) -> str:
    """Why a lock is only taken in process context, as a mutex must be: every
    take already sleeps, which it may do nowhere else.  (Where the paths to it
    start is no proof, and a list of them is never complete.)"""
    calls = sorted({o["op"] for i in items for o in i.sem.get("ops", [])
                    if o["op"] in ("down", "down_interruptible", "down_killable")})
    what = " or ".join(f"{c}()" for c in calls) or "down()"
    if any(o["op"] == "down_trylock" for i in items for o in i.sem.get("ops", [])):
        # the trylock's own paragraph says where it is reached from
        return (f"Every take but the down_trylock() is a {what}, which sleeps: the "
                "callers already run in process context, where a mutex may be taken.")
    takes = sum(o["op"] in ("down", "down_interruptible", "down_killable")
                for i in items for o in i.sem.get("ops", []))
    return (f"{'Its one take' if takes == 1 else 'Every take'} is a {what}, which sleeps: "
            "the callers already run in process context, where a mutex may be taken.")


# " (drivers/x/y.c:468)", " (:188, :210)" and "drivers/x/y.c:1736, :1767 ": the
# tree's line numbers
_AT_PAREN = re.compile(r"\s*\((?:[\w./-]+\.[ch])?:\d+(?:, :\d+)*\)")
_AT = re.compile(r"\b[\w./-]+\.[ch]:\d+(?:, :\d+)*:?\s")


def without_lines(text: str) -> str:
    """A reason of the audit without the file:line of the tree it read."""
    text = re.sub(r",? at line \d+", "", _AT.sub("", _AT_PAREN.sub("", text)))
    return re.sub(r"\s+", " ", text).strip()


def _init_text(sem: dict) -> str:
    forms = {i.get("form", "") for i in sem.get("init", [])}
    if forms and forms <= {"DEFINE_SEMAPHORE", "DEFINE_BINARY_SEMAPHORE"}:
        return "is defined with a count of 1"
    return "is initialised to 1"


def _steps(sem: dict) -> list[str]:
    """The pairing proof's steps (the reasons indented under the one before),
    each said once: a pair of callbacks is a step from either side."""
    out: list[str] = []
    pairs: set[frozenset] = set()
    for r in sem.get("reasons", []):
        if not r.startswith("  "):
            continue
        step = without_lines(r)
        if " is exported by " in step:
            continue            # says how the callers were found, not who they are
        m = re.match(r"^(\w+)\(\) is [\w.]+, paired with (\w+)\(\)", step)
        if m:
            key = frozenset(m.groups())
            if key in pairs:
                continue
            pairs.add(key)
        out.append(step)
    return out


def _local_takers(sem: dict) -> list[str]:
    """The functions that take the lock and release it themselves on every path."""
    return functions({"ops": [o for o in sem.get("ops", []) if o["op"].startswith("down")
                              and o.get("balanced")]}, ("down",))


_TRYLOCK = re.compile(r"^down_trylock\(\) in (\w+\(\)) runs in (\w+): (.*)$")


def chain_prose(chain: str) -> str:
    """A path of the call graph in words: "a() is x.y (process) -> a() calls b()
    -> b() calls c()" is "a(), the x.y callback, calls b(), which calls c()"."""
    hops = [without_lines(h) for h in chain.split(" -> ")]
    m = re.match(r"^(\w+\(\)) is ([\w.]+) \(\w+\)$", hops[0])
    r = re.match(r"^(?:\w+\(\) )?registers (\w+\(\)) with (\w+\(\)) \(\w+\)$", hops[0])
    start = (f"{m.group(1)}, the {m.group(2)} callback," if m else
             f"{r.group(1)}, registered with {r.group(2)}," if r else hops[0])
    called = []
    for hop in hops[1:]:
        c = re.match(r"^\w+\(\) calls (\w+\(\))", hop)
        # "a() passes f() to bus_for_each_dev(), which calls it"
        passed = re.match(r"^\w+\(\) passes (\w+\(\)) to (\w+\(\)), which calls it", hop)
        if not (c or passed):
            return " -> ".join(hops)
        called += [c.group(1)] if c else [passed.group(2), passed.group(1)]
    return start + "".join(f"{' calls' if n == 0 else ', which calls'} {f}"
                           for n, f in enumerate(called))


def lock_paragraph(item: Converted) -> list[str]:
    """Why a semaphore is a mutex, and who takes and releases it."""
    sem = item.sem
    name = lock_name(sem)
    takers = functions(sem, ("down",))
    if sem.get("rule") == "lock.paired_on_one_task":
        local = _local_takers(sem)
        besides = (f"Besides {some_of(local, 6)}, which "
                   f"{'take and release it themselves' if len(local) > 1 else 'takes and releases it itself'}, "
                   "it is" if local else "It is")
        lines = wrap(f"{name} {_init_text(sem)}. {besides} taken by one call and "
                     "released by a later one, on the same task:")
        lines += [ln for s in _steps(sem) for ln in wrap(s, "- ", 72, hang=0)]
        lines += wrap("No release runs in interrupt context, and no pointer to it is "
                      "passed to other code. " + sleeping_takes([item]))
    else:
        guards = sem.get("guards") or []
        protects = f", protects {and_list(guards)}," if guards else ""
        # one paragraph: what it is, who holds it, where from
        lines = wrap(f"{name} {_init_text(sem)}{protects} and is only held inside "
                     f"{some_of(takers)}: {'each of them releases' if len(takers) > 1 else (takers or ['it'])[0] + ' releases'} "
                     "it on every path before returning, so the task that takes it is "
                     "the one that releases it, as a mutex requires. Nothing else "
                     "releases it. " + sleeping_takes([item]))
    for r in sem.get("reasons", []):
        m = _TRYLOCK.match(r)
        if m:
            paths = [len(o.get("callers", [])) + o.get("callers_more", 0)
                     for o in sem.get("ops", []) if o["op"] == "down_trylock"
                     and f"{o.get('function')}()" == m.group(1)]
            said = ("it is only reached from one path, in "
                    f"{m.group(2)} context:" if paths == [1] else
                    f"every path to it runs in {m.group(2)} context, for example:")
            lines += [""] + wrap(f"The down_trylock() in {m.group(1)} becomes "
                                 f"mutex_trylock(); {said} {chain_prose(m.group(3))}.")
    return lines


def _compact(items: list[Converted]) -> bool:
    """Several plain locks all taken in process context only are said as a
    list under one sentence, not as a paragraph each that repeats it."""
    def plain(item: Converted) -> bool:
        sem = item.sem
        kinds = _kinds(sem, ("down",))
        return (sem["class"] == "mutex" and sem.get("rule") == "lock.mutex"
                and not any(_TRYLOCK.match(r) for r in sem.get("reasons", []))
                and [k for k in kinds if k in ("process", "softirq", "hardirq")] == ["process"]
                and "under a lock" not in kinds)
    return len(items) >= 3 and all(plain(i) for i in items)


def locks_list(items: list[Converted]) -> list[str]:
    """The compact form of several plain locks (_compact): one sentence of what
    they share, a line per lock with what it protects and who holds it, and
    why they are held in process context only."""
    lines = wrap("Each of them is initialised "
                 "to 1 and only held inside the functions listed with it, each of which "
                 "releases it on every path before returning, so the task that takes "
                 "it is the one that releases it; nothing else releases it:")
    lines.append("")
    for item in items:
        sem = item.sem
        guards = sem.get("guards") or []
        what = f", which protects {and_list(guards)}" if guards else ""
        lines += wrap(f"{lock_name(sem)}{what}: {some_of(functions(sem, ('down',)))}.",
                      "- ", hang=0)
    return lines + [""] + wrap(sleeping_takes(items))


_WAITED = re.compile(r"^waited for in (.*)$")


def event_paragraph(item: Converted) -> list[str]:
    """Who waits for a semaphore used as an event, and who signals it (what
    holds for every event is events_said(), once for all of a patch)."""
    sem = item.sem
    # the audit's waiters: not the take right after the initialisation
    # (iwpm's `sema_init(&sem, 1); down(&sem);`), which never waits
    said = next((m.group(1) for r in sem.get("reasons", []) if (m := _WAITED.match(r))), "")
    waiters = re.findall(r"\w+\(\)", said) or functions(sem, ("down",))
    signals = functions(sem, ("up",))
    start = ("is initialised to 1 and taken at once, so it starts at 0"
             if any("taken at once" in r for r in sem.get("reasons", []))
             else "starts at 0")
    return wrap(f"{lock_name(sem)} {start}: {some_of(waiters)} "
                f"{'waits' if len(waiters) == 1 else 'wait'} for it and "
                f"{some_of(signals)} {'signals' if len(signals) == 1 else 'signal'} it.")


def _atomic_signals(items: list[Converted]) -> list[str]:
    """The functions that signal an event in interrupt context or with a
    spinlock held or interrupts off."""
    return list(dict.fromkeys(
        f"{o['function']}()" for i in items if i.sem["class"] == "completion"
        for o in i.sem.get("ops", []) if o["op"] == "up" and o.get("function")
        and (o.get("atomic") or re.search(r"\b(?:hard|soft)irq\b",
                                          o.get("context", "").split(":")[0]))))


def events_said(items: list[Converted]) -> list[str]:
    """What holds for every event of a patch, said once: that a signal given
    before the wait is kept and each wait takes one, as with the semaphore;
    and, where one is signalled in atomic context, that complete() may be."""
    atomic = _atomic_signals(items)
    where = (f" {some_of(atomic)} {'signals' if len(atomic) == 1 else 'signal'} it in "
             "atomic context, where complete() may be called, as up() may." if atomic else "")
    return wrap("complete() is counted like up(): a signal given before anyone waits is "
                "kept, and each wait takes one signal." + where)


def _renames(items: list[Converted]) -> list[str]:
    done = [f"{lock_name(i.sem)} to {i.new_name}" for i in items if i.new_name]
    if not done:
        return []
    return wrap(f"Rename {and_list(done)}, so that "
                + ("the name no longer says semaphore." if len(done) == 1 else
                   "the names no longer say semaphore."))


_WORDS = dict(enumerate("zero one two three four five six seven eight nine".split()))


def opening(items: list[Converted]) -> list[str]:
    """Why the patch is made, first: what each semaphore is used as, and what
    its new type gives that the semaphore does not."""
    text = []
    for cls in ("mutex", "completion"):
        sems = [i.sem for i in items if i.sem["class"] == cls]
        if not sems:
            continue
        names = [lock_name(s) for s in sems]
        one = len(names) == 1
        them = "it" if one else "them"
        # more than two are named in the paragraphs that follow, not here
        who = (f"{and_list(names)} {'is a semaphore' if one else 'are semaphores'}"
               if len(names) <= 2 else
               f"The driver has {_WORDS.get(len(names), len(names))} semaphores")
        if cls == "mutex":
            # a static or global lock is never freed
            freed = any(s.get("declared", {}).get("kind") == "member" for s in sems)
            checks = ["a release by another task", "a recursive take"] + (
                ["a lock freed while held"] if freed else [])
            text.append(
                f"{who} used as {'a lock' if one else 'locks'}. Make {them} "
                f"{'a mutex' if one else 'mutexes'}: lockdep does not see a semaphore, "
                f"and with a mutex, lockdep and CONFIG_DEBUG_MUTEXES check how "
                f"{'it is' if one else 'they are'} held ({and_list(checks)}).")
        else:
            # a semaphore that counts events (raw_gadget's, one up() per
            # queued event) is not what a one-shot completion looks like: say
            # that a completion counts too, and what the change is for
            text.append(
                f"{who} used only to count events: one side waits for them, the "
                "other signals them. A completion counts them the same way, and "
                "its type says what it is for, where a semaphore leaves the reader "
                f"to find out whether it is a lock. Make {them} "
                f"{'a completion' if one else 'completions'}.")
    return wrap(" ".join(text))


# why a semaphore of the same driver stays one, by the audit's rule: the
# reviewer asks about the ones left (esas2r's nvram_semaphore, vchiq's
# free_fragments_sema)
_STAYS = {
    "lock.released_by_another_function": (
        r"up\(\) in (.+?), which never takes it",
        "it is released by {0}, which {1} not take it, and a mutex must be released "
        "by the task that took it"),
    "certain.count_above_one": (r"initial count (.+)$",
                                "it starts at {0} and counts, which a mutex cannot"),
    "certain.runtime_count": ("", "it starts at a count set at run time and counts, which "
                                  "a mutex cannot"),
    "certain.timed_lock": ("", "it is taken with down_timeout(), which a mutex has no "
                               "form of"),
    "lock.held_across_user_return": ("", "it is held across the return to user space, "
                                         "where a mutex may not be"),
}


def stays(sem: dict) -> str:
    """Why a semaphore is not converted, in a clause: "x stays: ..."."""
    pattern, text = _STAYS.get(sem.get("rule", ""), ("", ""))
    first = (sem.get("reasons") or [""])[0]
    m = re.search(pattern, first) if pattern else None
    if text and (m or not pattern):
        said = text
        if m:
            # "MAX_FRAGMENTS = 64": "MAX_FRAGMENTS (64)"; "f(), g()": "f() and g()"
            what = re.sub(r"^(\w+) = (.+)$", r"\1 (\2)", m.group(1))
            funcs = what.split(", ")
            said = text.format(and_list(funcs), "do" if len(funcs) > 1 else "does")
    elif sem["class"] == "counting":
        said = "it is used as a counter, not as a lock or an event"
    else:
        said = "what it is used for is not proven"
    return f"{lock_name(sem)} stays a semaphore: {said}"


def others_said(others: list[dict]) -> list[str]:
    """The driver's other semaphores, and why each stays one."""
    if not others:
        return []
    said = " ".join(f"{stays(s)}." for s in others[:4])
    left = len(others) - 4
    more = ("" if left <= 0 else " The driver has one more semaphore that stays." if left == 1
            else f" The driver has {left} more semaphores that stay.")
    return wrap(said + more)


def found_by() -> list[str]:
    """How the semaphores were found, as Documentation/process/
    researcher-guidelines.rst asks of a patch a tool made (the evidence itself
    stays with the sender: it names the lines of the tree the tool read)."""
    return wrap("Found, and converted, with the Coccinelle scripts of sem2mutex.")


def commit_message(prefix: str, subject: str, items: list[Converted],
                   signoff: str | None, others: list[dict] = ()) -> str:
    """The message of one patch (one driver): why, then a paragraph per lock
    (who holds it, or who waits and who signals), the return values that
    change, the renames, the waits under a lock the conversion makes visible,
    the driver's other semaphores and why they stay, how they were found, the
    sign-off.  What is for the reviewer only goes below the --- (reviewer_notes);
    the testing statement is added by the verification."""
    body = opening(items) + [""]
    if _compact(items):
        body += locks_list(items) + [""]
    else:
        for item in items:
            para = (lock_paragraph if item.sem["class"] == "mutex" else event_paragraph)(item)
            body += para + [""]
    if any(i.sem["class"] == "completion" for i in items):
        body += events_said(items) + [""]
    changes = list(dict.fromkeys(c for i in items for c in return_changes(i.sem, i.mapped)))
    body += [ln for c in changes for ln in wrap(c) + [""]]
    renames = _renames(items)
    body += renames + ([""] if renames else [])
    waits = [w for item in items for w in item.waits]
    for n, wait in enumerate(waits, 1):
        # what the fixes must do is said once, after the last of them
        last = "" if n < len(waits) else (
            " It needs a fix of its own, which should come before this patch."
            if len(waits) == 1 else
            " Each needs a fix of its own, which should come before this patch.")
        body += wrap(without_lines(wait) + last) + [""]
    left = others_said(list(others))
    body += left + ([""] if left else [])
    body += found_by() + [""]
    body += ["No functional change intended.", ""]
    if signoff:
        body += [f"Signed-off-by: {signoff}"]
    while body and not body[-1]:
        body.pop()
    return f"{prefix}{subject}\n\n" + "\n".join(body) + "\n"


def return_changes(sem: dict, mapped: bool = False) -> list[str]:
    """What the patch changes besides the names: each return value whose
    meaning differs between the semaphore call and its replacement, said for
    the case the patch has (mapped: a wait's value is passed on, and the patch
    maps it back to -EINTR).  The body says it: a maintainer reads there what
    the code now does."""
    ops = [o["op"] for o in sem.get("ops", [])]

    def tests(op: str) -> str:
        return "its test is" if ops.count(op) == 1 else "each test of it is"
    out = []
    if sem["class"] == "mutex":
        if "down_trylock" in ops:
            out.append("mutex_trylock() returns 1 on success where down_trylock() "
                       f"returned 0, so {tests('down_trylock')} inverted.")
        return out
    waits = sorted(set(ops) & {"down_interruptible", "down_killable"})
    if waits:
        news = [f"wait_for_completion_{w[5:]}()" for w in waits]
        verb = "returns" if len(waits) == 1 else "return"
        out.append(f"{'/'.join(news)} {verb} -ERESTARTSYS where "
                   f"{'/'.join(w + '()' for w in waits)} returned -EINTR: "
                   + ("map a nonzero return to -EINTR where the value is passed on, "
                      "so a caller that tests for -EINTR sees what it saw before." if mapped else
                      "the value is only tested for nonzero, so nothing changes."))
    if "down_timeout" in ops:
        out.append("wait_for_completion_timeout() returns 0 on a timeout where "
                   f"down_timeout() returned 0 on success, so {tests('down_timeout')} "
                   "inverted.")
    if "down_trylock" in ops:
        out.append("try_wait_for_completion() returns true where down_trylock() "
                   f"returned 0, so {tests('down_trylock')} inverted.")
    return out
