"""The call graph of the functions that hold semaphore calls, and the execution
contexts they can run in (issue 13).

``build_callgraph(census, root)`` starts from the functions (and function-like
macros) of ``census.ops`` and walks to their callers: the calls in the same file
(``callsites``), and for a function that is not static (or is in a header) the
calls in the files ``git grep -w`` finds, one batched grep per round, at most
``GREP_ROUNDS`` rounds.  Callers through pointers: a struct initializer field
(``contexts.OPS_FIELDS``), a registration call (``contexts.REGISTRATIONS``),
and a function passed to any other function, which calls it synchronously (the
context of the function passing it).  ``CallGraph.contexts(path, func)`` then
gives the set of contexts reaching the function, to any depth, with a chain of
file:line hops; ``unknown`` when some chain starts where the context is not known
(an exported function, a pointer stored elsewhere, no caller found, the grep
limits).  A call made under a spinlock, with interrupts or preemption off or in
an RCU read section makes the path atomic.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from classify.census.callsites import CALLSITES_VERSION, scan_callsites
from classify.census.contexts import (ATOMIC, HARDIRQ, PROCESS, SOFTIRQ, UNKNOWN,
                                      field_context, registration_context)
from classify.census.cscan import read_text
from classify.census.grep import grep_names, tree_key
from classify.census.pool import scan_files

log = logging.getLogger("sem2mutex.callgraph")

GREP_ROUNDS = 4          # rounds of callers in other files, then unknown
MAX_CALLER_FILES = 20    # a name called from more files is not followed: unknown

Node = tuple[str, str]   # (path, function)


@dataclass(frozen=True)
class Contexts:
    contexts: frozenset[str]
    atomic_path: bool
    chain: list[str]
    # one chain per context ("process", "softirq", "hardirq", "unknown", and
    # "atomic" for a path through a call under a lock)
    chains: dict[str, list[str]] = field(default_factory=dict, compare=False)


@dataclass
class _Edge:
    caller: Node
    hop: str
    atomic: bool
    line: int = 0


@dataclass(frozen=True)
class Ref:
    """One reference to a function, as the pairing proof reads it: a call (or a
    synchronous pass) by caller at path:line, or a store into detail
    ("TYPE.field" or an assignment's left side), or a registration."""
    kind: str          # call | arg | field | store
    path: str
    line: int
    caller: str
    detail: str


@dataclass
class CallGraph:
    root: Path
    callers: dict[Node, list[_Edge]] = field(default_factory=dict)
    roots: dict[Node, list[tuple[str, str]]] = field(default_factory=dict)  # ctx, hop
    refs: dict[Node, list[Ref]] = field(default_factory=dict)
    # functions whose callers were not all searched (grep limits, not found): why
    open_ends: dict[Node, str] = field(default_factory=dict)
    files_scanned: int = 0
    grep_rounds: int = 0
    grep_seconds: float = 0.0
    seconds: float = 0.0
    _solved: dict[Node, Contexts] | None = None

    def contexts(self, path: str, func: str) -> Contexts:
        if func.startswith("macro "):
            func = func[6:]
        if self._solved is None:
            self._solved = _solve(self)
        got = self._solved.get((path, func))
        if got is None:
            return Contexts(frozenset({UNKNOWN}), False,
                            [f"{path}: {func}() is not in the call graph"])
        return got

    def root_chains(self, path: str, func: str) -> list[list[str]]:
        """One shortest chain from each root that reaches the function."""
        target = (path, func[6:] if func.startswith("macro ") else func)
        down: dict[Node, list[str]] = {target: []}   # the hops from a node to target
        queue = deque([target])
        out = []
        while queue:
            node = queue.popleft()
            for ctx, hop in self.roots.get(node, ()):
                out.append([hop] + down[node])
            for e in self.callers.get(node, ()):
                if e.caller not in down:
                    down[e.caller] = [e.hop] + down[node]
                    queue.append(e.caller)
        return out


class _Builder:
    """The backward walk: from the functions with semaphore calls to their callers."""

    def __init__(self, census, root: Path, cache):
        self.census, self.root, self.cache = census, Path(root), cache
        self.scans: dict[str, dict] = {}
        self.graph = CallGraph(self.root)
        self.seen: set[Node] = set()
        self.tree: str | None = None

    def scan(self, rel: str) -> dict:
        if rel not in self.scans:
            self.prefetch({rel})
        return self.scans[rel]

    def prefetch(self, rels: set[str]) -> None:
        """Scan the files of one step of the walk together (on every core)."""
        texts, keys = {}, {}
        for rel in sorted(rels - set(self.scans)):
            text = self.census.texts.get(rel)
            if text is None:
                try:
                    text = read_text(self.root, rel)
                except OSError as err:
                    log.warning("%s: %s", rel, err)
                    text = ""
            keys[rel] = "callsites-" + hashlib.sha256(
                (CALLSITES_VERSION + rel + "\0" + text).encode(
                    "utf-8", "surrogateescape")).hexdigest()
            got = self.cache.get(keys[rel]) if self.cache is not None else None
            if got is None:
                texts[rel] = text
            else:
                self.scans[rel] = got
        for rel, got in scan_files(scan_callsites, sorted(texts.items())).items():
            if self.cache is not None:
                self.cache.put(keys[rel], got)
            self.scans[rel] = got
        self.graph.files_scanned += len(keys)

    def run(self, targets: set[Node] | None = None) -> CallGraph:
        frontier: set[Node] = set(targets) if targets is not None else set()
        for op in self.census.ops if targets is None else ():
            if op.func:
                frontier.add((op.path, op.func[6:] if op.func.startswith("macro ") else op.func))
        self.seen |= frontier
        while frontier:
            new: set[Node] = set()
            remote = []
            self.prefetch({node[0] for node in frontier})
            for node in sorted(frontier):
                new |= self.add_refs(node, node[0])
                info = self.scan(node[0])["funcs"].get(node[1])
                if info is None:
                    why = (f"{node[0]}: {node[1]}() is not defined where its calls are "
                           "(the scanner did not find it)")
                    self.root_of(node, UNKNOWN, why)
                    self.graph.open_ends[node] = why
                elif (not info["static"] or node[0].endswith(".h")) and \
                        not self.known_unknown(node):
                    remote.append(node)   # a static inline of a header: its includers
            if remote:
                new |= self.remote_callers(remote)
            frontier = new - self.seen
            self.seen |= frontier
        return self.graph

    def known_unknown(self, node: Node) -> bool:
        """Stored elsewhere, not found...: the node reaches `unknown` already, and
        its callers in other files are not searched (that could only add contexts to
        a function no rule can call process-only).  An exported function is still
        followed: the pairing proof needs its callers in the tree."""
        return any(ctx == UNKNOWN and " is exported:" not in hop
                   for ctx, hop in self.graph.roots.get(node, ()))

    def root_of(self, node: Node, ctx: str, hop: str) -> None:
        self.graph.roots.setdefault(node, []).append((ctx, hop))

    def remote_callers(self, nodes: list[Node]) -> set[Node]:
        if self.graph.grep_rounds >= GREP_ROUNDS:
            for node in nodes:
                why = (f"{node[0]}: {node[1]}() is not static; callers in other files "
                       f"not followed beyond {GREP_ROUNDS} rounds")
                self.root_of(node, UNKNOWN, why)
                self.graph.open_ends[node] = why
            return set()
        self.graph.grep_rounds += 1
        started = time.monotonic()
        if self.tree is None:
            self.tree = tree_key(self.root) if self.cache is not None else ""
        hits = grep_names(self.root, sorted({n[1] for n in nodes}), self.cache, tree=self.tree)
        self.graph.grep_seconds += time.monotonic() - started
        new: set[Node] = set()
        self.prefetch({f for node in nodes for f in hits.get(node[1], ())
                       if len(hits[node[1]]) <= MAX_CALLER_FILES + 1})
        for node in nodes:
            files = [f for f in hits.get(node[1], ()) if f != node[0]]
            if len(files) > MAX_CALLER_FILES:
                why = (f"{node[0]}: {node[1]}() is named in {len(files)} other files: "
                       "callers not followed")
                self.root_of(node, UNKNOWN, why)
                self.graph.open_ends[node] = why
                continue
            for rel in files:
                info = self.scan(rel)["funcs"].get(node[1])
                if info is not None and (info["static"] or info["macro"]):
                    continue  # a file of its own, with a function of the same name
                new |= self.add_refs(node, rel)
        return new

    def add_refs(self, node: Node, rel: str) -> set[Node]:
        """The references to node's function in file rel: edges and roots; returns
        the callers found."""
        path, func = node
        sc = self.scan(rel)
        found: set[Node] = set()
        if rel == path:
            if func in sc["exported"]:
                self.root_of(node, UNKNOWN, f"{path}:{_line(sc, func)} {func}() is "
                             "exported: callers outside the tree are not known")
            self.graph.roots.setdefault(node, [])
        for name, caller, line, kind, detail, atomic in sc["refs"]:
            if name != func or (kind == "call" and caller == func and rel == path):
                continue
            self.graph.refs.setdefault(node, []).append(Ref(kind, rel, line, caller, detail))
            edge = _ref_edge(node, rel, caller, line, kind, detail, bool(atomic))
            if isinstance(edge, _Edge):
                self.graph.callers.setdefault(node, []).append(edge)
                found.add(edge.caller)
            elif edge is not None:
                self.root_of(node, *edge)
        return found


def _line(sc: dict, func: str) -> int:
    return sc["funcs"].get(func, {}).get("line", 0)


def _ref_edge(node: Node, rel: str, caller: str, line: int, kind: str, detail: str,
              atomic: bool):
    """One reference: an _Edge from its caller, or a root (context, hop), or None."""
    func, at = node[1], f"{rel}:{line}"
    lock = " under a lock" if atomic else ""
    if kind == "call":
        if not caller:
            return None
        return _Edge((rel, caller), f"{at} {caller}() calls {func}(){lock}", atomic, line)
    if kind == "field":
        struct, _, fld = detail.partition(".")
        ctx = field_context(struct, fld)
        what = f"{struct or '(a struct)'}.{fld}"
        if ctx == UNKNOWN:
            return UNKNOWN, f"{at} {func}() is {what}: its context is not known"
        return ctx, f"{at} {func}() is {what} ({ctx})"
    if kind == "arg":
        passer, _, index = detail.rpartition("/")
        if passer.startswith("EXPORT_SYMBOL"):
            return None        # the export is a root already (add_refs)
        ctx = registration_context(passer, int(index))
        where = f"{caller}() registers" if caller else "registers"
        if ctx:
            return ctx, f"{at} {where} {func}() with {passer}() ({ctx})"
        if caller:
            return _Edge((rel, caller), f"{at} {caller}() passes {func}() to {passer}(), "
                         f"which calls it{lock}", atomic, line)
        return UNKNOWN, f"{at} {func}() is passed to {passer}() at file scope"
    return UNKNOWN, f"{at} {func}() is stored in {detail}: its callers are not followed"


_ORDER = (HARDIRQ, SOFTIRQ, UNKNOWN, ATOMIC, PROCESS)


def _solve(graph: CallGraph) -> dict[Node, Contexts]:
    """Breadth first from the roots along caller -> callee: the shortest chain of
    each (function, context, atomic) state."""
    callees: dict[Node, list[tuple[Node, _Edge]]] = {}
    for callee, edges in graph.callers.items():
        for e in edges:
            callees.setdefault(e.caller, []).append((callee, e))
    parent: dict[tuple[Node, str, bool], tuple | None] = {}
    hops: dict[tuple[Node, str, bool], str] = {}
    queue: deque = deque()
    nodes = set(graph.roots) | set(graph.callers)
    for node in sorted(nodes):
        roots = graph.roots.get(node, [])
        if not roots and not graph.callers.get(node):
            roots = [(UNKNOWN, f"{node[0]}: no caller of {node[1]}() found")]
        for ctx, hop in roots:
            state = (node, PROCESS if ctx == ATOMIC else ctx, ctx == ATOMIC)
            if state not in parent:
                parent[state], hops[state] = None, hop
                queue.append(state)
    while queue:
        state = queue.popleft()
        node, ctx, atomic = state
        for callee, e in callees.get(node, ()):
            nxt = (callee, ctx, atomic or e.atomic)
            if nxt not in parent:
                parent[nxt], hops[nxt] = state, e.hop
                queue.append(nxt)
    return _results(parent, hops)


def _results(parent: dict, hops: dict) -> dict[Node, Contexts]:
    by_node: dict[Node, dict[str, list[str]]] = {}
    for state in parent:
        node, ctx, atomic = state
        chain, s = [], state
        while s is not None:
            chain.append(hops[s])
            s = parent[s]
        chain.reverse()
        chains = by_node.setdefault(node, {})
        if atomic and (ATOMIC not in chains or len(chain) < len(chains[ATOMIC])):
            chains[ATOMIC] = chain
        if ctx not in chains or not atomic and len(chain) < len(chains[ctx]):
            chains[ctx] = chain
    out = {}
    for node, chains in by_node.items():
        ctxs = frozenset(c for c in chains if c != ATOMIC)
        worst = next(c for c in _ORDER if c in chains)
        out[node] = Contexts(ctxs, ATOMIC in chains, chains[worst], chains)
    return out


def build_callgraph(census, root: Path, cache=None,
                    targets: set[tuple[str, str]] | None = None) -> CallGraph:
    """The call graph of the functions holding the census' semaphore calls (or only
    of targets, (path, function) pairs, and their callers: a rule asks for few).
    cache: get(key)/put(key, value), keyed by file content (as take_census')."""
    started = time.monotonic()
    graph = _Builder(census, root, cache).run(targets)
    graph.seconds = round(time.monotonic() - started, 2)
    log.info("callgraph: %d functions, %d files scanned, %d grep rounds (%.1f s)",
             len(set(graph.roots) | set(graph.callers)), graph.files_scanned,
             graph.grep_rounds, graph.seconds)
    return graph
