"""A changed statement that no break brings within 80 columns, shortened the
way a maintainer would, by naming a part of it in a local:

- the timeout of a wait_for_completion*_timeout() call goes into a local
  `timeout` assigned on the line before (ipmi_ipmb: the call is 16 columns
  longer than the down_timeout() it replaces, and its aligned continuation
  msecs_to_jiffies(iidev->retry_time_ms) no longer fits);
- the lock's long address goes into a local pointer declared at the top of
  the function, used by each of the lock's calls there (pvcalls-back's
  mutex_unlock(&pvcalls_back_global.frontends_lock) four switch levels deep,
  one column past 80).

checkpatch --strict accepts neither of the other ways out (a continuation
that does not align with its parenthesis, a line that ends with one).  Each
hoist() returns the new text and a sentence for the reviewer, or None when
the statement is none of these shapes or a name it needs is taken: the
caller then reports the line.
"""

from __future__ import annotations

import re

from classify.convert.csource import strip_comments
from classify.convert.tested import _columns, break_call

LIMIT = 80

# a declaration line at the top of a block: `long ret;`, `struct x *p = NULL;`,
# `unsigned long flags;` (a multi-line one goes on until its `;`)
_DECL = re.compile(r"^\s*(?:(?:const|static|unsigned|signed|volatile|struct|union|enum|"
                   r"long|short)\s+)*\w+(?:\s+|\s*\*+\s*)\**\w+\s*(?:\[[^\]]*\])?"
                   r"\s*(?:[=,;]|$)")
_WAIT_TIMEOUT = re.compile(r"\bwait_for_completion(?:_interruptible|_killable)?_timeout\(")
_TYPES = {"mutex": "struct mutex", "completion": "struct completion"}


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip())]


def _close(text: str, open_at: int) -> int:
    """The index of the parenthesis that closes the one at open_at (-1)."""
    depth = 0
    for i in range(open_at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return -1


def _statement(lines: list[str], last: int) -> tuple[int, str]:
    """(index of its first line, the statement on one line) of the statement
    whose last line is lines[last]: the lines before it that end with a comma
    or an open parenthesis are its own."""
    first = last
    while first > 0 and lines[first - 1].rstrip().endswith((",", "(")):
        first -= 1
    pieces = [lines[first]] + [x.strip() for x in lines[first + 1:last + 1]]
    return first, " ".join(p.rstrip() for p in pieces)


def _function(lines: list[str], at: int) -> tuple[int, int]:
    """(index of the `{` that opens the function holding line at, index of its `}`)."""
    start = next(i for i in range(at, -1, -1) if lines[i].startswith("{")
                 or re.match(r"^\w.*\)\s*\{\s*$", lines[i]))
    end = next((i for i in range(at, len(lines)) if lines[i].startswith("}")), len(lines) - 1)
    return start, end


def _blocks(lines: list[str], at: int, top: int) -> list[int]:
    """The indexes of the lines that open the blocks holding line at, the
    innermost first, down to the function's (top)."""
    out: list[int] = []
    depth = len(_indent(lines[at]).expandtabs(8))
    for i in range(at - 1, top, -1):
        line = lines[i]
        width = len(_indent(line).expandtabs(8))
        if line.rstrip().endswith("{") and width < depth:
            out.append(i)
            depth = width
    return out + [top]


def _declarations_end(lines: list[str], opening: int) -> int:
    """The index after the declarations at the top of the block opened at
    lines[opening]; opening + 1 when it starts with none."""
    i = opening + 1
    inside = False
    while i < len(lines) and lines[i].strip():
        if not (inside or _DECL.match(lines[i])) or lines[i].strip().startswith("return"):
            break
        inside = not lines[i].rstrip().endswith(";")
        i += 1
    return i


def _declare(lines: list[str], opening: int, declaration: str) -> list[str]:
    """lines with declaration added to the block opened at lines[opening]:
    after its declarations, or first with a blank line after it."""
    end = _declarations_end(lines, opening)
    if not lines[opening].startswith(("\t", " ")):
        indent = "\t"                      # the function's own block
    elif lines[opening + 1].strip():
        indent = _indent(lines[opening + 1])
    else:
        indent = _indent(lines[opening]) + "\t"
    if end > opening + 1:
        return lines[:end] + [indent + declaration] + lines[end:]
    return lines[:end] + [indent + declaration, ""] + lines[end:]


def _free(code: list[str], start: int, end: int, name: str) -> bool:
    """name is no word of the function's code but a member's (`->name`, `.name`)."""
    body = "\n".join(code[start:end + 1])
    return not re.search(rf"(?<![.>\w]){re.escape(name)}\b", body)


def _fits(lines: list[str]) -> bool:
    return all(_columns(x) <= LIMIT for x in lines)


def hoist_timeout(lines: list[str], last: int) -> tuple[list[str], str] | None:
    first, joined = _statement(lines, last)
    m = _WAIT_TIMEOUT.search(joined)
    if not m:
        return None
    close = _close(joined, m.end() - 1)
    if close < 0:
        return None
    args = joined[m.end():close]
    comma = _top_comma(args)
    if comma < 0:
        return None
    arg = args[comma + 1:].strip()
    code = strip_comments("\n".join(lines)).split("\n")
    top, end = _function(lines, first)
    if re.fullmatch(r"\w+", arg) or not _free(code, top, end, "timeout"):
        return None
    indent = _indent(lines[first])
    call = joined[:m.end()] + args[:comma].strip() + ", timeout" + joined[close:]
    new = [f"{indent}timeout = {arg};"] + break_call(call.rstrip(), LIMIT)
    if not _fits(new):
        return None
    out = lines[:first] + new + lines[last + 1:]
    blocks = _blocks(out, first, top)
    opening = next((b for b in blocks if _declarations_end(out, b) > b + 1), top)
    out = _declare(out, opening, "unsigned long timeout;")
    return out, (f"The timeout of {m.group(0)[:-1]}() goes into a local, timeout: "
                 "the call and its argument would not fit in 80 columns.")


def _top_comma(args: str) -> int:
    """The index of the first comma of args outside parentheses (-1)."""
    depth = 0
    for i, c in enumerate(args):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if c == "," and depth == 0:
            return i
    return -1


def hoist_address(lines: list[str], last: int, name: str,
                  cls: str) -> tuple[list[str], str] | None:
    first, joined = _statement(lines, last)
    m = re.search(rf"&(?P<expr>(?P<root>[A-Za-z_]\w*)(?:(?:->|\.)\w+)*(?:->|\.){re.escape(name)})"
                  r"(?=\s*[,)])", joined)
    if not m:
        return None
    expr, root = m.group("expr"), m.group("root")
    code = strip_comments("\n".join(lines)).split("\n")
    top, end = _function(lines, first)
    body = "\n".join(code[top + 1:end])
    # the address is the same all through the function: its root is a global
    # or a parameter that the function neither declares nor assigns
    if re.search(rf"\b\w+[\s*]+{re.escape(root)}\s*[=;,\[)]", body) or \
            re.search(rf"(?<![.>\w]){re.escape(root)}\s*=(?!=)", body) or \
            not _free(code, top, end, name):
        return None
    # the same address, spaced or not around its `.` and `->`
    spelled = "".join(rf"\s*{re.escape(x)}\s*" if x in ("->", ".") else re.escape(x)
                      for x in re.split(r"(->|\.)", expr))
    pattern = re.compile(rf"&\s*{spelled}\b(?!\s*(?:->|\.))")
    out = list(lines)
    for i in range(top + 1, end):
        out[i] = pattern.sub(name, out[i])
    changed = [x for x, y in zip(out, lines) if x != y]
    declaration = f"{_TYPES[cls]} *{name} = &{expr};"
    if not _fits(changed + ["\t" + declaration]):
        return None
    out = _declare(out, top, declaration)
    func = _function_name(lines, top)
    return out, (f"{func}() reaches {name} through a local pointer: "
                 f"&{expr} at its depth would go past 80 columns.")


def _function_name(lines: list[str], top: int) -> str:
    for i in range(top, max(top - 5, -1), -1):
        m = re.search(r"(\w+)\s*\(", lines[i])
        if m and not lines[i].startswith(("\t", " ")):
            return m.group(1)
    return "the function"


def hoist(text: str, line: int, name: str, cls: str) -> tuple[str, str] | None:
    """text with the statement that ends on line (1-based) shortened, and a
    sentence for the reviewer; None when it cannot be."""
    lines = text.split("\n")
    done = hoist_timeout(lines, line - 1) or hoist_address(lines, line - 1, name, cls)
    if done is None:
        return None
    return "\n".join(done[0]), done[1]
