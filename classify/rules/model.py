"""The facts the rules read (one semaphore's initialisations, calls and escapes),
the verdict they give, and the Case: the facts sorted once for every rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from classify.census.model import ACQUIRE
from classify.census.pairs import Pairing

MUTEX, COMPLETION, COUNTING, UNKNOWN = "mutex", "completion", "counting", "unknown"
CLASSES = (UNKNOWN, MUTEX, COMPLETION, COUNTING)


@dataclass(frozen=True)
class OpFact:
    op: str
    path: str
    line: int
    func: str
    analysed: bool = True          # spatch saw this call
    balanced: bool = False         # an acquisition released on all paths of func
    atomic: str = ""               # why the call is in atomic context, "" if not known to be
    note: str = ""
    loop: bool = False             # inside a loop of its function
    # where its function runs, "process: a() -> b()", from the call graph ("" when
    # not asked): asked for every down_trylock() before the rules run (they read
    # it), and for every call of a mutex or completion once the verdicts are final
    context: str = ""
    # the chains from each root (an ops-table field, a registration, an export...)
    # that reach its function, "hop -> hop", at most audit.MAX_CALLERS; None when
    # not asked (only a mutex's or completion's calls are: audit.add_op_contexts)
    callers: tuple[str, ...] | None = None
    callers_more: int = 0          # the chains left out of callers
    # a call of a function that makes this call on the semaphore it is given
    # (census.summaries): the functions in between, outermost first; path:line is
    # the call in func, and its context is asked of the call graph like a trylock's
    via: tuple[str, ...] = ()
    # a condition under which the call cannot run in the context spatch gave it
    # (census.guards): why that context was dropped
    guard: str = ""

    @property
    def process_only(self) -> bool:
        return self.context.startswith("process:")

    @property
    def interrupt_context(self) -> bool:
        kinds = self.context.split(":", 1)[0]
        return "hardirq" in kinds or "softirq" in kinds

    @property
    def in_interrupt(self) -> bool:
        """In an interrupt, timer or tasklet callback (or one call below one), where
        mutex_unlock() and mutex_trylock() may not be used.  Code under a spinlock
        or with interrupts disabled in process context is atomic too, but a mutex
        may be released (or trylocked) there: only sleeping is forbidden.  A call
        through a helper: when a caller chain of its function starts in an
        interrupt (the call graph's context)."""
        return "callback" in self.atomic or (bool(self.via) and self.interrupt_context)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def show(self) -> str:
        inside = f" in {self.func}()" if self.func else ""
        through = f" through {'() -> '.join(self.via)}()" if self.via else ""
        return f"{self.op}(){inside}{through}"


@dataclass(frozen=True)
class InitFact:
    count: str                     # as written
    value: int | None              # resolved, None when symbolic
    path: str
    line: int
    form: str                      # sema_init | DEFINE_SEMAPHORE | __SEMAPHORE_INITIALIZER


@dataclass(frozen=True)
class EscapeFact:
    path: str
    line: int
    func: str
    to: str                        # "foo()" or "an assignment"
    why: str = ""                  # foo() has a struct semaphore * parameter but
                                   # was not summarised: why (census.summaries)


@dataclass(frozen=True)
class Followed:
    """An address stored in a `struct semaphore *` the census knows, whose calls
    were taken as the semaphore's own."""
    at: str                        # path:line of the store
    pointer: str                   # the pointer's census id
    kind: str                      # member | param | local | global | static
    calls: int                     # calls made through it
    also: list[str]                # the other semaphores stored in it

    def text(self) -> str:
        how = ("passed as the parameter " if self.kind == "param"
               else f"stored in the {self.kind} pointer ")
        return (f"{self.at}: address {how}{self.pointer}; "
                f"{self.calls} call(s) through it followed"
                + (f"; the pointer also holds {', '.join(self.also)}" if self.also else ""))

    def to_json(self) -> dict:
        return {"at": self.at, "pointer": self.pointer, "kind": self.kind,
                "calls": self.calls, "also": self.also}


@dataclass
class SemFacts:
    id: str
    inits: list[InitFact] = field(default_factory=list)
    ops: list[OpFact] = field(default_factory=list)
    possible_ops: list[OpFact] = field(default_factory=list)  # ambiguous targets
    escapes: list[EscapeFact] = field(default_factory=list)
    not_analysed: list[str] = field(default_factory=list)     # file-level failures
    # the proof that takes and releases in different functions are paired on one
    # task (classify/census/pairs.py); None when not asked
    pairing: Pairing | None = None
    # addresses stored in a `struct semaphore *` whose calls were followed
    followed: list[Followed] = field(default_factory=list)


@dataclass
class Verdict:
    cls: str
    reasons: list[str]
    evidence: list[str]
    settle: str = ""
    rule: str = ""                 # the name of the rule that decided


def _ev(items) -> list[str]:
    out = []
    for it in items:
        if isinstance(it, OpFact):
            extra = f": {it.atomic}" if it.atomic else ""
            guard = f" ({it.guard})" if it.guard else ""
            out.append(f"{it.where}: {it.show()}{extra}{guard}")
        elif isinstance(it, InitFact):
            out.append(f"{it.path}:{it.line}: {it.form}, count {it.count}"
                       + (f" (= {it.value})" if it.value is not None
                          and str(it.value) != it.count else ""))
        elif isinstance(it, EscapeFact):
            out.append(f"{it.path}:{it.line}: address handed to {it.to}"
                       + (f" in {it.func}()" if it.func else "")
                       + (f", not followed: {it.why}" if it.why else ""))
        else:
            out.append(str(it))
    return out


def unknown(reasons: list[str], evidence: list, settle: str) -> Verdict:
    return Verdict(UNKNOWN, reasons, _ev(evidence), settle)


def verdict(cls: str, reasons: list[str], evidence: list) -> Verdict:
    return Verdict(cls, reasons, _ev(evidence))


def funcs(ops) -> str:
    """`a(), b()`: the functions of some calls, sorted, each once."""
    return ", ".join(sorted({o.func + "()" for o in ops}))


@dataclass
class Case:
    """One semaphore's facts, sorted the way every rule reads them."""
    facts: SemFacts

    @cached_property
    def inits(self) -> list[InitFact]:
        return sorted(set(self.facts.inits), key=lambda i: (i.path, i.line))

    @cached_property
    def init_takes(self) -> list[OpFact]:
        """The down() on the line right after a sema_init(.., 1) (iwpm's
        "sema_init(&s, 1); down(&s);"): the semaphore starts taken, at 0."""
        after = {(i.path, i.line + 1) for i in self.inits if i.value == 1}
        return [o for o in self.facts.ops if o.op == "down" and (o.path, o.line) in after]

    @cached_property
    def ops(self) -> list[OpFact]:
        taken = set(self.init_takes)
        return sorted(set(self.facts.ops) - taken, key=lambda o: (o.path, o.line, o.op))

    @cached_property
    def acquires(self) -> list[OpFact]:
        return [o for o in self.ops if o.op in ACQUIRE]

    @cached_property
    def ups(self) -> list[OpFact]:
        return [o for o in self.ops if o.op == "up"]

    @cached_property
    def trylocks(self) -> list[OpFact]:
        return [o for o in self.acquires if o.op == "down_trylock"]

    @property
    def acq_funcs(self) -> set[str]:
        return {o.func for o in self.acquires}

    @property
    def up_funcs(self) -> set[str]:
        return {o.func for o in self.ups}

    @cached_property
    def values(self) -> set[int]:
        taken = {(o.path, o.line - 1) for o in self.init_takes}
        return {0 if (i.path, i.line) in taken else i.value
                for i in self.inits if i.value is not None}

    @property
    def count(self) -> int | None:
        """The initial count, when every initialisation gives the same number."""
        if self.inits and len(self.values) == 1 and \
                all(i.value is not None for i in self.inits):
            return next(iter(self.values))
        return None
