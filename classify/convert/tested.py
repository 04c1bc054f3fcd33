"""A kept return value that only its truth is asked of: drop the mapping; and
a mapping that pushes its line past 100 columns goes to a line of its own.

sem_to_completion.cocci rewrites a stored `ret = down_interruptible(E);` as
`ret = wait_for_completion_interruptible(E) ? -EINTR : 0;`, and a stored
`ret = down_timeout(E, J);` as `ret = wait_for_completion_timeout(E, J) ? 0 :
-ETIME;`, so that the value passed on stays what it was.  Where the stored
value is only tested afterwards (`if (ret)`, `if (!ret)`) until it is assigned
again or the function ends, its value never leaves the function and the
mapping is noise: isert's `if (ret) return -ENODEV;`, iwpm's `if (ret) { ret =
-EINVAL; ...`.  The interruptible waits keep the truth of the old value (non-zero
on a signal); wait_for_completion_timeout() turns it over (0 on a timeout), so
there the tests are turned over too: `if (!ret)`.  That needs the uses after the
call, which the script's one-statement rule does not see; this pass reads them
in the file the script wrote.
"""

from __future__ import annotations

import re
from pathlib import Path

# the first line of a stored wait, and the mapping that ends its statement
_STORED_WAIT = re.compile(r"^\s*(\w+)\s*=\s*wait_for_completion_"
                          r"(interruptible|killable|timeout)\(")
_MAPPING = {"interruptible": " ? -EINTR : 0;", "killable": " ? -EINTR : 0;",
            "timeout": " ? 0 : -ETIME;"}


def _uses(body: list[str], var: str) -> list[str]:
    """The lines after the call that name var, up to its next assignment or the
    end of the function (the first line back at column 0)."""
    out = []
    for line in body:
        if line.startswith("}"):
            break
        if not re.search(rf"\b{var}\b", line):
            continue
        if re.match(rf"\s*{var}\s*=[^=]", line):
            break
        out.append(line)
    return out


def only_tested(body: list[str], var: str) -> bool:
    """Every use of var in body is `if (var)` or `if (!var)`."""
    uses = _uses(body, var)
    test = re.compile(rf"\s*(?:\}}\s*else\s+)?if\s*\(\s*!?\s*{var}\s*\)")
    return bool(uses) and all(test.match(u) and len(re.findall(rf"\b{var}\b", u)) == 1
                              for u in uses)


def _turn_over(line: str, var: str) -> str:
    """`if (var)` <-> `if (!var)`."""
    return re.sub(rf"\(\s*(!?)\s*{var}\s*\)",
                  lambda m: f"({'' if m.group(1) else '!'}{var})", line, count=1)


def drop_tested_values(path: Path) -> int:
    """Drop the mapping where the stored value is only tested (turning the tests
    over after a timed wait); the number of statements changed."""
    lines = path.read_text().split("\n")
    changed = 0
    for i, line in enumerate(lines):
        m = _STORED_WAIT.match(line)
        if not m:
            continue
        end = i
        while end < len(lines) - 1 and not lines[end].rstrip().endswith(";"):
            end += 1
        var, mapping = m.group(1), _MAPPING[m.group(2)]
        if not lines[end].endswith(mapping) or not only_tested(lines[end + 1:], var):
            continue
        lines[end] = lines[end][:-len(mapping)] + ";"
        if m.group(2) == "timeout":
            for j in range(end + 1, len(lines)):
                if lines[j].startswith("}") or re.match(rf"\s*{var}\s*=[^=]", lines[j]):
                    break
                if re.search(rf"\b{var}\b", lines[j]):
                    lines[j] = _turn_over(lines[j], var)
        changed += 1
    if changed:
        path.write_text("\n".join(lines))
    return changed


_LONG_TAIL = re.compile(r"^(\s*.*\)) (\? .+ : .+;)$")


def _columns(line: str) -> int:
    """The display column after line (tabs of 8), as checkpatch counts."""
    col = 0
    for ch in line:
        col = (col // 8 + 1) * 8 if ch == "\t" else col + 1
    return col


def break_long_mappings(path: Path, limit: int = 100) -> int:
    """`ret = wait_for_completion_timeout(..,\n\t\t..)) ? 0 : -ETIME;` past limit
    columns (checkpatch's): the `? 0 : -ETIME;` goes on the next line, one tab in
    from the statement's first line.  The number of lines broken."""
    lines = path.read_text().split("\n")
    out: list[str] = []
    broken = 0
    for i, line in enumerate(lines):
        m = _LONG_TAIL.match(line)
        if not m or _columns(line) <= limit or "wait_for_completion" not in \
                "".join(lines[max(0, i - 3):i + 1]):
            out.append(line)
            continue
        start = i
        while start > 0 and not lines[start - 1].rstrip().endswith((";", "{", "}", ":")):
            start -= 1
        while start < i and (not lines[start].strip()
                             or lines[start].lstrip().startswith(("/*", "*", "//"))):
            start += 1    # blank lines and comments before the statement
        indent = re.match(r"\s*", lines[start]).group(0) + "\t"
        out += [m.group(1) + " " + m.group(2).split(" ", 1)[0], indent + m.group(2)[2:]]
        broken += 1
    if broken:
        path.write_text("\n".join(out))
    return broken
