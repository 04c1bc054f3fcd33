"""The layout passes of finish.py: the comment checkpatch --strict asks of a
`struct mutex` definition, changed lines past 80 columns broken, and the
includes that follow the types.
"""

from __future__ import annotations

import re
import textwrap

from classify.convert.csource import _SEM_OPS, strip_comments
from classify.convert.tested import _columns, break_call

LIMIT = 80


# ------------------------------------------------------------------ pass: definition comment

def _listed(names: list[str], room: int, what: str) -> str:
    """names within room columns: `a`, `a and b`, `a, b and 3 more <what>s`,
    `5 <what>s`."""
    n = len(names)
    forms = []
    if n == 1:
        forms.append(names[0])
    elif n == 2:
        forms.append(f"{names[0]} and {names[1]}")
    else:
        forms.append(", ".join(names[:-1]) + f" and {names[-1]}")
        forms.append(f"{names[0]}, {names[1]} and {n - 2} more {what}s")
    if n >= 2:
        forms.append(f"{names[0]} and {n - 1} more {what}{'s' if n > 2 else ''}")
    forms.append(f"{n} {what}{'s' if n > 1 else ''}")
    return next((f for f in forms if len(f) <= room), forms[-1])


_DEFINITION = re.compile(r"^(\s*)(?:static\s+)?(?:struct\s+mutex\s+\w+\s*;|DEFINE_MUTEX\s*\()")


def _either(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" or {names[-1]}"


def definition_comment(text: str, line: int, funcs: list[str], guards: list[str] = (),
                       limit: int = LIMIT, net: bool = False,
                       held: tuple[list[str], list[str], list[str]] | None = None) -> str:
    """`struct mutex x;` / `DEFINE_MUTEX(x);` at line (1-based) with the comment
    checkpatch --strict asks for (UNCOMMENTED_DEFINITION): what it protects
    (guards: the members changed under it, convert.protects), else, for a lock
    held across calls (held: the functions that return holding it, those
    that release it for their caller, and those that take and release it
    themselves), from where to where, else who takes it
    (funcs: the functions taking it, or with held those taking or releasing
    it), at the end of the line or,
    when that passes limit columns, on the line above.  A definition with a
    comment on its line is left; one with the file's comment above keeps it
    there, said again with ours (checkpatch does not see a comment above the
    removed line of the old type).  net: the file is networking's (drivers/net/,
    net/), whose block comments start on the /* line."""
    lines = text.split("\n")
    if not (0 < line <= len(lines)) or not (funcs or guards):
        return text
    decl = lines[line - 1]
    m = _DEFINITION.match(decl)
    if not m or "/*" in decl or "//" in decl:
        return text
    above_line = lines[line - 2] if line > 1 else ""
    # a lock held from one call to a later one serialises no function: say
    # where it is held from and to, or who holds it when the same functions do
    # both (an on/off callback)
    verb, names, what = (("protects", list(guards), "member") if guards else
                         ("taken and released by" if held else "serialises",
                          [f"{f}()" for f in funcs], "function"))
    if not guards and held and all(held[:2]):
        verb = "held from"
        takers, releasers = ([f"{f}()" for f in fs] for fs in held[:2])
        span = f"{_either(takers)} to {_either(releasers)}"
        # who else holds it, for a reader of those functions (hisi_sas'
        # dev_gone(), control_phy())
        also = [f"{f}()" for f in held[2]]
        span += f"; also taken by {_listed(also, 1 << 10, 'function')}" if also else ""
        listed = lambda names, room, what: span     # noqa: E731 (never shortened)
    else:
        listed = _listed
    own = re.fullmatch(r"\s*/\*\s*([^*].*?)\s*\*/\s*", above_line)
    if own:
        # the file's comment stays, said again with ours in one block (the
        # removed line between them hides it from checkpatch; two comments
        # stacked read worse): "Lock for getting a free block: protects x."
        indent = m.group(1)
        said = f"{own.group(1).rstrip('.')}: {verb} {listed(names, 1 << 10, what)}."
        if _columns(f"{indent}/* {said} */") <= limit:
            lines[line - 2] = f"{indent}/* {said} */"
            return "\n".join(lines)
        words = textwrap.wrap(said, limit - _columns(indent) - 3, break_long_words=False)
        body = [f"{indent} * {w}" for w in words]
        if net:
            body[0] = f"{indent}/* {words[0]}"
        lines[line - 2:line] = ([] if net else [f"{indent}/*"]) + body + [f"{indent} */", decl]
        return "\n".join(lines)
    here = limit - _columns(decl.rstrip()) - len(f" /* {verb}  */")
    indent = m.group(1)
    above = limit - _columns(indent) - len(f"/* {verb}  */")
    said = listed(names, max(here, above), what)
    if len(said) <= here:
        lines[line - 1] = f"{decl.rstrip()} /* {verb} {said} */"
    elif len(said) <= above and (said == listed(names, 1 << 10, what) or len(names) > 8):
        # a comment on a line of its own begins as the block one does
        lines[line - 1:line] = [f"{indent}/* {verb.capitalize()} {said} */", decl]
    else:
        # every name, in a block comment above: "and 2 more functions" says little
        words = textwrap.wrap(f"{verb.capitalize()} {listed(names, 1 << 10, what)}.",
                              limit - _columns(indent) - 3, break_long_words=False)
        body = [f"{indent} * {w}" for w in words]
        if net:     # networking's block comments open on their first line
            body[0] = f"{indent}/* {words[0]}"
        lines[line - 1:line] = ([] if net else [f"{indent}/*"]) + body + [f"{indent} */", decl]
    return "\n".join(lines)


# ------------------------------------------------------------------ pass: long lines

def break_long_lines(text: str, changed: set[int], limit: int = LIMIT) -> tuple[str, list[int]]:
    """Changed code lines past limit columns broken after a comma (tested.break_call);
    (new text, the 1-based numbers, in the new text, of those still too long)."""
    out: list[str] = []
    left: list[int] = []
    code = strip_comments(text).split("\n")
    for n, line in enumerate(text.split("\n"), 1):
        if n not in changed or _columns(line) <= limit or not code[n - 1].strip() \
                or line.rstrip().endswith("\\"):
            out.append(line)
            if n in changed and _columns(line) > limit:
                left.append(len(out))
            continue
        broken = break_call(line, limit)
        out += broken
        if any(_columns(x) > limit for x in broken):
            left.append(len(out))
    return "\n".join(out), left


# ------------------------------------------------------------------ pass: includes

HEADERS = {"mutex": "linux/mutex.h", "completion": "linux/completion.h"}
_INCLUDE = re.compile(r"^#include\s*<(linux/[^>]+)>")


def add_include(text: str, header: str) -> str:
    """#include <header> in the file's <linux/...> block: in alphabetical place
    when that block is sorted (one neighbour out of order allowed: blk-mq.h
    before blk-mq-pci.h); else in place of <linux/semaphore.h> when no
    semaphore is left in the file, or right after it; else after the block's
    last line.  Unchanged when the file includes it, or nothing of <linux/...>."""
    lines = text.split("\n")
    every = [m.group(1) for line in lines if (m := _INCLUDE.match(line))]
    if not every or header in every:
        return text
    at = _first_block(lines)
    sem = next((n for n, h in at if h == "linux/semaphore.h"), None)
    # a <linux/semaphore.h> that goes is no neighbour (raw_gadget's stood
    # out of order); the group of lines it is in, or else the first group
    going = sem is not None and not semaphore_left(text)
    group = _group(lines, at, sem)
    names = [h for n, h in group if not (going and n == sem)]
    if len(names) > 1 and _mostly_sorted(names):
        if going:
            del lines[sem]
            group = [(n - (n > sem), h) for n, h in group if n != sem]
        where = next((n for n, h in group if h > header), group[-1][0] + 1)
    elif going:
        lines[sem] = f"#include <{header}>"
        return "\n".join(lines)
    elif sem is not None:
        where = sem + 1
    else:
        where = group[-1][0] + 1
    lines.insert(where, f"#include <{header}>")
    return "\n".join(lines)


# a use of the type or its API: the file compiled with it before the patch
_TYPE_USES = {
    "mutex": re.compile(r"\bstruct\s+mutex\b|\bDEFINE_MUTEX\s*\(|\bmutex_\w+\s*\("),
    "completion": re.compile(r"\bstruct\s+completion\b|\bDECLARE_COMPLETION\w*\s*\(|"
                             r"\b(?:complete(?:_all)?|(?:re)?init_completion|completion_done|"
                             r"(?:try_)?wait_for_completion\w*)\s*\("),
}


def _group(lines: list[str], at: list[tuple[int, str]],
           member: int | None) -> list[tuple[int, str]]:
    """The includes of at that no blank line parts from the one at index
    member (the first of at when member is None)."""
    key = at[0][0] if member is None else member
    groups: list[list[tuple[int, str]]] = [[at[0]]]
    for prev, cur in zip(at, at[1:]):
        if any(not lines[n].strip() for n in range(prev[0] + 1, cur[0])):
            groups.append([])
        groups[-1].append(cur)
    return next(g for g in groups if any(n == key for n, _ in g))


def _mostly_sorted(names: list[str]) -> bool:
    """In alphabetical order, but for one neighbour in a long block."""
    out_of_order = sum(a > b for a, b in zip(names, names[1:]))
    return out_of_order == 0 or (out_of_order == 1 and len(names) >= 5)


def _first_block(lines: list[str]) -> list[tuple[int, str]]:
    """(index, header) of the <linux/...> includes of the file's first block of
    includes (blank lines and other includes inside it; a later one, such as
    parport.h's <linux/parport_pc.h> under an #if at its end, is not its)."""
    first = next(n for n, line in enumerate(lines) if _INCLUDE.match(line))
    out = []
    for n in range(first, len(lines)):
        line = lines[n].strip()
        if line and not line.startswith("#include"):
            break
        m = _INCLUDE.match(lines[n])
        if m:
            out.append((n, m.group(1)))
    return out


def semaphore_left(text: str) -> bool:
    """Any semaphore use left in the file's code."""
    return bool(_SEM_OPS.search(strip_comments(text)))


def drop_semaphore_h(text: str) -> str:
    """#include <linux/semaphore.h> removed when no semaphore is left."""
    if semaphore_left(text):
        return text
    return re.sub(r"^#include\s*<linux/semaphore\.h>[^\n]*\n", "", text, flags=re.M)

