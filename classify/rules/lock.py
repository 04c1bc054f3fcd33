"""The mutex pool: a semaphore that starts at 1 is a mutex when every holder
releases it itself, in process context, on every path.  What a mutex may not do
(be released in an interrupt, by another function, or held on some path) makes it
counting, or keeps it unknown when the facts cannot tell.
"""

from __future__ import annotations

from classify.rules.model import COUNTING, MUTEX, Case, Verdict, funcs, unknown, verdict


def _one(c: Case) -> bool:
    return c.count == 1


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


def released_by_another_function(c: Case) -> Verdict | None:
    foreign_ups = [o for o in c.ups if o.func not in c.acq_funcs]
    if not _one(c) or not foreign_ups:
        return None
    return verdict(COUNTING, [
        "binary semaphore released by another function: up() in "
        + funcs(foreign_ups)
        + ", which never takes it (maybe another task); a mutex must be released "
        "by its owner"], foreign_ups + c.acquires[:4] + c.inits)


def trylock_callers_not_followed(c: Case) -> Verdict | None:
    if not _one(c) or not c.trylocks:
        return None
    return unknown(["down_trylock() on a binary semaphore: often chosen because the "
                    "caller may run in atomic context, where mutex_trylock() is not "
                    "allowed; its callers were not followed"], c.trylocks + c.inits,
                   "check that " + funcs(c.trylocks) + " only runs in process context")


def not_released_on_every_path(c: Case) -> Verdict | None:
    unbalanced = [o for o in c.acquires if not o.balanced]
    if not _one(c) or not unbalanced:
        return None
    return unknown(["an acquisition is not proven released on every path of its "
                    "function"], unbalanced + c.ups[:4],
                   "check those paths: held across return (to user space?) or "
                   "a form the balance rule does not know")


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
        "no down_timeout(), address not handed to other code",
    ], c.inits + c.acquires + c.ups)
