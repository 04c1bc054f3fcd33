# long: two detectors over one model of where a function holds the lock; nesting could move out
"""Waits under the lock that the conversion makes visible, and a task holding
several instances of the lock at once.

A semaphore has no lockdep class; a mutex has, and lockdep then also checks what
the workqueue code declares: flush_work(), cancel_work_sync(), flush_workqueue(),
destroy_workqueue() ... acquire the lockdep map of the work (or queue) they wait
for, and a running work item holds it.  Holding the lock while waiting for a work
item that takes it closes a cycle, which lockdep reports once each side has run.
The deadlock is there with the semaphore too (on one instance): the conversion
neither makes nor fixes it, but the patch must say so.

``waits_under_lock(sem, source, graph)`` takes one semaphore record of the audit
(its ``ops``: function, line, op, path) and finds:

* where a function holds it: after a down*() and before the up() that releases it
  in textual order; an up() in a block that closed before and leaves the function
  (return, goto) releases only that path, one in an if branch not its else branch.
  A call of a same-file function that returns holding it (a down() the audit found
  not released there) takes it, of one that only up()s releases it;
* the calls made holding it that wait for other execution (``WAITS``), in the holder
  or, ``MAX_DEPTH`` levels, in the functions it calls (in its file or, not static,
  in the semaphore's other files) before they release it;
* what each waits for, approximated by the work functions, irq handlers and kthread
  functions registered in the wait's file (``REGISTRATIONS``).  The wait's argument
  ties it to a registration when their member chains after the root variable agree
  and the roots are of one struct type, where declared (``flush_work(&a->x.w)`` and
  ``INIT_WORK(&b->x.w, fn)``; ``destroy_workqueue(a->wq)``, ``queue_work(b->wq,
  &b->w)`` and ``INIT_WORK(&c->w, fn)``), else when one chain ends the other.  An
  argument naming a member that ties to nothing waits for nothing the file
  registers; one naming no member (a plain variable, a call) may wait for every
  registration of its kind in the file, and the finding says "may" (``tied`` False);
* whether that function takes the lock: a blocking down*() (not down_trylock(),
  which does not wait, and for which lockdep adds no dependency) in it or in the
  functions it calls, ``MAX_DEPTH`` levels, or, with a call graph, in a function
  whose callers lead back to it.

Lockdep reports the class: the lock held and the lock taken may be two instances,
where the deadlock needs one.  It sees only the workqueue waits: a wait for an irq
thread (free_irq(), synchronize_irq(), disable_irq()) or a kthread (kthread_stop())
it does not track, and those findings say so.

``nested_takes(sem, source, graph)`` finds a task holding two instances at once: a
blocking down*() in a loop (``for``, ``while``, ``*for_each*()``) that the loop
neither releases nor leaves right after, and a blocking down*() while one is held,
in the holder or in a function it calls.  Lockdep reports these as possible
recursive locking unless the mutex is annotated.

Textual, like the rest of the census: comments and strings blanked
(``cscan.clean_source``), functions from ``cscan.scan_scopes``, no preprocessor.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass

from classify.census.callgraph import CallGraph, Node
from classify.census.cscan import Scope, clean_source, scan_scopes
from classify.census.scan import split_args
from classify.records.audit import AuditSem

MAX_DEPTH = 3

BLOCKING = frozenset({"down", "down_interruptible", "down_killable", "down_timeout"})
TAKES = BLOCKING | {"down_trylock"}

# a waiting call -> (what it waits for, the index of the argument naming it, -1: the
# system workqueue)
WAITS: dict[str, tuple[str, int]] = {
    "flush_work": ("work", 0), "cancel_work_sync": ("work", 0),
    "flush_delayed_work": ("work", 0), "cancel_delayed_work_sync": ("work", 0),
    "flush_rcu_work": ("work", 0), "flush_workqueue": ("queue", 0),
    "destroy_workqueue": ("queue", 0), "drain_workqueue": ("queue", 0),
    "flush_scheduled_work": ("queue", -1),
    "free_irq": ("irq", 0), "devm_free_irq": ("irq", 1), "synchronize_irq": ("irq", 0),
    "disable_irq": ("irq", 0),   # waits for the handlers as synchronize_irq() does
    "kthread_stop": ("kthread", 0), "kthread_stop_put": ("kthread", 0),
}

_WORK = ("work", 0, {1: "work item"})
_KTHREAD = ("kthread", -1, {0: "kthread"})
_IRQ = "irq handler"
_THREAD = "threaded irq handler"
# a registration -> (kind, the index of the argument naming the work or irq, -1: the
# left side of the assignment; {the index of a function argument: what it runs as})
REGISTRATIONS: dict[str, tuple[str, int, dict[int, str]]] = {
    "INIT_WORK": _WORK, "INIT_DELAYED_WORK": _WORK, "INIT_DEFERRABLE_WORK": _WORK,
    "INIT_WORK_ONSTACK": _WORK, "INIT_DELAYED_WORK_ONSTACK": _WORK, "INIT_RCU_WORK": _WORK,
    "DECLARE_WORK": _WORK, "DECLARE_DELAYED_WORK": _WORK, "DECLARE_DEFERRABLE_WORK": _WORK,
    "__WORK_INITIALIZER": _WORK, "__DELAYED_WORK_INITIALIZER": _WORK,
    "request_irq": ("irq", 0, {1: _IRQ}), "request_any_context_irq": ("irq", 0, {1: _IRQ}),
    "request_threaded_irq": ("irq", 0, {1: _IRQ, 2: _THREAD}),
    "devm_request_irq": ("irq", 1, {2: _IRQ}),
    "devm_request_any_context_irq": ("irq", 1, {2: _IRQ}),
    "devm_request_threaded_irq": ("irq", 1, {2: _IRQ, 3: _THREAD}),
    "kthread_run": _KTHREAD, "kthread_create": _KTHREAD, "kthread_create_on_node": _KTHREAD,
    "kthread_run_on_cpu": _KTHREAD, "kthread_create_on_cpu": _KTHREAD,
}

# a queueing call -> (the index of the queue, -1: the system workqueue; of the work)
QUEUES: dict[str, tuple[int, int]] = {
    "queue_work": (0, 1), "queue_delayed_work": (0, 1), "mod_delayed_work": (0, 1),
    "queue_rcu_work": (0, 1), "queue_work_on": (1, 2), "queue_delayed_work_on": (1, 2),
    "mod_delayed_work_on": (1, 2), "queue_work_node": (1, 2), "schedule_work": (-1, 0),
    "schedule_delayed_work": (-1, 0), "schedule_work_on": (-1, 1),
    "schedule_delayed_work_on": (-1, 1),
}

# what an argument names: (the struct type of its root variable or "", the member
# chain after the root); ("", "$name") for a plain variable, ("", "") for the rest
Key = tuple[str, str]
SYSTEM_WQ: Key = ("", "$system_wq")

_KEYWORDS = frozenset("if for while switch return sizeof do else case typeof __typeof__ "
                      "defined goto".split())
_CALL_RX = re.compile(r"(?<![\w.>])([A-Za-z_]\w*)\s*\(")
_TOKEN_RX = re.compile(r"[{};]|\belse\b")
_EXIT_RX = re.compile(r"\b(?:return|goto)\b")
_LEAVE_RX = re.compile(r"\b(?:break|return|goto)\b")
_PARENS = r"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"
_LOOP_RX = re.compile(r"(?:\b(?:for|while|\w*for_each\w*)\s*" + _PARENS + r"|\bdo)\s*$")


@dataclass(frozen=True)
class WaitFinding:
    """A wait for other execution, made holding the lock, where that execution
    takes the lock.  Places are "path:line"."""
    sem: str                 # the audit id
    lock: str                # its short name
    holder: str              # the function that took the lock
    take: str                # where
    wait: str                # the waiting call: destroy_workqueue, free_irq, ...
    wait_at: str
    via: tuple[str, ...]     # the calls from the holder to the function that waits
    waited: str              # the work function, irq handler or kthread function
    what: str                # work item | irq handler | threaded irq handler | kthread
    registered_at: str
    registered_with: str     # INIT_WORK, request_threaded_irq, kthread_run, ...
    taken_at: str            # where the waited-for function takes the lock
    taken_in: str            # in which function: itself or one it calls
    tied: bool               # the wait's argument names that registration
    lockdep: bool            # lockdep sees the wait (the workqueue waits do)
    kind: str = "wait"

    def sentence(self) -> str:
        """One sentence for a patch message."""
        lock = self.lock
        taken = (f" in {self.taken_in}()" if self.taken_in != self.waited else "") + \
            f" ({self.taken_at})"
        caller = f"{self.via[-1]}() calls" if self.via else "it calls"
        head = f"{self.holder}() holds {lock} while {caller} {self.wait}() ({self.wait_at})"
        middle, cond = f"the {self.what} {self.waited}() it waits for takes {lock}{taken}", ""
        if not self.tied:
            middle, cond = (f"it may wait for the {self.what} {self.waited}() (registered "
                            f"at {self.registered_at}), which takes {lock}{taken}",
                            "if it does, ")
        tail = ("and lockdep reports it once the lock is a mutex" if self.lockdep else
                "lockdep does not track this wait, so the mutex does not report it either")
        return f"{head}; {middle}: {cond}this deadlock exists with the semaphore too, {tail}."

    def to_json(self) -> dict:
        return {**asdict(self), "via": list(self.via), "sentence": self.sentence()}


@dataclass(frozen=True)
class NestFinding:
    """Two instances of the lock held at once by one task: taken in a loop that
    keeps them (how "loop"), or taken while one is held (how "again")."""
    sem: str
    lock: str
    holder: str
    take: str                # where the holder takes the first
    first: str               # the instance it names
    how: str                 # loop | again
    inner: str               # where the next is taken (the same place for a loop)
    second: str
    via: tuple[str, ...]     # the calls from the holder to the second take
    kind: str = "nesting"

    def sentence(self) -> str:
        """One sentence for a patch message."""
        tail = ("lockdep reports possible recursive locking once the lock is a mutex, "
                "unless the nesting is annotated")
        if self.how == "loop":
            return (f"{self.holder}() takes {self.lock} ({self.first}) in a loop "
                    f"({self.take}) without releasing it there, so it holds several "
                    f"instances at once: {tail} (mutex_lock_nest_lock()).")
        who = f"{self.via[-1]}()" if self.via else "it"
        same = ("with the same instance this deadlocks with the semaphore too; "
                if self.first == self.second and not self.via else "")
        return (f"{self.holder}() holds {self.lock} ({self.first}, {self.take}) while "
                f"{who} takes it again ({self.second}, {self.inner}): {same}{tail} "
                "(mutex_lock_nested()).")

    def to_json(self) -> dict:
        return {**asdict(self), "via": list(self.via), "sentence": self.sentence()}


Finding = WaitFinding | NestFinding


@dataclass(frozen=True)
class Call:
    pos: int
    name: str
    line: int
    paren: int               # the offset of its "("


@dataclass(frozen=True)
class Registration:
    kind: str                # work | irq | kthread
    key: Key                 # the work, irq or task it registers
    func: str
    what: str
    line: int
    with_: str               # the registering call


@dataclass(frozen=True)
class _Event:
    """A take (+1) or release (-1) of the lock in a function: its own down*() or
    up(), or a call of a function that returns holding it or only releases it."""
    pos: int
    delta: int
    line: int
    blocking: bool
    expr: str                # the instance it names


class _File:
    """One file, cleaned and scanned once: its functions and its calls."""

    def __init__(self, path: str, text: str):
        self.path, self.clean = path, clean_source(text)
        self.fs = scan_scopes(self.clean)
        self.bodies: dict[str, list[tuple[int, int]]] = {}
        self.static: set[str] = set()
        for sc in self.fs.scopes:
            name = sc.name if sc.kind == "func" else _unnamed_function(self.clean, sc)
            if name:
                self.bodies.setdefault(name, []).append((sc.start, sc.end))
                if re.search(r"\bstatic\b", self.head(sc.start)) and not path.endswith(".h"):
                    self.static.add(name)
        self.calls = [Call(m.start(1), m.group(1), self.fs.line_of(m.start(1)), m.end() - 1)
                      for m in _CALL_RX.finditer(self.clean) if m.group(1) not in _KEYWORDS]
        self._starts = [c.pos for c in self.calls]

    def head(self, start: int) -> str:
        return _head(self.clean, start)

    def calls_in(self, func: str) -> list[Call]:
        return [c for start, end in self.bodies.get(func, ())
                for c in self.calls[bisect.bisect_left(self._starts, start):
                                    bisect.bisect_left(self._starts, end)]]

    def args(self, call: Call) -> list[str]:
        return _split_args(self.clean, call.paren)

    def at(self, line: int) -> str:
        return f"{self.path}:{line}"

    @functools.cached_property
    def registrations(self) -> list[Registration]:
        return [r for c in self.calls if c.name in REGISTRATIONS for r in _registered(self, c)]

    @functools.cached_property
    def queued(self) -> list[tuple[Key, Key]]:
        """(queue, work) of every queue_work()-like call."""
        out = []
        for c in (c for c in self.calls if c.name in QUEUES):
            (q, w), args = QUEUES[c.name], self.args(c)
            if max(q, w) < len(args):
                out.append((SYSTEM_WQ if q < 0 else _key(self, c.pos, args[q]),
                            _key(self, c.pos, args[w])))
        return out


def _head(clean: str, start: int) -> str:
    """The declaration before the body that starts at start."""
    return clean[max(clean.rfind(";", 0, start), clean.rfind("}", 0, start)) + 1:start]


def _unnamed_function(clean: str, sc: Scope) -> str:
    """The name of a function cscan.scan_scopes leaves unnamed: it takes a name that
    starts with "__" for an attribute (``static void __pvcalls_back_accept(...)``)."""
    if sc.kind != "other" or sc.parent != -1:
        return ""
    m = re.search(r"(?<![\w.>])(__\w+)\s*\([^;{}=]*\)\s*$", _head(clean, sc.start))
    return m.group(1) if m else ""


def _split_args(clean: str, paren: int) -> list[str]:
    """The top-level arguments of the call whose "(" is at paren, without
    whitespace (census.scan's reading of a call)."""
    return [a for a in split_args(clean, paren)[0] if a]


def _key(f: _File, pos: int, expr: str) -> Key:
    """What the argument expr at pos names (see Key): "&p->x.work" with "struct foo
    *p" declared is ("foo", "x.work")."""
    e = re.sub(r"\s+", "", expr)
    e = re.sub(r"^\((?:struct)?\w+\**\)", "", e)            # a cast
    e = re.sub(r"\[[^\]]*\]", "", e.lstrip("&*")).replace("->", ".")
    while e.startswith("(") and e.endswith(")"):
        e = e[1:-1].lstrip("&*")
    if not re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", e):
        return "", ""
    root, _, chain = e.partition(".")
    return (_root_type(f, pos, root), chain) if chain else ("", "$" + root)


def _root_type(f: _File, pos: int, root: str) -> str:
    """The struct type of the variable root, from its last declaration before pos in
    the function (parameters included), else in the file; "" if none."""
    rx = re.compile(r"\bstruct\s+(\w+)\b(?:(?!\bstruct\b)[^;(){}=])*?[\s,*]"
                    + re.escape(root) + r"\s*[,;=)\[]")
    body = next((b for bs in f.bodies.values() for b in bs if b[0] < pos < b[1]), None)
    head = body[0] - len(f.head(body[0])) if body else 0
    for a, b in ((head, pos), (0, head)):
        found = [m.group(1) for m in rx.finditer(f.clean, a, b)]
        if found:
            return found[-1]
    return ""


def _same(a: Key, b: Key, exact: bool) -> bool:
    """One chain on roots of one type (or of a type not known), or, not exact, one
    chain the tail of the other (a "work" registered, "priv.work" flushed).  A plain
    variable is only itself."""
    if not a[1] or not b[1] or "$" in (a[1][0], b[1][0]):
        return bool(a[1]) and a == b
    if exact:
        return a[1] == b[1] and (not a[0] or not b[0] or a[0] == b[0])
    return a[1].endswith("." + b[1]) or b[1].endswith("." + a[1])


def _best(keys: list[Key], wanted: set[Key]) -> list[int]:
    """The indexes of the keys that match one of wanted: exactly, else as a tail."""
    for exact in (True, False):
        hit = [i for i, k in enumerate(keys) if any(_same(k, w, exact) for w in wanted)]
        if hit:
            return hit
    return []


def _registered(f: _File, c: Call) -> list[Registration]:
    kind, index, funcs = REGISTRATIONS[c.name]
    args = f.args(c)
    if index < 0:       # task = kthread_run(fn, ...)
        m = re.search(r"([\w.\->\[\]]+)\s*=\s*(?:\(\s*\w+\s*\*?\s*\))?\s*$",
                      f.clean[max(0, c.pos - 120):c.pos])
        key = _key(f, c.pos, m.group(1)) if m else ("", "")
    else:
        key = _key(f, c.pos, args[index]) if index < len(args) else ("", "")
    fns = {i: args[i].lstrip("&").strip() for i in funcs if i < len(args)}
    return [Registration(kind, key, fn, funcs[i], c.line, c.name) for i, fn in fns.items()
            if re.fullmatch(r"[A-Za-z_]\w*", fn) and fn != "NULL"]


def _waited(f: _File, call: Call) -> tuple[list[Registration], bool]:
    """The registrations of f a wait may wait for, and whether its argument ties it
    to them (see the module doc)."""
    kind, index = WAITS[call.name]
    regs = [r for r in f.registrations if r.kind == ("work" if kind == "queue" else kind)]
    args = f.args(call)
    arg = SYSTEM_WQ if index < 0 else (
        _key(f, call.pos, args[index]) if index < len(args) else ("", ""))
    wanted = {arg}
    if kind == "queue":
        wanted = {f.queued[i][1] for i in _best([q for q, _ in f.queued], wanted)}
    elif kind == "work" and arg[1].endswith(".work"):   # INIT_DELAYED_WORK(&d->dw) for
        wanted.add((arg[0], arg[1][:-5]))               # flush_work(&d->dw.work)
    tied = [regs[i] for i in _best([r.key for r in regs], wanted)]
    if tied:
        return tied, True
    weak = not arg[1] or arg[1][0] == "$" and arg != SYSTEM_WQ
    return (regs if weak else []), False


def _statement_start(clean: str, pos: int) -> int:
    """The offset after the ; { or } that ends the statement before pos (not one in
    the parentheses of a for head)."""
    depth = 0
    for i in range(pos - 1, max(-1, pos - 2000), -1):
        depth += {")": 1, "(": -1}.get(clean[i], 0)
        if clean[i] in ";{}" and depth <= 0:
            return i + 1
    return max(0, pos - 2000)


def _exclusive(clean: str, a: int, b: int) -> bool:
    """Whether a lies in the branch of an if and b in one of its else branches, so
    that no path runs both: an else right after the statement or block holding a,
    no further out than a, and b before that else's branch ends (or another else)."""
    toks, depth = [], 0
    for m in _TOKEN_RX.finditer(clean, a, b):
        depth += {"{": 1, "}": -1}.get(m.group(), 0)
        toks.append((m.group(), depth))
    for i, (tok, _) in enumerate(toks):
        if tok != "else" or i == 0 or toks[i - 1][0] not in ";}":
            continue
        d = toks[i - 1][1]
        if d > 0 or any(t in ";}" and dep <= d for t, dep in toks[:i - 1]):
            continue      # a is not in the branch that ends right before this else
        after = toks[i + 1:]
        if all(t not in ";}" or dep > d or (j + 1 < len(after) and after[j + 1][0] == "else")
               for j, (t, dep) in enumerate(after)):
            return True
    return False


def _left_before(f: _File, a: int, pos: int) -> bool:
    """Whether the path through a cannot reach pos: a is in a block that closed
    before pos and leaves the function (an error path's up() and return)."""
    i = f.fs.innermost(a)
    sc = f.fs.scopes[i] if i >= 0 else None
    return (sc is not None and sc.kind == "block" and sc.end < pos
            and bool(_EXIT_RX.search(f.clean, sc.start, sc.end)))


def _held(f: _File, events: list[_Event], pos: int, start: int) -> tuple[bool, _Event | None]:
    """Whether the lock is held at pos of a function entered holding it start times,
    and the function's own take that holds it (None: held since the entry)."""
    depth, take = start, None
    for e in events:
        if e.pos >= pos:
            break
        if not _left_before(f, e.pos, pos) and not _exclusive(f.clean, e.pos, pos):
            depth += e.delta
            take = e if e.delta > 0 else take
    return depth > 0, (take if depth > 0 else None)


@dataclass(frozen=True)
class _Site:
    """A call made holding the lock."""
    holder: Node             # the function that took it
    take: _Event
    path: str                # the file and function that make the call
    func: str
    via: tuple[str, ...]
    call: Call


class _Sem:
    """One semaphore: its operations by function, and the files read once."""

    def __init__(self, sem: AuditSem, source: Callable[[str], str], graph: CallGraph | None):
        self.id, self.source, self.graph = sem["id"], source, graph
        self.lock = self.id.rsplit(":", 1)[-1].rsplit(".", 1)[-1].lstrip("*")
        self.ops = [o for o in sem.get("ops", ())
                    if o.get("function") and not o["function"].startswith("macro ")]
        self.paths = sorted({o["path"] for o in self.ops})
        taking = {(o["path"], o["function"]) for o in self.ops if o["op"] in TAKES}
        first = {}          # a function's first op: an up() first drops and retakes
        for o in sorted(self.ops, key=lambda o: -int(o["line"])):
            first[(o["path"], o["function"])] = o["op"]
        self.takers = {(o["path"], o["function"]) for o in self.ops if o["op"] in TAKES
                       and not o.get("balanced", True)
                       and first[(o["path"], o["function"])] != "up"}
        self.releasers = {(o["path"], o["function"]) for o in self.ops if o["op"] == "up"} - taking
        self.files: dict[str, _File] = {}
        self._events: dict[Node, list[_Event]] = {}
        self._graph_takes: dict[Node, tuple[str, int, str]] | None = None

    def file(self, path: str) -> _File:
        if path not in self.files:
            try:
                text = self.source(path)
            except OSError:
                text = ""
            self.files[path] = _File(path, text)
        return self.files[path]

    def events(self, path: str, func: str) -> list[_Event]:
        """The takes and releases in one function, in textual order."""
        if (path, func) not in self._events:
            f = self.file(path)
            out = [self._op_event(f, o) for o in self.ops
                   if (o["path"], o["function"]) == (path, func)]
            for c in f.calls_in(func):
                if c.name != func and (path, c.name) in self.takers | self.releasers:
                    taker = (path, c.name) in self.takers
                    out.append(_Event(c.pos, 1 if taker else -1, c.line, taker, c.name + "()"))
            self._events[(path, func)] = sorted(out, key=lambda e: e.pos)
        return self._events[(path, func)]

    @staticmethod
    def _op_event(f: _File, o: dict) -> _Event:
        start = f.fs.pos_of_line(int(o["line"]))
        end = f.clean.find("\n", start)
        m = re.compile(r"\b" + re.escape(o["op"]) + r"\s*\(").search(
            f.clean, start, end if end >= 0 else len(f.clean))
        args = _split_args(f.clean, m.end() - 1) if m else []
        return _Event(m.start() if m else start, 1 if o["op"] in TAKES else -1, int(o["line"]),
                      o["op"] in BLOCKING, re.sub(r"\s+", "", args[0]) if args else "")

    def holders(self) -> list[Node]:
        """The functions that take the lock: by their own down*() or a taker's call."""
        out = {(o["path"], o["function"]) for o in self.ops if o["op"] in TAKES}
        for path in {p for p, _ in self.takers}:
            f = self.file(path)
            out |= {(path, fn) for fn in f.bodies
                    if any((path, c.name) in self.takers for c in f.calls_in(fn))}
        return sorted(out)

    def defined(self, path: str, name: str) -> str | None:
        """The file defining the function name called from path: path itself, else
        one of the semaphore's files that defines it not static."""
        if name in self.file(path).bodies:
            return path
        return next((p for p in self.paths if name in self.file(p).bodies
                     and name not in self.file(p).static), None)

    def held_sites(self, path: str, func: str, start: int = 0, via: tuple[str, ...] = (),
                   holder: tuple[Node, _Event] | None = None) -> Iterator[_Site]:
        """The calls made holding the lock in func and, MAX_DEPTH levels, in the
        functions it calls holding it."""
        f, events = self.file(path), self.events(path, func)
        for call in f.calls_in(func):
            held, take = _held(f, events, call.pos, start)
            h = ((path, func), take) if take is not None else holder
            if not held or h is None:
                continue
            yield _Site(h[0], h[1], path, func, via, call)
            callee = self.defined(path, call.name)
            if callee and call.name != func and call.name not in via and len(via) < MAX_DEPTH:
                yield from self.held_sites(callee, call.name, 1, via + (call.name,), h)

    def takes(self, path: str, func: str, depth: int = 0) -> tuple[str, int, str] | None:
        """(path, line, function) of a blocking take of the lock in func or in the
        functions it calls, MAX_DEPTH levels; else as the call graph leads."""
        for e in self.events(path, func):
            if e.delta > 0 and e.blocking:
                return path, e.line, func
        for c in self.file(path).calls_in(func) if depth < MAX_DEPTH else ():
            callee = self.defined(path, c.name)
            got = self.takes(callee, c.name, depth + 1) if callee and c.name != func else None
            if got:
                return got
        return self.graph_takes().get((path, func)) if depth == 0 else None

    def graph_takes(self) -> dict[Node, tuple[str, int, str]]:
        """For every function the call graph leads back to from a blocking take in
        MAX_DEPTH + 1 hops of callers: the take's path, line and function."""
        if self.graph is None:
            return {}
        if self._graph_takes is None:
            found = {(o["path"], o["function"]): (o["path"], int(o["line"]), o["function"])
                     for o in self.ops if o["op"] in BLOCKING}
            frontier = list(found)
            for _ in range(MAX_DEPTH + 1):
                edges = [(e.caller, node) for node in frontier
                         for e in self.graph.callers.get(node, ())]
                frontier = [c for c, node in edges if c not in found]
                for caller, node in edges:
                    found.setdefault(caller, found[node])
            self._graph_takes = found
        return self._graph_takes


def waits_under_lock(sem: AuditSem, source: Callable[[str], str],
                     graph: CallGraph | None = None) -> list[WaitFinding]:
    """The waits for execution that takes the lock, made holding it, of one
    semaphore record of the audit.  source: a tree file's text by its path (raw or
    already cleaned); graph: a call graph whose callers lead to the functions of the
    semaphore's ops (optional: it finds takes in files its ops are not in)."""
    s = _Sem(sem, source, graph)
    out: dict[tuple, WaitFinding] = {}
    for path, func in s.holders():
        for site in s.held_sites(path, func):
            for fnd in _wait_findings(s, site) if site.call.name in WAITS else ():
                out.setdefault((fnd.holder, fnd.take, fnd.wait_at, fnd.waited), fnd)
    return list(out.values())


def _wait_findings(s: _Sem, site: _Site) -> Iterator[WaitFinding]:
    """The registrations the wait may wait for that take the lock."""
    f = s.file(site.path)
    regs, tied = _waited(f, site.call)
    for r in regs:
        got = s.takes(site.path, r.func)
        if got is not None:
            yield WaitFinding(
                s.id, s.lock, site.holder[1], f"{site.holder[0]}:{site.take.line}",
                site.call.name, f.at(site.call.line), site.via, r.func, r.what,
                f.at(r.line), r.with_, f"{got[0]}:{got[1]}", got[2], tied,
                WAITS[site.call.name][0] in ("work", "queue"))


def nested_takes(sem: AuditSem, source: Callable[[str], str],
                 graph: CallGraph | None = None) -> list[NestFinding]:
    """The places where one task holds two instances of the lock at once, of one
    semaphore record of the audit (see the module doc)."""
    s = _Sem(sem, source, graph)
    out: dict[tuple, NestFinding] = {}
    for path, func in s.holders():
        f, events = s.file(path), s.events(path, func)
        for e in events:
            if e.delta > 0 and e.blocking and _kept_in_loop(f, events, e):
                out.setdefault((f.at(e.line),) * 2, NestFinding(
                    s.id, s.lock, func, f.at(e.line), e.expr, "loop", f.at(e.line), e.expr, ()))
        for site in s.held_sites(path, func):
            inner = next((e for e in s.events(site.path, site.func)
                          if e.pos == site.call.pos and e.delta > 0 and e.blocking), None)
            if inner is not None:
                take = f"{site.holder[0]}:{site.take.line}"
                out.setdefault((take, f"{site.path}:{inner.line}"), NestFinding(
                    s.id, s.lock, site.holder[1], take, site.take.expr, "again",
                    f"{site.path}:{inner.line}", inner.expr, site.via))
    return list(out.values())


def _kept_in_loop(f: _File, events: list[_Event], e: _Event) -> bool:
    """Whether the take e is in a loop body that releases nothing and does not leave
    the loop unconditionally after it: each round takes one more instance."""
    body = _loop_body(f, e.pos)
    if body is None or any(x.delta < 0 and body[0] <= x.pos < body[1] for x in events):
        return False
    i = f.fs.innermost(e.pos)
    end = f.fs.scopes[i].end if i >= 0 else body[1]
    for m in _LEAVE_RX.finditer(f.clean, e.pos, min(end, body[1])):
        head = f.clean[_statement_start(f.clean, m.start()):m.start()]
        if f.fs.innermost(m.start()) == i and not re.search(r"\b(?:if|else|case)\b", head):
            return False
    return True


def _loop_body(f: _File, pos: int) -> tuple[int, int] | None:
    """The span of the innermost loop body around pos, in its function."""
    st = _statement_start(f.clean, pos)
    if _LOOP_RX.search(f.clean[st:pos].rstrip()):          # for (...) down(...);
        end = f.clean.find(";", pos)
        return st, end if end >= 0 else len(f.clean)
    i = f.fs.innermost(pos)
    while i >= 0 and f.fs.scopes[i].kind == "block":
        sc = f.fs.scopes[i]
        head = f.clean[_statement_start(f.clean, sc.start):sc.start].rstrip()
        once = re.match(r"\s*while\s*\(\s*0\s*\)", f.clean[sc.end + 1:sc.end + 40])
        if _LOOP_RX.search(head) and not (head.endswith("do") and once):
            return sc.start, sc.end
        i = sc.parent
    return None


def lock_findings(sem: AuditSem, source: Callable[[str], str],
                  graph: CallGraph | None = None) -> list[Finding]:
    """Both kinds for one semaphore record of the audit, the waits first."""
    return [*waits_under_lock(sem, source, graph), *nested_takes(sem, source, graph)]
