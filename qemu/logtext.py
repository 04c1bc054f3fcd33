"""A log as people hand it over -> the kernel's own lines.  Pure; qemu.parse reads
every log through normalise(), the one place a log's form is undone.

What other tools and people put around the kernel's text, undone in this order:
  terminal             ANSI colour and control sequences (dmesg --color=always, a
                       console capture with the firmware's screen codes), CRLF
  mail replies         "> ", ">> ", "> > > " quoting at any depth; a long line the
                       mail client wrapped onto the next quoted line is joined again
  journalctl -k/syslog "Dec 03 12:00:00 host kernel: "  (short, or -o short-iso)
  dmesg -r, /dev/kmsg  "<4>"
  CONFIG_PRINTK_TIME   "[    1.234567]", or dmesg -T's "[Sun Dec  6 01:02:03 2026]"
  CONFIG_PRINTK_CALLER "[    T123]" / "[     C1]" right after the time (console), after
                       one space (dmesg of util-linux 2.38 and later), or alone
Only the prefix goes: the kernel's own leading blanks (frames, lock lines) stay.  Each
line keeps the number of the line it came from (the first, for a joined line).
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-_c])")
_QUOTE = re.compile(r"^(?:>[ \t]?)+")
_JOURNAL = (r"(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d"
            r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:[+-]\d\d:?\d\d|Z)?)"
            r" \S+ kernel: ")
_TIME = (r"\[\s*\d+\.\d+\]"
         r"|\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\]")     # dmesg -T
_PREFIX = re.compile(r"^(?:" + _JOURNAL + r")?(?:<\d{1,3}>(?=\S))?"
                     r"(?:(?:" + _TIME + r")(?: ?\[\s*[TC]\d+\])? ?|\[\s*[TC]\d+\] )?")
_STAMP = re.compile(r"^(?:" + _JOURNAL + r"|<\d{1,3}>|" + _TIME + ")")

# What a wrapped-off tail of a line looks like on the next line, when no timestamp
# says so: a module tag, a frame's address or function with its offset, arm's
# "(caller+0x../0x..)", a lock's "(name){usage}" or "&name", words going on in lower
# case or digits; and only where the first word of it would not have fit on the line
# before (the mail client's reason to wrap).
_SYM = r"[A-Za-z_$][\w.$]*"
_TAIL = re.compile(rf"^(?:\[[\w-]+\]$|\[<[0-9a-f]+>\]|\(?{_SYM}\+0x[0-9a-f]+/0x[0-9a-f]+"
                   rf"(?:\)|\s|$)|\((?:[^()\s]|\([^()]*\))+\)(?:\{{| at:|$)|&\S|"
                   rf"[a-z0-9]\S*(?: |$))")
_WRAP_MIN = 16          # shorter, it was not wrapped (even before a lock's long name)


def _continues(prev: str, tail: str, prev_len: int, width: int) -> bool:
    """Is the quoted line `tail` the rest of the quoted line `prev` (without their
    quote marks; prev_len: prev's length with its mark), cut by a mail client?  The
    longest quoted line of that depth that could have been broken is `width` long."""
    if prev_len < _WRAP_MIN or not tail or tail[0].isspace():
        return False        # a wrapped-off tail starts right after the quote
    if _STAMP.match(prev):
        return not _STAMP.match(tail)
    return prev_len + 1 + len(tail.split(" ", 1)[0]) > width and bool(_TAIL.match(tail))


def _unquote(lines: list[str]) -> tuple[list[str], list[int]]:
    """Reply quoting stripped and wrapped lines joined; the source line of each."""
    marks = [m.end() if (m := _QUOTE.match(raw)) else 0 for raw in lines]
    depths = [raw[:k].count(">") for raw, k in zip(lines, marks)]
    width: dict[int, int] = {}      # the wrap width: only a line with no blank is longer
    for raw, k, d in zip(lines, marks, depths):
        if " " in raw[k:].strip():
            width[d] = max(width.get(d, 0), len(raw))
    out: list[str] = []
    origin: list[int] = []
    for n, (raw, k, d) in enumerate(zip(lines, marks, depths)):
        if d and n and d == depths[n - 1] and _continues(
                lines[n - 1][marks[n - 1]:], raw[k:], len(lines[n - 1]), width.get(d, 0)):
            out[-1] = f"{out[-1]} {raw[k:]}"
        else:
            out.append(raw[k:])
            origin.append(n)
    return out, origin


def normalise(text: str) -> tuple[list[str], list[int]]:
    """Console text -> (the kernel's lines, the 0-based source line of each)."""
    lines = [_ANSI.sub("", line).replace("\r", "") for line in text.splitlines()]
    lines, origin = _unquote(lines)
    return [_PREFIX.sub("", line, count=1) for line in lines], origin
