"""The lock's new name (a pass of finish.py): the renaming rule, and the
rename applied to the lines the conversion changed.

The renaming rule (rename_rule): a name that says semaphore -- `sem`,
`sema`, `semaphore`, or one ending in `_sem`, `_sema`, `_semaphore` -- gets
the word of its new type: `lock` for a mutex (`poll_sem` -> `poll_lock`),
`done` for a completion (`sem` -> `done`); when that name is taken in the
struct (a member) or in the files (a variable; a global: in the tree), or a
bare word is the end of another name there (`request_done`), the next:
`mutex`; `comp`, then `completion` (`poll_mutex`, `poll_comp`).
Other names (`pll_mutex`, `got_rsp`, `tsem`) stay.  A name is only renamed
when every use of it in the conversion's files is on a line the script
changed (or the declaration): else it stays, and the reason is returned.
"""

from __future__ import annotations

import re

from classify.convert.csource import strip_comments

# ------------------------------------------------------------------ pass: rename

_SAYS_SEM = re.compile(r"^(?:(?P<stem>\w+?)_)?(?:sem|sema|semaphore)$")
WORDS = {"mutex": ("lock", "mutex"), "completion": ("done", "comp", "completion")}


def rename_rule(old: str, cls: str, taken: set[str]) -> str:
    """The new name of a lock called old, now of type cls ("" when its name
    does not say semaphore); taken: the names it must not become."""
    m = _SAYS_SEM.match(old)
    if not m:
        return ""
    stem = m.group("stem")
    for word in WORDS[cls]:
        new = f"{stem}_{word}" if stem else word
        # a bare word beside a member that ends in it (iwpm's request_done
        # beside done) reads as its partner: taken too
        if new not in taken and (stem or not any(t.endswith("_" + new) for t in taken)):
            return new
    return ""


def struct_body(text: str, tag: str) -> str:
    """The text of `struct tag { ... }` in text ("" when not there)."""
    m = re.search(rf"\bstruct\s+{re.escape(tag)}\s*\{{", text)
    if not m:
        return ""
    depth, i = 0, m.end() - 1
    for j in range(i, len(text)):
        depth += text[j] == "{"
        depth -= text[j] == "}"
        if depth == 0:
            return text[i:j + 1]
    return text[i:]


def use_pattern(name: str, member: bool) -> re.Pattern:
    """A use of the lock: `->name`/`.name` for a member, the word otherwise."""
    if member:
        return re.compile(rf"(?:->|\.)\s*{re.escape(name)}\b")
    return re.compile(rf"(?<![\w.>]){re.escape(name)}\b")


def uses_outside(text: str, name: str, member: bool, changed: set[int],
                 declaration: int = 0) -> list[int]:
    """Lines (1-based) of code naming the lock that the conversion did not
    change: a rename would miss them."""
    pat = use_pattern(name, member)
    out = []
    for n, line in enumerate(strip_comments(text).split("\n"), 1):
        if n in changed or n == declaration:
            continue
        if pat.search(line):
            out.append(n)
        if re.search(rf"##\s*{re.escape(name)}\b|\b{re.escape(name)}\s*##", line):
            out.append(n)
    return out


def rename_text(text: str, old: str, new: str, member: bool, lines: set[int]) -> str:
    """old -> new on the given lines (code only, not comments or strings)."""
    out = text.split("\n")
    code = strip_comments(text).split("\n")
    pat = use_pattern(old, member) if member else re.compile(
        rf"(?<![\w.>]){re.escape(old)}\b")
    decl = re.compile(rf"(?<![\w.>]){re.escape(old)}\b(?=\s*;)")
    for n in sorted(lines):
        if n > len(out):
            continue
        line, mask = out[n - 1], code[n - 1]
        spots = [m for m in pat.finditer(mask)] + (
            [m for m in decl.finditer(mask)] if member else [])
        for m in sorted({(m.start(), m.end()) for m in spots}, reverse=True):
            seg = line[m[0]:m[1]]
            line = line[:m[0]] + re.sub(rf"\b{re.escape(old)}\b", new, seg) + line[m[1]:]
        out[n - 1] = line
    return "\n".join(out)

