"""Reading the C text a conversion changed, for the passes of finish.py: the
lines `git diff HEAD` says differ, the text with comments (and literals)
blanked out, where the comments are, the functions and the comment above
each, and whether a semaphore is used.
"""

from __future__ import annotations

import re
from pathlib import Path

from classify.tree import git

# ------------------------------------------------------------------ helpers

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_SEM_OPS = re.compile(r"\b(?:down|down_interruptible|down_killable|down_trylock|"
                      r"down_timeout|up|sema_init)\s*\(|\bstruct\s+semaphore\b|"
                      r"\bDEFINE_SEMAPHORE\b")


def added_lines(tree: Path, rel: str) -> set[int]:
    """The line numbers (1-based, in the worktree's file) that differ from
    HEAD: this conversion's lines only, whatever earlier commits did."""
    out: set[int] = set()
    for text in git(tree, "diff", "-U0", "HEAD", "--", rel).splitlines():
        m = _HUNK.match(text)
        if m:
            first, count = int(m.group(1)), int(m.group(2) or 1)
            if m.group(2) != "0":
                out.update(range(first, first + count))
    return out


def strip_comments(text: str) -> str:
    """text with its comments and string/char literals blanked out (newlines
    and columns kept), for searching code only."""
    return _blank(text, comments=True, strings=True)


def comment_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of each comment of text (end after `*/` or at the
    end of a `//` line)."""
    spans: list[tuple[int, int]] = []
    _blank(text, comments=True, strings=False, spans=spans)
    return spans


def _blank(text: str, comments: bool, strings: bool,
           spans: list[tuple[int, int]] | None = None) -> str:
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        two = text[i:i + 2]
        if two in ("/*", "//"):
            end = text.find("*/", i + 2) + 2 if two == "/*" else text.find("\n", i)
            end = n if end < (2 if two == "/*" else 0) else end
            if spans is not None:
                spans.append((i, end))
            if comments:
                out[i:end] = [c if c == "\n" else " " for c in text[i:end]]
            i = end
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if strings:
                out[i + 1:j] = [" "] * (j - i - 1)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _line_of(text: str, offset: int) -> int:
    """The 1-based line number of offset."""
    return text.count("\n", 0, offset) + 1


def function_spans(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) 1-based line numbers of each function definition,
    the comment block right above it included (a kernel-doc speaks of it)."""
    spans = []
    i = 0
    while i < len(lines):
        line = lines[i]
        opening = line.startswith("{") or bool(re.match(r"^\w.*\)\s*\{\s*$", line))
        if not opening:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("}")),
                   len(lines) - 1)
        start = i if not line.startswith("{") else i - 1
        while start > 0 and lines[start - 1].strip() and \
                not lines[start - 1].rstrip().endswith((";", "}", "*/")) and \
                not lines[start - 1].startswith("#"):
            start -= 1
        if start > 0 and lines[start - 1].rstrip().endswith("*/"):
            start -= 1
            while start > 0 and "/*" not in lines[start]:
                start -= 1
        spans.append((start + 1, end + 1))
        i = end + 1
    return spans

