"""The rules as a table: facts in, class out (no spatch, no files)."""

import pytest

from classify.census import eval_count
from classify.rules import (COMPLETION, COUNTING, MUTEX, UNKNOWN, EscapeFact, InitFact,
                            OpFact, SemFacts, classify)


def init(count="1", value=1):
    return InitFact(count, value, "a.c", 1, "sema_init")


def op(kind, func, line, balanced=False, atomic="", analysed=True, loop=False):
    return OpFact(kind, "a.c", line, func, analysed=analysed, balanced=balanced,
                  atomic=atomic, loop=loop)


IRQ = "in irq(), an interrupt/timer/tasklet callback registered at line 3"
MUTEX_OPS = [op("down", "f", 10, balanced=True), op("up", "f", 12)]

CASES = [
    # (name, facts, class, reason fragment)
    ("mutex", SemFacts("m", [init()], MUTEX_OPS), MUTEX, "count 1"),
    ("completion", SemFacts("c", [init("0", 0)], [op("down", "wait", 5),
                                                  op("up", "signal", 9)]),
     COMPLETION, "starts at 0"),
    ("completion signalled from irq", SemFacts("c", [init("0", 0)], [
        op("down", "wait", 5), op("up", "irq", 9, atomic=IRQ)]), COMPLETION, "0"),
    ("count above 1", SemFacts("n", [init("N", 8)], MUTEX_OPS), COUNTING, "count above 1"),
    ("count above 1 wins over not analysed",
     SemFacts("n", [init("8", 8)], MUTEX_OPS, not_analysed=["a.c: spatch failed"]),
     COUNTING, "count above 1"),
    ("down_timeout", SemFacts("t", [init()], [op("down_timeout", "f", 3), op("up", "f", 4)]),
     COUNTING, "down_timeout"),
    # ipmi_ipmb's got_rsp: an event waited for with a timeout; its look-alike above
    # (count 1, a lock taken with a timeout) stays counting
    ("an event waited for with a timeout", SemFacts("t", [init("0", 0)], [
        op("down_timeout", "wait", 3), op("up", "signal", 9)]),
     COMPLETION, "wait_for_completion_timeout"),
    # a count read from a field: a pool sized at run time (mlx4's max_cmds)
    ("a run-time count", SemFacts("r", [InitFact("dev->cmd.max_cmds", None, "a.c", 1,
                                                 "sema_init")], MUTEX_OPS),
     COUNTING, "run-time value"),
    # its look-alike: a macro the census could not resolve stays unknown
    ("an unresolved macro count", SemFacts("r", [InitFact("MAX_CMDS", None, "a.c", 1,
                                                          "sema_init")], MUTEX_OPS),
     UNKNOWN, "could not be resolved"),
    # iwpm's request: initialised to 1 and taken on the next line, so it starts at 0
    ("taken at init", SemFacts("t", [init()], [
        op("down", "get_request", 2), op("down_timeout", "wait", 9),
        op("up", "callback", 20)]), COMPLETION, "taken at once"),
    # its look-alike: taken later, not at init: a count-1 lock released elsewhere
    ("taken later", SemFacts("t", [init()], [
        op("down", "get_request", 5), op("down_timeout", "wait", 9),
        op("up", "callback", 20)]), COUNTING, "down_timeout"),
    # udlfb's limit_sem: filled by up() in a loop, a pool of free URBs
    ("a pool filled in a loop", SemFacts("p", [init("0", 0)], [
        op("up", "alloc_pool", 3, loop=True), op("down_timeout", "get", 9),
        op("up", "put", 12)]), COUNTING, "pool of tokens"),
    # ipmi_ipmb's wake_thread: a kthread waits in its loop for one event after another
    ("a waiter in a loop is still an event", SemFacts("w", [init("0", 0)], [
        op("down", "thread", 3, loop=True), op("up", "sender", 9)]),
     COMPLETION, "starts at 0"),
    ("up in interrupt context", SemFacts("a", [init()], [
        op("down", "f", 10, balanced=True), op("up", "f", 12, atomic=IRQ)]),
     COUNTING, "interrupt"),
    ("up under a spinlock is fine for a mutex", SemFacts("a", [init()], [
        op("down", "f", 10, balanced=True), op("up", "f", 12, atomic="after spin_lock")]),
     MUTEX, "count 1"),
    ("trylock in interrupt context", SemFacts("a", [init()], [
        op("down_trylock", "f", 10, balanced=True, atomic=IRQ), op("up", "f", 12)]),
     COUNTING, "down_trylock"),
    ("released by another function", SemFacts("r", [init()], [
        op("down", "lock", 10), op("up", "unlock", 20)]), COUNTING, "another function"),
    # the unknown pool
    ("not analysed file", SemFacts("u", [init()], MUTEX_OPS,
                                   not_analysed=["a.c: spatch timed out"]),
     UNKNOWN, "not analysed"),
    ("not analysed function", SemFacts("u", [init()], [
        op("down", "f", 10, balanced=True, analysed=False), op("up", "f", 12)]),
     UNKNOWN, "not analysed"),
    ("escape", SemFacts("e", [init()], MUTEX_OPS, escapes=[EscapeFact("a.c", 3, "f", "g()")]),
     UNKNOWN, "address"),
    ("ambiguous op", SemFacts("p", [init()], MUTEX_OPS,
                              possible_ops=[op("up", "h", 30)]), UNKNOWN, "resolved"),
    ("unbalanced", SemFacts("b", [init()], [op("down", "f", 10), op("up", "f", 12)]),
     UNKNOWN, "not proven released"),
    ("trylock in process context", SemFacts("t", [init()], [
        op("down_trylock", "f", 10, balanced=True), op("up", "f", 12)]), UNKNOWN, "callers"),
    ("no initialiser", SemFacts("i", [], MUTEX_OPS), UNKNOWN, "no initialiser"),
    ("never used", SemFacts("n", [], []), UNKNOWN, "no initialiser"),
    ("count 0 taken and released in one function", SemFacts("g", [init("0", 0)], [
        op("down", "f", 10, balanced=True), op("up", "f", 12)]), COUNTING, "gate"),
    ("count 0 never released", SemFacts("g", [init("0", 0)], [op("down", "f", 10)]),
     UNKNOWN, "never released"),
    ("different counts", SemFacts("d", [init("0", 0), InitFact("1", 1, "a.c", 5, "sema_init")],
                                  MUTEX_OPS), UNKNOWN, "different counts"),
    ("sleeping down in atomic context", SemFacts("s", [init()], [
        op("down", "f", 10, balanced=True, atomic="after spin_lock"), op("up", "f", 12)]),
     UNKNOWN, "atomic"),
]


@pytest.mark.parametrize("name,facts,cls,fragment", CASES, ids=[c[0] for c in CASES])
def test_rule(name, facts, cls, fragment):
    verdict = classify(facts)
    assert verdict.cls == cls, verdict.reasons
    assert fragment in " ".join(verdict.reasons), verdict.reasons
    assert verdict.evidence or cls == UNKNOWN
    if cls == UNKNOWN:
        assert verdict.settle


def test_evidence_is_file_line():
    verdict = classify(SemFacts("m", [init()], MUTEX_OPS))
    assert verdict.evidence[0].startswith("a.c:1:")
    assert any(e.startswith("a.c:10: down() in f()") for e in verdict.evidence)


@pytest.mark.parametrize("expr,macros,value", [
    ("1", {}, 1), ("0", {}, 0), ("8", {}, 8), ("WRITES_IN_FLIGHT", {"WRITES_IN_FLIGHT": "8"}, 8),
    ("(A * 2)", {"A": "(4)"}, 8), ("1U", {}, 1), ("x->max", {}, None), ("B", {"B": "B"}, None),
    ("num_msg", {}, None),
])
def test_eval_count(expr, macros, value):
    assert eval_count(expr, macros) == value
