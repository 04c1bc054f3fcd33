"""The completion pool: a semaphore that starts at 0 is an event one side waits
for and another signals, when the waiting and the signalling are apart.
"""

from __future__ import annotations

from classify.rules.model import (COMPLETION, COUNTING, Case, Verdict, funcs, unknown,
                                  verdict)


def _zero(c: Case) -> bool:
    return c.count == 0


def zero_never_released(c: Case) -> Verdict | None:
    if not _zero(c) or c.ups:
        return None
    return unknown(["starts at 0 and is never released here"], c.inits + c.acquires[:6],
                   "find who up()s it")


def zero_never_waited(c: Case) -> Verdict | None:
    if not _zero(c) or c.acquires:
        return None
    return unknown(["starts at 0 and is never waited on here"], c.inits + c.ups[:6],
                   "find who down()s it")


def zero_taken_and_released_together(c: Case) -> Verdict | None:
    """Starts at 0, and one function takes it and gives it back: the count is
    passed on from holder to holder (a gate: dm-region-hash's recovery_count,
    ux500's device_allocation).  A completion is not taken back, and a mutex does
    not start locked: it stays a semaphore."""
    both = sorted(c.acq_funcs & c.up_funcs)
    if not _zero(c) or not both:
        return None
    return verdict(COUNTING, [f"starts at 0 (locked) and is taken and given back in "
                              f"{', '.join(f + '()' for f in both)}: a gate whose count "
                              "is passed on, neither a mutex nor a completion"],
                   c.inits + c.ops[:8])


def zero_waited_and_given_back(c: Case) -> Verdict | None:
    """Starts at 0 and is signalled by other functions; a function that waits on it
    gives it back with up() on the very next line after each down() that it gives
    back (hp_sdc's tq_init_sem: `down(&s); up(&s);`, then `down(&s); send();
    down(&s); up(&s);`): the event is left signalled for the next wait, or taken
    back to re-arm it.  A completion counts that way too (complete() after
    wait_for_completion()); a gate would hold the count across work before giving
    it back."""
    both = c.acq_funcs & c.up_funcs
    signals = [o for o in c.ups if o.func not in c.acq_funcs]
    if not _zero(c) or not both or not signals or c.trylocks:
        return None
    downs = {(o.path, o.func, o.line) for o in c.acquires if o.op == "down"}
    back = [o for o in c.ups if o.func in both]
    if not all((o.path, o.func, o.line - 1) in downs for o in back):
        return None
    return verdict(COMPLETION, [
        "starts at 0: down() waits for an event signalled by up() in " + funcs(signals),
        "in " + ", ".join(f + "()" for f in sorted(both)) + " each up() directly follows a "
        "down(): the event is given back at once, for the next wait (complete() after "
        "wait_for_completion(), or reinit_completion() where it is taken back)",
    ], c.inits + c.acquires + c.ups)


def zero_pool(c: Case) -> Verdict | None:
    """Filled by up() in a loop: a pool of tokens (udlfb's free URBs), each taken
    and given back.  complete() would count the tokens too, but a pool is what a
    counting semaphore is for.  A waiter in a loop is no sign: a thread waits for
    one event after another (ipmi_ipmb's kthread)."""
    filled = [o for o in c.ups if o.loop]
    if not _zero(c) or not filled:
        return None
    return verdict(COUNTING, ["starts at 0 and is filled by up() in a loop in "
                              + funcs(filled) + ": a pool of tokens, each taken and "
                              "given back"], filled + c.inits)


def zero_trylock(c: Case) -> Verdict | None:
    if not _zero(c) or not c.trylocks:
        return None
    return unknown(["starts at 0 with a down_trylock(): try_wait_for_completion() "
                    "may fit"], c.inits + c.trylocks, "review the trylock's purpose")


def completion(c: Case) -> Verdict | None:
    if not _zero(c):
        return None
    return verdict(COMPLETION, [
        ("initialised to 1 and taken at once, so it starts at 0" if c.init_takes
         else "starts at 0") + ": down() waits for an event"
        + (" (down_timeout(): wait_for_completion_timeout())"
           if any(o.op == "down_timeout" for o in c.acquires) else ""),
        "waited for in " + ", ".join(sorted(f + "()" for f in c.acq_funcs)),
        "signalled by up() in " + ", ".join(sorted(f + "()" for f in c.up_funcs))
        + ", never in a function that waits",
    ], c.inits + c.init_takes + c.acquires + c.ups)
