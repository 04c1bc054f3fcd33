"""One file's call sites, for the call graph (classify/census/callgraph.py): its
functions (and function-like macros), and every place a name is called, passed as
an argument, put in a struct initializer or stored, as plain JSON-able data cached
per file content.

A reference is a list ``[name, caller, line, kind, detail, atomic]``:

* ``call``: ``name(...)`` in the body of ``caller``;
* ``arg``: ``name`` (or ``&name``) is a whole argument of a call, detail
  ``"passer/index"`` (index from 0); caller is "" at file scope;
* ``field``: ``.field = name`` in a ``struct TYPE x = {...}`` initializer, detail
  ``"TYPE.field"`` (``".field"`` when the struct type is not known);
* ``store``: any other reference (``p->cb = name;``, a positional initializer, and,
  for the file's own functions, whatever else names them), detail what it is.

``atomic`` is 1 when the site follows, in the caller's body, more spin_lock*() /
local_irq_disable() / preempt_disable() / rcu_read_lock() ... than unlocks (a
textual count; an unlock in a block that leaves the function does not count).
"""

from __future__ import annotations

import bisect
import re

from classify.census.cscan import FileScopes, clean_source, macro_spans, scan_scopes

CALLSITES_VERSION = "callsites-5"

_KEYWORDS = frozenset(
    "if for while switch return sizeof do else case typeof __typeof__ defined goto "
    "break continue default struct union enum const volatile static inline extern "
    "unsigned signed int long short char void bool float double register auto "
    "__attribute__ asm __asm__ volatile likely unlikely NULL true false".split())

_CALL_RX = re.compile(r"(?<![\w.>])([A-Za-z_]\w*)\s*\(")
_ARG_RX = re.compile(r"([(,])\s*&?\s*([A-Za-z_]\w*)\s*(?=[,)])")
_FIELD_RX = re.compile(r"([{,])\s*\.\s*(\w+)\s*=\s*&?\s*([A-Za-z_]\w*)\s*(?=[,}])")
_STORE_RX = re.compile(r"(?<![=!<>+\-*/%&|^])=\s*&?\s*([A-Za-z_]\w*)\s*(?=[;,}])")
_LHS_RX = re.compile(r"((?:[\w\]\)]\s*(?:->|\.)\s*)?\w+(?:\[[^\]=]*\])?)\s*$")
_STRUCT_VAR_RX = re.compile(r"\bstruct\s+(\w+)\s*\*?\s*(?:const\s+)?\b(\w+)\s*[,;=)\[]")
_FULL_LHS_RX = re.compile(r"(?<![\w>.])(\w+\s*(?:->|\.)\s*\w+)\s*$")
_LIST_RX = re.compile(r"([{,])\s*&?\s*([A-Za-z_]\w*)\s*(?=[,}])")
_IDENT_RX = re.compile(r"[A-Za-z_]\w*")
_EXPORT_RX = re.compile(r"\bEXPORT_SYMBOL\w*\s*\(\s*(\w+)\s*\)")
_ATTR_RX = re.compile(r"\b(?:static\s+)?(?:DEVICE|DRIVER|BUS|CLASS)_ATTR_(RW|RO|WO)\s*\(\s*(\w+)\s*\)")
_INIT_HEAD_RX = re.compile(r"\bstruct\s+(\w+)\s+(?:__\w+(?:\([^)]*\))?\s+|const\s+)*\**\s*\w+\s*"
                           r"(\[[^\]]*\])?\s*(?:__\w+(?:\([^)]*\))?\s*)*=\s*$")

_SPIN = r"(?:raw_)?spin_"
_LOCK_RX = re.compile(
    r"\b(?:(?P<open>" + _SPIN + r"(?:lock(?:_irq|_irqsave|_bh|_nested|_irqsave_nested|_nest_lock)?"
    r"|trylock(?:_irq|_irqsave|_bh)?)|(?:read|write)_(?:lock|trylock)(?:_irq|_irqsave|_bh)?"
    r"|local_irq_(?:disable|save)|local_bh_disable|preempt_disable"
    r"|rcu_read_lock(?:_bh|_sched)?)"
    r"|(?P<close>" + _SPIN + r"unlock(?:_irq|_irqrestore|_bh)?|(?:read|write)_unlock(?:_irq|"
    r"_irqrestore|_bh)?|local_irq_(?:enable|restore)|local_bh_enable"
    r"|preempt_enable(?:_no_resched)?|rcu_read_unlock(?:_bh|_sched)?))\s*\(")
_EXIT_RX = re.compile(r"\b(?:return|goto|break|continue)\b")


class _Where:
    """Which function (or function-like macro) holds an offset."""

    def __init__(self, spans: list[tuple[int, int, str]]):
        self.spans = sorted(spans)
        self.starts = [s[0] for s in self.spans]

    def at(self, pos: int) -> tuple[str, int, int]:
        i = bisect.bisect_right(self.starts, pos) - 1
        if i >= 0 and self.spans[i][0] < pos < self.spans[i][1]:
            return self.spans[i][2], self.spans[i][0], self.spans[i][1]
        return "", -1, -1


def _functions(rel: str, clean: str, text: str, fs: FileScopes) -> tuple[dict, list]:
    header = rel.endswith(".h")
    funcs, spans = {}, []
    for sc in fs.scopes:
        if sc.kind != "func" or not sc.name:
            continue
        head_start = max(clean.rfind(";", 0, sc.start), clean.rfind("}", 0, sc.start)) + 1
        head = clean[head_start:sc.start]
        nm = None
        for nm in re.finditer(r"\b" + re.escape(sc.name) + r"\s*\(", head):
            pass
        line = fs.line_of(head_start + nm.start()) if nm else fs.line_of(sc.start)
        static = bool(re.search(r"\bstatic\b", head)) and not header
        funcs.setdefault(sc.name, {"line": line, "static": static, "macro": False})
        spans.append((sc.start, sc.end, sc.name))
    for start, end, name in macro_spans(text):
        if text[start:end].find(name + "(") < 0 or name in funcs:
            continue  # object-like macros call nothing we can name
        funcs[name] = {"line": fs.line_of(start), "static": not header, "macro": True}
        spans.append((start, end, name))
    return funcs, spans


def _lock_events(clean: str, where: _Where) -> dict[str, list[tuple[int, int]]]:
    out: dict[str, list[tuple[int, int]]] = {}
    for m in _LOCK_RX.finditer(clean):
        func, _, _ = where.at(m.start())
        if func:
            out.setdefault(func, []).append((m.start(), 1 if m.group("open") else -1))
    return out


def _atomic_at(events: list[tuple[int, int]], pos: int, clean: str, fs: FileScopes) -> int:
    """Unmatched locks before pos; an unlock inside a block that closed before pos
    and leaves the function (return/goto/break) is an exit path's, not counted."""
    depth = 0
    for epos, delta in events:
        if epos >= pos:
            break
        if delta < 0:
            i = fs.innermost(epos)
            sc = fs.scopes[i] if i >= 0 else None
            if sc is not None and sc.kind == "block" and sc.end < pos and \
                    _EXIT_RX.search(clean, sc.start, sc.end):
                continue
        depth += delta
    return 1 if depth > 0 else 0


def _paren_frames(clean: str) -> dict[int, tuple[int, int]]:
    """For each "(" and "," at paren depth >= 1: (offset of its "(", argument index
    of what follows it)."""
    out: dict[int, tuple[int, int]] = {}
    stack: list[list[int]] = []
    for m in re.finditer(r"[(),;{}]", clean):
        c, pos = m.group(), m.start()
        if c == "(":
            stack.append([pos, 0])
            out[pos] = (pos, 0)
        elif c == ")":
            if stack:
                stack.pop()
        elif c == "," and stack:
            stack[-1][1] += 1
            out[pos] = (stack[-1][0], stack[-1][1])
        elif c in ";{}":
            stack.clear()
    return out


def _passer(clean: str, open_pos: int) -> str:
    m = re.search(r"([A-Za-z_]\w*)\s*$", clean[max(0, open_pos - 80):open_pos])
    return m.group(1) if m and m.group(1) not in _KEYWORDS else ""


def _init_type(clean: str, fs: FileScopes, pos: int) -> str:
    """The struct type of the initializer whose own fields include pos."""
    i = fs.innermost(pos)
    hops = 0
    while i >= 0:
        sc = fs.scopes[i]
        head = clean[max(0, sc.start - 300):sc.start].rstrip()
        m = _INIT_HEAD_RX.search(head)
        if m:
            return m.group(1) if hops == 0 or (hops == 1 and m.group(2)) else ""
        if not head.endswith("=") and not head.endswith(",") and not head.endswith("{"):
            return ""
        hops += 1
        i = sc.parent
    return ""


def _typed_field(clean: str, where: _Where, pos: int, target: str,
                 decls: dict[int, dict[str, str]]) -> str:
    """"TYPE.field" for a store into `p->field` (or `v.field`) inside a function
    that declares `struct TYPE *p` (or `struct TYPE v`): 6.12's `shrinker =
    shrinker_alloc(...); shrinker->count_objects = fn;` is then the
    shrinker.count_objects field a struct initializer would have named.  "" when
    the type is not declared there.  decls: the declarations of each function
    read so far, by its start."""
    m = re.fullmatch(r"(\w+)\s*(?:->|\.)\s*(\w+)", target)
    func, start, end = where.at(pos)
    if not m or not func:
        return ""
    if start not in decls:
        head = max(clean.rfind(";", 0, start), clean.rfind("}", 0, start)) + 1
        decls[start] = {v: t for t, v in _STRUCT_VAR_RX.findall(clean, head, end)}
    typ = decls[start].get(m.group(1))
    return f"{typ}.{m.group(2)}" if typ else ""


def _blank_macros(cm: str, text: str) -> str:
    """cm (macro bodies kept) with the #define bodies blanked: clean_source(text)."""
    parts, last = [], 0
    for start, end, _ in macro_spans(text):
        parts.append(cm[last:start])
        parts.append(re.sub(r"[^\n]", " ", cm[start:end]))
        last = end
    parts.append(cm[last:])
    return "".join(parts)


def scan_callsites(rel: str, text: str) -> dict:
    """The functions and references of one file (see the module doc)."""
    cm = clean_source(text, keep_macro_bodies=True)
    clean = _blank_macros(cm, text)
    fs = scan_scopes(clean)
    funcs, spans = _functions(rel, clean, text, fs)
    where = _Where(spans)
    locks = _lock_events(clean, where)
    refs: dict[int, list] = {}

    def add(pos: int, name: str, kind: str, detail: str) -> None:
        if name in _KEYWORDS or pos in refs:
            return
        caller, _, _ = where.at(pos)
        atomic = _atomic_at(locks[caller], pos, clean, fs) if caller in locks else 0
        refs[pos] = [name, caller, fs.line_of(pos), kind, detail, atomic]

    for m in _CALL_RX.finditer(cm):
        if where.at(m.start())[0]:
            add(m.start(1), m.group(1), "call", "")
    frames = _paren_frames(cm)
    for m in _ARG_RX.finditer(cm):
        frame = frames.get(m.start(1))
        if frame:
            passer = _passer(cm, frame[0])
            if passer:
                add(m.start(2), m.group(2), "arg", f"{passer}/{frame[1]}")
    for m in _FIELD_RX.finditer(cm):
        add(m.start(3), m.group(3), "field", f"{_init_type(clean, fs, m.start(2))}.{m.group(2)}")
    decls: dict[int, dict[str, str]] = {}
    for m in _STORE_RX.finditer(cm):
        lhs = _LHS_RX.search(cm, max(0, m.start() - 80), m.start())
        target = re.sub(r"\s+", "", lhs.group(1)) if lhs else "a variable"
        full = _FULL_LHS_RX.search(cm, max(0, m.start() - 120), m.start())
        typed = _typed_field(clean, where, m.start(), full.group(1), decls) if full else ""
        add(m.start(1), m.group(1), "field" if typed else "store", typed or target)
    for m in _LIST_RX.finditer(cm):
        if not where.at(m.start())[0]:
            add(m.start(2), m.group(2), "store", "an initializer list")
    for m in _ATTR_RX.finditer(cm):
        for suffix in ({"RW": ("show", "store"), "RO": ("show",), "WO": ("store",)}[m.group(1)]):
            add(m.start(2) + len(suffix), f"{m.group(2)}_{suffix}", "field",
                f"device_attribute.{suffix}")
    exported = sorted({m.group(1) for m in _EXPORT_RX.finditer(clean)})
    _other_references(cm, funcs, where, refs, add)
    return {"funcs": funcs, "exported": exported,
            "refs": [refs[p] for p in sorted(refs)]}


def _other_references(cm: str, funcs: dict, where: _Where, refs: dict, add) -> None:
    """Any other mention of one of the file's own functions: stored somewhere the
    graph does not follow.  A mention at file scope followed by "(" is its
    definition or a prototype; EXPORT_SYMBOL(name) is not a caller."""
    for m in _IDENT_RX.finditer(cm):
        name = m.group()
        if name not in funcs or m.start() in refs:
            continue
        before = cm[max(0, m.start() - 2):m.start()]
        if before.endswith(".") or before.endswith("->"):
            continue
        after = cm[m.end():m.end() + 80].lstrip()
        caller = where.at(m.start())[0]
        if caller == name and funcs[name]["macro"]:
            continue  # the macro's own #define line
        if after.startswith("(") and not caller:
            continue
        if re.search(r"EXPORT_SYMBOL\w*\s*\(\s*$", cm[max(0, m.start() - 40):m.start()]):
            continue
        add(m.start(), name, "store", "a reference")
