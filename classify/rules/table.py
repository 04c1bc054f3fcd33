"""The table of rules, in the order they are tried, and `classify`, which runs it.

Each rule is a pure function of a Case that returns a Verdict or None (it does not
apply); the first verdict wins and records the rule's name.  The certain facts come
first, then the completion pool (count 0), then the mutex pool (count 1).
"""

from __future__ import annotations

from collections.abc import Callable

from classify.rules import certain, event, lock
from classify.rules.model import Case, SemFacts, Verdict

Rule = Callable[[Case], "Verdict | None"]

RULES: tuple[Rule, ...] = (
    certain.count_above_one,
    certain.file_not_analysed,
    certain.calls_not_parsed,
    certain.timed_lock,
    certain.no_initialiser,
    certain.runtime_count,
    certain.symbolic_count,
    certain.several_counts,
    certain.negative_count,
    certain.unresolved_target,
    certain.address_escapes,
    certain.never_used,
    certain.sleeping_in_atomic,
    event.zero_never_released,
    event.zero_never_waited,
    event.zero_waited_and_given_back,
    event.zero_taken_and_released_together,
    event.zero_pool,
    event.zero_trylock,
    event.completion,
    lock.released_in_interrupt,
    lock.trylock_in_interrupt,
    lock.held_across_user_return,
    lock.paired_on_one_task,
    lock.released_by_another_function,
    lock.trylock_reached_from_interrupt,
    lock.trylock_callers_not_followed,
    lock.not_released_on_every_path,
    lock.only_released,
    lock.mutex,
)


def rule_name(rule: Rule) -> str:
    return f"{rule.__module__.rsplit('.', 1)[-1]}.{rule.__name__}"


def classify(sf: SemFacts) -> Verdict:
    """Sort one semaphore into a pool, with reasons, evidence and the deciding rule."""
    case = Case(sf)
    for rule in RULES:
        v = rule(case)
        if v is not None:
            v.rule = rule_name(rule)
            v.evidence += [f.text() for f in sf.followed if f.text() not in v.evidence]
            return v
    raise AssertionError(f"{sf.id}: no rule decided")   # lock.mutex decides count 1
