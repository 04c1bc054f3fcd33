"""The rules that hold whatever the semaphore is used for: a count above one, a
file or call spatch did not analyse, a count that cannot be read, an address or a
call the census cannot follow.  They run first: each one settles the case, or
stops the later rules from claiming what the facts do not show.
"""

from __future__ import annotations

import re

from classify.rules.model import COUNTING, Case, Verdict, unknown, verdict


def count_above_one(c: Case) -> Verdict | None:
    big = [i for i in c.inits if i.value is not None and i.value > 1]
    if not big:
        return None
    shown = f" = {big[0].value}" if big[0].count != str(big[0].value) else ""
    return verdict(COUNTING, [f"count above 1: initial count {big[0].count}{shown}"],
                   big + c.ops[:6])


def file_not_analysed(c: Case) -> Verdict | None:
    if not c.facts.not_analysed:
        return None
    return unknown([f"not analysed: {e}" for e in c.facts.not_analysed],
                   c.inits + c.ops[:6], "make spatch parse the file (or review it by hand)")


def calls_not_parsed(c: Case) -> Verdict | None:
    unparsed = [o for o in c.ops if not o.analysed]
    if not unparsed:
        return None
    funcs = sorted({o.func or "(file scope)" for o in unparsed
                    if not o.func.startswith("macro ")})
    macros = sorted({o.func[6:] for o in unparsed if o.func.startswith("macro ")})
    what = []
    if funcs:
        what.append("spatch could not parse " + ", ".join(f + "()" for f in funcs))
    if macros:
        what.append("calls inside macro " + ", ".join(macros) + ", which spatch does "
                    "not expand")
    return unknown([f"not analysed: {'; '.join(what)} (semaphore calls spatch did not see)"],
                   unparsed, "review those functions and macros by hand "
                   "(or fix the parse with macro hints)")


def timed_lock(c: Case) -> Verdict | None:
    """A lock taken with a timeout stays a semaphore; a semaphore that starts at 0
    is an event, and wait_for_completion_timeout() waits for one with a timeout:
    the completion rules decide that case."""
    timeouts = [o for o in c.ops if o.op == "down_timeout"]
    if not timeouts or c.count == 0:
        return None
    return verdict(COUNTING, ["down_timeout: mutexes have no timed lock, "
                              "it stays a semaphore"], timeouts + c.inits)


def no_initialiser(c: Case) -> Verdict | None:
    if c.inits:
        return None
    if not c.ops:
        return unknown(["declared, but no initialiser and no down()/up() found"], [],
                       "find its users: through a pointer, a macro, or unused")
    return unknown(["no initialiser found (sema_init, DEFINE_SEMAPHORE, "
                    "__SEMAPHORE_INITIALIZER)"], c.ops[:6],
                   "find where its count is set (e.g. sema_init through a pointer)")


_RUNTIME_VALUE = re.compile(r"->|\.|\b[a-z_][a-z0-9_]*\b(?!\s*\()")


def runtime_count(c: Case) -> Verdict | None:
    """A count read from a variable or a field (`dev->cmd.max_cmds`, `num_msg`) is
    set at run time: a pool sized to the hardware's queue, which a mutex cannot
    be unless the value is always 1 -- a claim the code does not make."""
    runtime = [i for i in c.inits if i.value is None and _RUNTIME_VALUE.search(i.count)]
    if not runtime:
        return None
    return verdict(COUNTING, [f"initial count `{runtime[0].count}` is a run-time value "
                              "(a variable or a field): a pool sized when the code runs, "
                              "it stays a semaphore"], runtime + c.ops[:6])


def symbolic_count(c: Case) -> Verdict | None:
    symbolic = [i for i in c.inits if i.value is None]
    if not symbolic:
        return None
    return unknown([f"initial count `{symbolic[0].count}` could not be resolved"], c.inits,
                   f"check the value of `{symbolic[0].count}`: 1 makes it a mutex "
                   "candidate, 0 a completion candidate, more a counting semaphore")


def several_counts(c: Case) -> Verdict | None:
    if len(c.values) <= 1:
        return None
    return unknown(["initialised with different counts "
                    f"({', '.join(str(v) for v in sorted(c.values))})"], c.inits,
                   "review which initialisation applies")


def negative_count(c: Case) -> Verdict | None:
    if c.count is None or c.count >= 0:
        return None
    return unknown([f"negative initial count {c.count}"], c.inits, "review by hand")


def unresolved_target(c: Case) -> Verdict | None:
    if not c.facts.possible_ops:
        return None
    return unknown(["an operation whose target could not be resolved may act on it"],
                   c.facts.possible_ops[:6], "check which semaphore those calls use")


def address_escapes(c: Case) -> Verdict | None:
    if not c.facts.escapes:
        return None
    return unknown(["its address is handed to other code, which may down() or up() it"],
                   c.facts.escapes[:6], "follow the pointer into the callee(s)")


def never_used(c: Case) -> Verdict | None:
    if c.acquires or c.ups:
        return None
    return unknown(["initialised but never taken or released here"], c.inits,
                   "find its users (through a pointer or a macro), or remove it")


def sleeping_in_atomic(c: Case) -> Verdict | None:
    sleeping = [o for o in c.acquires if o.atomic and o.op != "down_trylock"]
    if not sleeping:
        return None
    return unknown(["a sleeping down() in atomic context (a bug either way)"], sleeping,
                   "review the locking of those calls")
