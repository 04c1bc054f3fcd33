"""The mutex pool: a semaphore that starts at 1 is a mutex when every holder
releases it itself, in process context, on every path.  What a mutex may not do
(be released in an interrupt, by another function, or held on some path) makes it
counting, or keeps it unknown when the facts cannot tell.
"""

from __future__ import annotations

from classify.rules.model import COUNTING, MUTEX, Case, Verdict, funcs, unknown, verdict


def _one(c: Case) -> bool:
    return c.count == 1


def _address(c: Case) -> str:
    """What the verdict says of the semaphore's address: handed to no other code,
    or only to helpers whose calls on it are counted at their call sites."""
    helpers = sorted({o.via[0] for o in c.ops if o.via})
    if not helpers:
        return "address not handed to other code"
    return ("address handed only to " + ", ".join(h + "()" for h in helpers)
            + ", whose calls on it are counted where it is called")


def _unpaired(c: Case) -> str:
    p = c.facts.pairing
    return f" (not proven paired on one task: {p.why_not})" if p and p.why_not else ""


def released_in_interrupt(c: Case) -> Verdict | None:
    atomic_ups = [o for o in c.ups if o.in_interrupt]
    if not _one(c) or not atomic_ups:
        return None
    return verdict(COUNTING, ["binary semaphore released in interrupt context: "
                              "mutex_unlock() must not be called there"],
                   atomic_ups + c.inits)


def trylock_in_interrupt(c: Case) -> Verdict | None:
    atomic_try = [o for o in c.trylocks if o.in_interrupt]
    if not _one(c) or not atomic_try:
        return None
    return verdict(COUNTING, ["binary semaphore taken with down_trylock() in interrupt "
                              "context: mutex_trylock() must not be called there"],
                   atomic_try + c.inits)


def held_across_user_return(c: Case) -> Verdict | None:
    """A function that a system call enters returns holding the semaphore."""
    p = c.facts.pairing
    if not _one(c) or p is None or not p.user_return:
        return None
    return verdict(COUNTING, ["binary semaphore held across the return to user space: "
                              "a mutex must be released before it; " + p.user_return],
                   c.acquires[:4] + c.ups[:4] + c.inits)


def paired_on_one_task(c: Case) -> Verdict | None:
    """Taken in one function and released in another, where every use of each is
    paired on one task (a caller does both, or a pair of callbacks that the core
    calls in turn): a mutex held across two calls."""
    p = c.facts.pairing
    split = [o for o in c.acquires if not o.balanced] + \
        [o for o in c.ups if o.func not in c.acq_funcs]
    if not _one(c) or not split or p is None or not p.ok or \
            not all(o.process_only for o in c.trylocks):
        return None
    return verdict(MUTEX, [
        "initial count 1",
        "taken in one function and released in another, always on one task:",
    ] + [f"  {step}" for step in p.chain] + [
        "no up() in atomic context, no down_timeout(), " + _address(c),
    ] + [f"down_trylock() in {o.func}() runs in {o.context}" for o in c.trylocks],
        c.inits + c.acquires + c.ups)


def released_by_another_function(c: Case) -> Verdict | None:
    foreign_ups = [o for o in c.ups if o.func not in c.acq_funcs]
    if not _one(c) or not foreign_ups:
        return None
    return verdict(COUNTING, [
        "binary semaphore released by another function: up() in "
        + funcs(foreign_ups)
        + ", which never takes it (maybe another task); a mutex must be released "
        "by its owner" + _unpaired(c)], foreign_ups + c.acquires[:4] + c.inits)


def trylock_reached_from_interrupt(c: Case) -> Verdict | None:
    """A caller chain of the trylock's function starts in an interrupt, timer or
    tasklet: mutex_trylock() must not be called there."""
    hit = [o for o in c.trylocks if o.interrupt_context]
    if not _one(c) or not hit:
        return None
    return verdict(COUNTING, ["binary semaphore taken with down_trylock() in a function "
                              "that runs in interrupt context: " + hit[0].context],
                   hit + c.inits)


def trylock_callers_not_followed(c: Case) -> Verdict | None:
    """A trylock is a mutex_trylock() only when every caller chain of its function
    starts in process context, with no lock held on the way."""
    open_ = [o for o in c.trylocks if not o.process_only]
    if not _one(c) or not open_:
        return None
    why = "; ".join(f"{o.func}(): {o.context}" for o in open_[:2] if o.context)
    return unknown(["down_trylock() on a binary semaphore whose callers are not all "
                    "known to run in process context"
                    + (f" ({why})" if why else "")], open_ + c.inits,
                   "check that " + funcs(open_) + " only runs in process context")


def not_released_on_every_path(c: Case) -> Verdict | None:
    unbalanced = [o for o in c.acquires if not o.balanced]
    if not _one(c) or not unbalanced:
        return None
    p = c.facts.pairing
    settle = ("check those paths: held across return (to user space?) or a form the "
              "balance rule does not know")
    if p is not None and p.why_not:
        settle = ("find who calls the function that returns holding it, and whether "
                  "the release runs on the same task: " + p.why_not)
    return unknown(["an acquisition is not proven released on every path of its "
                    "function" + _unpaired(c)], unbalanced + c.ups[:4], settle)


def only_released(c: Case) -> Verdict | None:
    if not _one(c) or c.acquires:
        return None
    return unknown(["count 1 but only released, never taken here"], c.inits + c.ups[:6],
                   "find who takes it")


def mutex(c: Case) -> Verdict | None:
    if not _one(c):
        return None
    return verdict(MUTEX, [
        "initial count 1",
        "every down() is released by up() on all paths of the same function",
        "no up() outside the functions that take it, none in atomic context",
        "no down_timeout(), " + _address(c),
    ] + [f"down_trylock() in {o.func}() runs in {o.context}" for o in c.trylocks],
        c.inits + c.acquires + c.ups)
