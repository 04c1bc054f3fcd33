"""What the semantic patch leaves for a maintainer to do, done after a
successful conversion so that the diff is applied as it is: the lock's name
(`sem` -> `lock`), the comments that speak of the semaphore, the comment
checkpatch --strict asks of a `struct mutex` definition, lines past 80
columns, and the includes that follow the types.

Each pass is a pure function on a file's text (and the line numbers the
conversion changed in it, from `git diff HEAD`: in a series the earlier
semaphores of the same files are already committed, so only this one's
lines count); finish() runs them over the worktree in order.

The renaming rule (rename_rule) is told in rename.py; plan_rename, below,
checks the new name against the files and the tree.

The passes live by job: csource.py (reading the text and the diff),
rename.py (the renaming rule and its application), comments.py (comments
and messages), layout.py (the definition's comment, long lines, includes).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from classify.convert.comments import Scope, rewrite_comments, rewrite_messages
from classify.convert.csource import _line_of, added_lines, function_spans, strip_comments
from classify.convert.hoist import hoist
from classify.convert.layout import (LIMIT, HEADERS, add_include, break_long_lines,
                                     definition_comment, drop_semaphore_h, semaphore_left)
from classify.convert.rename import (_SAYS_SEM, WORDS, rename_rule, rename_text,
                                     struct_body, uses_outside)
from classify.convert.tested import write_mappings_as_if

# ------------------------------------------------------------------ driver

@dataclass
class Finish:
    new_name: str = ""
    name_kept: str = ""
    notes: list[str] = field(default_factory=list)


def lock_name(sem: dict) -> str:
    """The lock's name: a member's, a variable's (without path or function)."""
    return sem["id"].rsplit(":", 1)[-1].split("@")[0].split(".")[-1]


def _read(tree: Path, rel: str) -> str:
    return (tree / rel).read_text()


def _write(tree: Path, rel: str, text: str) -> None:
    if (tree / rel).read_text() != text:
        (tree / rel).write_text(text)


def _held_across_calls(sem: dict) -> tuple[list[str], list[str], list[str]] | None:
    """For a lock taken in one function and released in another: the functions
    that return holding it, those that release it for their caller (an on/off
    callback is both, and leaves the second list empty), and those that take
    and release it themselves."""
    if sem.get("rule") != "lock.paired_on_one_task":
        return None
    ops = [o for o in sem.get("ops", []) if o.get("function")]
    takes = {o["function"] for o in ops if o["op"].startswith("down")}
    return (list(dict.fromkeys(o["function"] for o in ops
                               if o["op"].startswith("down") and not o.get("balanced"))),
            list(dict.fromkeys(o["function"] for o in ops
                               if o["op"] == "up" and o["function"] not in takes)),
            list(dict.fromkeys(o["function"] for o in ops
                               if o["op"].startswith("down") and o.get("balanced"))))


def _declaration_line(text: str, changed: set[int], name: str) -> int:
    """The changed line declaring the lock (1-based, 0 when not found)."""
    pat = re.compile(rf"(?:\bstruct\s+(?:mutex|completion)\s+{re.escape(name)}\s*;|"
                     rf"\b(?:DEFINE_MUTEX|DECLARE_COMPLETION)\s*\(\s*{re.escape(name)}\s*\))")
    for n, line in enumerate(text.split("\n"), 1):
        if n in changed and pat.search(line) and not line.lstrip().startswith("extern"):
            return n
    return 0


_DECLARES = {"mutex": re.compile(r"\bstruct\s+mutex\s+\w+\s*;|\bDEFINE_MUTEX\s*\("),
             "completion": re.compile(r"\bstruct\s+completion\s+\w+\s*;|"
                                      r"\bDECLARE_COMPLETION\w*\s*\(")}


def _declares(text: str, cls: str) -> bool:
    """The file's code declares a struct mutex / struct completion."""
    return bool(_DECLARES[cls].search(strip_comments(text)))


def _kernel_doc_lines(text: str, tag: str, name: str) -> set[int]:
    """The line of `@name:` in the kernel-doc above struct tag."""
    m = re.search(rf"^struct\s+{re.escape(tag)}\s*\{{", text, re.M)
    if not m:
        return set()
    head = text[:m.start()]
    start = head.rfind("/**")
    if start < 0 or head[start:].count("*/") != 1 or head[start:].rstrip()[-2:] != "*/":
        return set()
    first = _line_of(text, start)
    block = head[start:].split("\n")
    return {first + i for i, x in enumerate(block)
            if re.search(rf"@{re.escape(name)}\s*:", x)}


def plan_rename(tree: Path, sem: dict, files: list[str], cls: str,
                changed: dict[str, set[int]]) -> tuple[str, str]:
    """(new name, "") or ("", why the name stays) for a sem-named lock;
    ("", "") for any other."""
    old = lock_name(sem)
    kind = sem["declared"]["kind"]
    member = kind == "member"
    if not _SAYS_SEM.match(old):
        return "", ""
    if kind not in ("member", "global", "static", "local"):
        return "", f"a {kind} semaphore keeps its name"
    texts = {rel: _read(tree, rel) for rel in files if (tree / rel).is_file()}
    taken: set[str] = set()
    if member:
        body = struct_body(texts.get(sem["declared"]["path"], ""), sem["declared"]["struct"])
        if not body:
            return "", f"struct {sem['declared']['struct']} not found to check the new name"
        taken |= _identifiers(body)
        for t in texts.values():      # a macro of that name would expand in the member
            taken |= set(re.findall(r"^\s*#\s*define\s+(\w+)", t, re.M))
    else:
        for t in texts.values():
            taken |= _identifiers(t, members=False)
    new = rename_rule(old, cls, taken)
    if new and kind == "global" and _global_taken(tree, new):
        new = rename_rule(old, cls, taken | {new})
        new = "" if new and _global_taken(tree, new) else new
    if not new:
        return "", f"the names it would take ({', '.join(WORDS[cls])}) are in use"
    for rel, t in texts.items():
        decl = _declaration_line(t, changed.get(rel, set()), old)
        left = uses_outside(t, old, member, changed.get(rel, set()), decl)
        if left:
            return "", (f"{rel}:{left[0]}: a use of {old} the conversion did not "
                        "change; renaming it would need more than this patch")
    return new, ""


def _identifiers(text: str, members: bool = True) -> set[str]:
    """The words of text's code that may name a member or variable: not a
    struct tag (`struct mutex mutex;` is legal), nor, unless members, a member
    reached with `->`/`.`."""
    code = re.sub(r"\b(?:struct|union|enum)\s+\w+", " ", strip_comments(text))
    if not members:
        code = re.sub(r"(?:->|\.)\s*\w+", " ", code)
    return set(re.findall(r"\b[A-Za-z_]\w*\b", code))


def _global_taken(tree: Path, name: str) -> bool:
    """name is a word anywhere in the tree's C files (a global shares the
    kernel's namespace)."""
    res = subprocess.run(["git", "-C", str(tree), "grep", "-q", "-w", name, "--",
                          "*.c", "*.h"], capture_output=True)
    return res.returncode == 0


def _shorten_long_lines(tree: Path, rel: str, changed: Callable[[], set[int]], name: str,
                        cls: str) -> list[str]:
    """The lines of rel the patch changes, within LIMIT columns: broken after
    a comma, or else shortened by a local (hoist.py); the notes for the
    reviewer (each local, and each line left too long).  changed() gives the
    changed line numbers anew: a pass moves lines."""
    notes: list[str] = []
    tried: set[int] = set()
    while True:
        text, left = break_long_lines(_read(tree, rel), changed())
        _write(tree, rel, text)
        line = next((n for n in left if n not in tried), 0)
        if not line:
            break
        done = hoist(text, line, name, cls)
        if done is None:
            tried.add(line)
            continue
        _write(tree, rel, done[0])
        notes.append(done[1])
        tried = set()
    return notes + [f"{rel}:{n}: a line the patch changes is longer than {LIMIT} columns; "
                    "neither a break nor a local brings it within" for n in left]


def finish(tree: Path, sem: dict, files: list[str], changed_files: list[str]) -> Finish:
    """All the passes over the files the conversion changed, in order:
    mappings as if/else, the name, the comments, the definition's comment,
    long lines, includes.  Each reads `git diff HEAD` again: a pass moves
    lines."""
    cls = sem["class"]
    result = Finish()
    old = lock_name(sem)
    for rel in changed_files:
        write_mappings_as_if(tree / rel)

    def diff() -> dict[str, set[int]]:
        return {rel: added_lines(tree, rel) for rel in changed_files}

    # the name
    changed = diff()
    new, why = plan_rename(tree, sem, files, cls, changed)
    member = sem["declared"]["kind"] == "member"
    decl_path = sem["declared"]["path"]
    if new:
        for rel in changed_files:
            text = _read(tree, rel)
            lines = set(changed[rel])
            _write(tree, rel, rename_text(text, old, new, member, lines))
        result.new_name = new
    elif why:
        result.name_kept = why
    name = new or old

    # the comments and messages
    changed = diff()
    for rel in changed_files:
        text = _read(tree, rel)
        lines = text.split("\n")
        touched = [f for f in function_spans(lines)
                   if any(f[0] <= c <= f[1] for c in changed[rel])]
        declaration: set[int] = set()
        d = _declaration_line(text, changed[rel], name)
        if d:
            declaration.add(d)
        doc = _kernel_doc_lines(text, sem["declared"]["struct"], old) \
            if member and rel == decl_path else set()
        scope = Scope(touched, declaration, doc)
        text, notes = rewrite_comments(text, changed[rel], scope, cls, old, new, rel)
        text = rewrite_messages(text, changed[rel], scope, cls)
        result.notes += notes
        _write(tree, rel, text)

    # the definition's comment
    if cls == "mutex":
        changed = diff()
        held = _held_across_calls(sem)
        funcs = list(dict.fromkeys(o["function"] for o in sem.get("ops", [])
                                   if o["op"].startswith(("down", "up") if held else "down")
                                   and o.get("function")))
        for rel in changed_files:
            text = _read(tree, rel)
            d = _declaration_line(text, changed[rel], name)
            if d:
                _write(tree, rel, definition_comment(
                    text, d, funcs, sem.get("guards", []),
                    net=rel.startswith(("drivers/net/", "net/")), held=held))

    # long lines: broken after a comma, or else shortened by a local
    for rel in changed_files:
        result.notes += _shorten_long_lines(tree, rel, lambda: diff()[rel], name, cls)

    # includes
    header = HEADERS[cls]
    for rel in changed_files:
        text = _read(tree, rel)
        # the declaring file names the header of its new type (include what
        # you use, even where another include brought it before); a file
        # whose <linux/semaphore.h> goes swaps it when it now holds the type
        swap = re.search(r"^#include\s*<linux/semaphore\.h>", text, re.M) and \
            not semaphore_left(text) and _declares(text, cls)
        if rel == decl_path or swap:
            text = add_include(text, header)
        _write(tree, rel, drop_semaphore_h(text))
    return result
