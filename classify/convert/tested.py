"""A kept return value that only its truth is asked of: drop the mapping; and
a mapping that is kept is written as if/else within 80 columns.

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


def _uses(body: list[str], var: str, indent: int = 0) -> list[str]:
    """The lines after the call that name var while it may still hold the
    call's value: up to an assignment at the call's own depth (indent: its
    columns), the end of an if/else chain at that depth that assigns var in
    every branch (iwpm's `if (ret) { ret = -EINVAL; } else { ret = ...; }`),
    or the end of the function.  An assignment in one branch only is no use,
    but the value may still be the call's after it (parport's `if (..) ret = 1;
    return ret;`)."""
    out: list[str] = []
    chain: list[bool] = []          # per branch of the if/else chain: var assigned
    plain_else = False              # the chain ends in `else`: some branch always runs
    for line in body:
        if line.startswith("}"):
            break
        depth = _columns(_lead(line))
        code = line.strip()
        assigns = bool(re.match(rf"{var}\s*=[^=]", code))
        if depth <= indent:
            if assigns:
                break
            if re.match(r"if\s*\(", code):
                chain, plain_else = [False], False
            elif re.match(r"\}\s*else\b", code) and chain:
                chain.append(False)
                plain_else = not re.match(r"\}\s*else\s+if\b", code)
            elif code == "}" and chain:
                if plain_else and all(chain):
                    break
                chain = []
        elif assigns and chain:
            chain[-1] = True
            continue
        if re.search(rf"\b{var}\b", line) and not assigns:
            out.append(line)
    return out


def _lead(line: str) -> str:
    return line[:len(line) - len(line.lstrip())]


def _truth_uses(line: str, var: str) -> bool:
    """line is an if/while condition in which every var is a truth value:
    `if (ret)`, `if (!msg && ret)`, `} else if (x || !ret)`."""
    if not re.match(r"\s*(?:\}\s*else\s+)?(?:if|while)\s*\(", line):
        return False
    for m in re.finditer(rf"\b{var}\b", line):
        before = line[:m.start()].rstrip()
        before = before[:-1].rstrip() if before.endswith("!") else before
        after = line[m.end():].lstrip()
        if not (before.endswith(("(", "&&", "||")) and after.startswith((")", "&&", "||"))):
            return False
    return True


def only_tested(body: list[str], var: str, indent: int = 0) -> bool:
    """Every use of var in body is a truth value in an if or while condition
    (an assignment to it is no use, but then its value is not only tested)."""
    uses = _uses(body, var, indent)
    return bool(uses) and all(_truth_uses(u, var) for u in uses)


def _turn_over(line: str, var: str) -> str:
    """Each truth use of var turned over: `ret` <-> `!ret`."""
    return re.sub(rf"(!\s*)?\b{var}\b", lambda m: var if m.group(1) else f"!{var}", line)


# `if (ret)` and, unbraced, the return it guards
_IF_VAR = r"^\s*if \(\s*{var}\s*\)$"
_RETURN = re.compile(r"^\s*return\b.*;$")


def _returned_at_once(lines: list[str], start: int, end: int, var: str) -> int:
    """The line of the return when the statement on lines start..end runs on
    its own (not the body of an unbraced if or loop) and the next one is `if
    (var)` at its depth, guarding `return ...var...;` (raw_gadget's `ret =
    down_interruptible(...); if (ret) return ERR_PTR(ret);`), else 0.  The
    value of an interruptible wait then needs no mapping: the return may say
    -EINTR itself, and past it the value is 0 whether mapped or not."""
    if start and _UNBRACED.match(lines[start - 1]):
        return 0
    nxt = end + 1
    while nxt < len(lines) - 1 and not lines[nxt].strip():
        nxt += 1
    if nxt >= len(lines) - 1 or not re.match(_IF_VAR.format(var=var), lines[nxt]) \
            or _lead(lines[nxt]) != _lead(lines[start]):
        return 0
    ret = nxt + 1
    if not _RETURN.match(lines[ret]) or not re.search(rf"\b{var}\b", lines[ret]):
        return 0
    return ret


def drop_tested_values(path: Path) -> int:
    """Drop the mapping where the stored value is only tested (turning the tests
    over after a timed wait), or where an interruptible wait's value is returned
    at once (the return says -EINTR); the number of statements changed."""
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
        if not lines[end].endswith(mapping):
            continue
        returned = _returned_at_once(lines, i, end, var) if m.group(2) != "timeout" else 0
        if returned:
            lines[end] = lines[end][:-len(mapping)] + ";"
            lines[returned] = re.sub(rf"\b{var}\b", "-EINTR", lines[returned])
            changed += 1
            continue
        if not only_tested(lines[end + 1:], var, _columns(_lead(line))):
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


def _columns(line: str) -> int:
    """The display column after line (tabs of 8), as checkpatch counts."""
    col = 0
    for ch in line:
        col = (col // 8 + 1) * 8 if ch == "\t" else col + 1
    return col


def indent_to(column: int) -> str:
    """Tabs, then spaces, up to column (kernel style continuation)."""
    return "\t" * (column // 8) + " " * (column % 8)


def _commas(line: str) -> list[tuple[int, int]]:
    """(index just after each comma, column just after its innermost open
    parenthesis) for the commas inside parentheses, out of strings."""
    out: list[tuple[int, int]] = []
    opens: list[int] = []
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == "\\":
                continue
            if ch == quote and line[i - 1] != "\\":
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "(":
            opens.append(_columns(line[:i + 1]))
        elif ch == ")" and opens:
            opens.pop()
        elif ch == "," and opens:
            out.append((i + 1, opens[-1]))
    return out


def break_call(line: str, limit: int = 80) -> list[str]:
    """line past limit columns broken after commas, each continuation aligned
    just after the open parenthesis of the call its comma is in (kernel
    style), greedily: each piece as long as fits; [line] when it fits or no
    comma allows it.  When no break brings every piece within limit, the
    pieces are still broken where they can be (an argument that is itself too
    long for its column: ipmi_ipmb's msecs_to_jiffies(iidev->retry_time_ms) at
    column 48): the caller reports the line."""
    if _columns(line) <= limit:
        return [line]
    commas = _commas(line)
    pieces: list[str] = []
    start, indent = 0, ""
    while True:
        rest = indent + line[start:].strip() if pieces else line
        if _columns(rest) <= limit:
            break
        fits = [(cut, col) for cut, col in commas if cut > start and col + 8 < limit
                and _columns(indent + line[start:cut].strip() if pieces
                             else line[:cut]) <= limit and line[cut:].strip()]
        if not fits:
            later = [(cut, col) for cut, col in commas if cut > start and col + 8 < limit
                     and line[cut:].strip()]
            if not later:
                break
            fits = later[:1]     # the piece is too long anyway: as short as can be
        cut, col = fits[-1]
        pieces.append(indent + line[start:cut].strip() if pieces else line[:cut])
        start, indent = cut, indent_to(col)
    return pieces + [indent + line[start:].strip() if pieces else line]


# a whole statement (its lines joined) that stores or returns a mapped wait
_MAPPED = re.compile(r"^(?P<lhs>\w[\w.>\[\]-]*\s*=|return)\s+"
                     r"(?P<call>wait_for_completion\w*\(.*\))\s*\?\s*"
                     r"(?P<yes>[^?:;]+?)\s*:\s*(?P<no>[^?:;]+?)\s*;$")
_UNBRACED = re.compile(r"^\s*(?:(?:\}\s*)?else\s*$|(?:if|for|while|(?:\}\s*)?else\s+if)\b.*\)\s*$)")


def _balanced(call: str) -> bool:
    """call is one call: its first parenthesis closes at its end."""
    depth = 0
    for i, ch in enumerate(call):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and ch == ")":
            return i == len(call) - 1
    return False


def _as_if(indent: str, m: re.Match, limit: int) -> list[str]:
    """The mapping of m written as if/else (a return: if, then the return)."""
    cond = break_call(f"{indent}if ({m.group('call')})", limit)
    lhs = m.group("lhs")
    if lhs == "return":
        return cond + [f"{indent}\treturn {m.group('yes')};", f"{indent}return {m.group('no')};"]
    lhs = re.sub(r"\s*=$", "", lhs)
    return cond + [f"{indent}\t{lhs} = {m.group('yes')};", f"{indent}else",
                   f"{indent}\t{lhs} = {m.group('no')};"]


def mappings_as_if(text: str, limit: int = 80) -> str:
    """Each kept `ret = wait_for_completion_X(..) ? A : B;` (and `return ..
    ? A : B;`) written as if/else, within limit columns: kernel style, the
    conditional operator spread over a broken line reads badly.  One that is
    the body of an unbraced if/else/loop, or a declaration's initializer, is
    left as it is."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        start = re.match(r"^(\s*)(?:\w[\w.>\[\]-]*\s*=|return)\s+wait_for_completion", line)
        end = i
        while start and end < len(lines) - 1 and not lines[end].rstrip().endswith(";"):
            end += 1
        joined = " ".join(x.strip() for x in lines[i:end + 1])
        m = _MAPPED.match(joined) if start else None
        prev = next((x for x in reversed(out) if x.strip()), "")
        if not m or not _balanced(m.group("call")) or _UNBRACED.match(prev):
            out.append(line)
            i += 1
            continue
        out += _as_if(start.group(1), m, limit)
        i = end + 1
    return "\n".join(out)


def write_mappings_as_if(path: Path, limit: int = 80) -> bool:
    """mappings_as_if() on the file at path; True when it changed."""
    text = path.read_text()
    new = mappings_as_if(text, limit)
    if new != text:
        path.write_text(new)
    return new != text
