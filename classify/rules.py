"""The classification rules: facts about one semaphore in, a verdict out.

Pure functions, no I/O.  The verdict is one of the pools of the 2005 Generic
Mutex Subsystem proposal -- ``mutex``, ``completion``, ``counting`` -- or
``unknown``; it carries the reasons (the rules that fired) and the file:line
evidence, and for ``unknown`` what would settle the case.  Precision comes
before coverage: whatever is not proven stays ``unknown``.
"""

from __future__ import annotations

import ast
import operator
import re
from dataclasses import dataclass, field

MUTEX, COMPLETION, COUNTING, UNKNOWN = "mutex", "completion", "counting", "unknown"
CLASSES = (UNKNOWN, MUTEX, COMPLETION, COUNTING)
ACQUIRE = ("down", "down_interruptible", "down_killable", "down_trylock", "down_timeout")


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

    @property
    def in_interrupt(self) -> bool:
        """In an interrupt, timer or tasklet callback (or one call below one), where
        mutex_unlock() and mutex_trylock() may not be used.  Code under a spinlock
        or with interrupts disabled in process context is atomic too, but a mutex
        may be released (or trylocked) there: only sleeping is forbidden."""
        return "callback" in self.atomic

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def show(self) -> str:
        inside = f" in {self.func}()" if self.func else ""
        return f"{self.op}(){inside}"


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


@dataclass
class SemFacts:
    id: str
    inits: list[InitFact] = field(default_factory=list)
    ops: list[OpFact] = field(default_factory=list)
    possible_ops: list[OpFact] = field(default_factory=list)  # ambiguous targets
    escapes: list[EscapeFact] = field(default_factory=list)
    not_analysed: list[str] = field(default_factory=list)     # file-level failures


@dataclass
class Verdict:
    cls: str
    reasons: list[str]
    evidence: list[str]
    settle: str = ""


# ------------------------------------------------------------- count values

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Div: operator.floordiv,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift,
           ast.BitOr: operator.or_, ast.BitAnd: operator.and_}


def eval_count(expr: str, macros: dict[str, str], depth: int = 0) -> int | None:
    """The integer value of a count expression, expanding object-like macros."""
    e = re.sub(r"\s+", " ", expr.strip())
    e = re.sub(r"(?<=\d)[uUlL]+\b", "", e)
    if depth > 8:
        return None

    def sub(m: re.Match) -> str:
        name = m.group(0)
        if name in macros:
            v = eval_count(macros[name], macros, depth + 1)
            if v is not None:
                return str(v)
        return name
    e = re.sub(r"\b[A-Za-z_]\w*\b", sub, e)
    e = re.sub(r"^\((?:unsigned\s+)?(?:int|long)\)", "", e)
    if not re.fullmatch(r"[\d\s()+\-*/<>|&x]+", e):
        return None
    try:
        tree = ast.parse(e.replace("/", "//"), mode="eval")
    except SyntaxError:
        try:
            return int(e, 0)
        except ValueError:
            return None
    return _eval(tree.body)


def _eval(node) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _eval(node.operand)
        return -v if v is not None else None
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _eval(node.left), _eval(node.right)
        if a is None or b is None:
            return None
        try:
            return _BINOPS[type(node.op)](a, b)
        except (ZeroDivisionError, ValueError):
            return None
    return None


# ------------------------------------------------------------- the rules

def _ev(items) -> list[str]:
    out = []
    for it in items:
        if isinstance(it, OpFact):
            extra = f": {it.atomic}" if it.atomic else ""
            out.append(f"{it.where}: {it.show()}{extra}")
        elif isinstance(it, InitFact):
            out.append(f"{it.path}:{it.line}: {it.form}, count {it.count}"
                       + (f" (= {it.value})" if it.value is not None
                          and str(it.value) != it.count else ""))
        elif isinstance(it, EscapeFact):
            out.append(f"{it.path}:{it.line}: address handed to {it.to}"
                       + (f" in {it.func}()" if it.func else ""))
        else:
            out.append(str(it))
    return out


def _unknown(reasons, evidence, settle) -> Verdict:
    return Verdict(UNKNOWN, reasons, _ev(evidence), settle)


def classify(sf: SemFacts) -> Verdict:
    """Sort one semaphore into a pool, with reasons and evidence."""
    inits = sorted(set(sf.inits), key=lambda i: (i.path, i.line))
    ops = sorted(set(sf.ops), key=lambda o: (o.path, o.line, o.op))
    acquires = [o for o in ops if o.op in ACQUIRE]
    ups = [o for o in ops if o.op == "up"]
    init_ev = list(inits)

    # Facts that are certain whatever else happens.
    values = {i.value for i in inits if i.value is not None}
    big = [i for i in inits if i.value is not None and i.value > 1]
    if big:
        return Verdict(COUNTING, [f"count above 1: initial count {big[0].count}"
                                  + (f" = {big[0].value}" if big[0].count != str(big[0].value)
                                     else "")], _ev(big + ops[:6]))

    if sf.not_analysed:
        return _unknown([f"not analysed: {e}" for e in sf.not_analysed], init_ev + ops[:6],
                        "make spatch parse the file (or review it by hand)")
    unparsed = [o for o in ops if not o.analysed]
    if unparsed:
        funcs = sorted({o.func or "(file scope)" for o in unparsed if not o.func.startswith("macro ")})
        macros = sorted({o.func[6:] for o in unparsed if o.func.startswith("macro ")})
        what = []
        if funcs:
            what.append("spatch could not parse " + ", ".join(f + "()" for f in funcs))
        if macros:
            what.append("calls inside macro " + ", ".join(macros) + ", which spatch does "
                        "not expand")
        return _unknown([f"not analysed: {'; '.join(what)} (semaphore calls spatch did not see)"],
                        unparsed, "review those functions and macros by hand "
                        "(or fix the parse with macro hints)")
    timeouts = [o for o in ops if o.op == "down_timeout"]
    if timeouts:
        return Verdict(COUNTING, ["down_timeout: mutexes have no timed lock, "
                                  "it stays a semaphore"], _ev(timeouts + init_ev))
    if not inits:
        if not ops:
            return _unknown(["declared, but no initialiser and no down()/up() found"], [],
                            "find its users: through a pointer, a macro, or unused")
        return _unknown(["no initialiser found (sema_init, DEFINE_SEMAPHORE, "
                         "__SEMAPHORE_INITIALIZER)"], ops[:6],
                        "find where its count is set (e.g. sema_init through a pointer)")
    symbolic = [i for i in inits if i.value is None]
    if symbolic:
        return _unknown([f"initial count `{symbolic[0].count}` could not be resolved"],
                        init_ev, f"check the value of `{symbolic[0].count}`: 1 makes it a mutex "
                        "candidate, 0 a completion candidate, more a counting semaphore")
    if len(values) > 1:
        return _unknown(["initialised with different counts "
                         f"({', '.join(str(v) for v in sorted(values))})"], init_ev,
                        "review which initialisation applies")
    count = values.pop()
    if count < 0:
        return _unknown([f"negative initial count {count}"], init_ev, "review by hand")
    if sf.possible_ops:
        return _unknown(["an operation whose target could not be resolved may act on it"],
                        sf.possible_ops[:6], "check which semaphore those calls use")
    if sf.escapes:
        return _unknown(["its address is handed to other code, which may down() or up() it"],
                        sf.escapes[:6], "follow the pointer into the callee(s)")
    if not acquires and not ups:
        return _unknown(["initialised but never taken or released here"], init_ev,
                        "find its users (through a pointer or a macro), or remove it")
    sleeping_atomic = [o for o in acquires if o.atomic and o.op != "down_trylock"]
    if sleeping_atomic:
        return _unknown(["a sleeping down() in atomic context (a bug either way)"],
                        sleeping_atomic, "review the locking of those calls")

    acq_funcs = {o.func for o in acquires}
    up_funcs = {o.func for o in ups}
    trylocks = [o for o in acquires if o.op == "down_trylock"]

    if count == 0:
        if not ups:
            return _unknown(["starts at 0 and is never released here"], init_ev + acquires[:6],
                            "find who up()s it")
        if not acquires:
            return _unknown(["starts at 0 and is never waited on here"], init_ev + ups[:6],
                            "find who down()s it")
        both = sorted(acq_funcs & up_funcs)
        if both:
            return _unknown([f"starts at 0 (locked) but is taken and released in "
                             f"{', '.join(f + '()' for f in both)}"], init_ev + ops[:8],
                            "a gate opened once, or a mutex initialised locked: review")
        if trylocks:
            return _unknown(["starts at 0 with a down_trylock(): try_wait_for_completion() "
                             "may fit"], init_ev + trylocks, "review the trylock's purpose")
        return Verdict(COMPLETION, [
            "starts at 0: down() waits for an event",
            "waited for in " + ", ".join(sorted(f + "()" for f in acq_funcs)),
            "signalled by up() in " + ", ".join(sorted(f + "()" for f in up_funcs))
            + ", never in a function that waits",
        ], _ev(init_ev + acquires + ups))

    # count == 1: a mutex candidate
    atomic_ups = [o for o in ups if o.in_interrupt]
    if atomic_ups:
        return Verdict(COUNTING, ["binary semaphore released in interrupt context: "
                                  "mutex_unlock() must not be called there"],
                       _ev(atomic_ups + init_ev))
    atomic_try = [o for o in trylocks if o.in_interrupt]
    if atomic_try:
        return Verdict(COUNTING, ["binary semaphore taken with down_trylock() in interrupt "
                                  "context: mutex_trylock() must not be called there"],
                       _ev(atomic_try + init_ev))
    foreign_ups = [o for o in ups if o.func not in acq_funcs]
    if foreign_ups:
        return Verdict(COUNTING, [
            "binary semaphore released by another function: up() in "
            + ", ".join(sorted({o.func + "()" for o in foreign_ups}))
            + ", which never takes it (maybe another task); a mutex must be released "
            "by its owner"], _ev(foreign_ups + acquires[:4] + init_ev))
    if trylocks:
        return _unknown(["down_trylock() on a binary semaphore: often chosen because the "
                         "caller may run in atomic context, where mutex_trylock() is not "
                         "allowed; its callers were not followed"], trylocks + init_ev,
                        "check that " + ", ".join(sorted({o.func + "()" for o in trylocks}))
                        + " only runs in process context")
    unbalanced = [o for o in acquires if not o.balanced]
    if unbalanced:
        return _unknown(["an acquisition is not proven released on every path of its "
                         "function"], unbalanced + ups[:4],
                        "check those paths: held across return (to user space?) or "
                        "a form the balance rule does not know")
    if not acquires:
        return _unknown(["count 1 but only released, never taken here"], init_ev + ups[:6],
                        "find who takes it")
    return Verdict(MUTEX, [
        "initial count 1",
        "every down() is released by up() on all paths of the same function",
        "no up() outside the functions that take it, none in atomic context",
        "no down_timeout(), address not handed to other code",
    ], _ev(init_ev + acquires + ups))
