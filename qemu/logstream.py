"""A log file of any size -> the text triage reads, in bounded memory and time.

    read_log(path)   sniff the file (refused when it is not text), then read it whole
                     when it is small (<= WHOLE_MAX), else stream it line by line and
                     keep only what the parser reads of a log:
                       - a window around each report's headline (PRE lines before, the
                         parser's whole body of _MAX_BODY lines and POST more after)
                       - the lines read anywhere in a log: "Linux version", the command
                         line, taint lines, "# lockdep-class:"/"# lockdep_stats:",
                         the harness's and /init's lines
                     Each kept line keeps its line number in the file (Log.line_of), so
                     a report's line is that of the file either way.  A window whose
                     text (but for time and other prefixes) repeats one kept before is
                     not kept again: each of its headlines is recorded, by its line in
                     the file, as a repeat of the kept headline in its place
                     (Log.repeats: the same report, so the same triage)
    sniff(path)      LogError unless the first SNIFF bytes read as text: no NUL byte,
                     few control characters, and a newline within NEWLINE_MAX bytes

A file that is endless (a device, a pipe) stops at READ_MAX bytes with LogError; so
does one whose reports alone would keep more than KEEP_MAX bytes (one window of
headlines without end among them).  The lines of the repeats are kept up to
POSITIONS_MAX in all, the rest counted.  Mail-quoted logs
over WHOLE_MAX lose the wrap width of the dropped lines (qemu.logtext): small ones
are read whole.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from qemu import logtext, parse

SNIFF = 64 << 10                # the bytes looked at for binary content
NEWLINE_MAX = 1 << 20           # a log has a newline within its first MiB
CONTROL_SHARE = 0.05            # of the sniffed bytes, control characters at most
WHOLE_MAX = 8 << 20             # up to this size a log is read whole
READ_MAX = 4 << 30              # an input longer than this is not a log (an endless one)
KEEP_MAX = 64 << 20             # the text kept of a large log, at most
LINE_MAX = 64 << 10             # a longer line is read in pieces of this size
POSITIONS_MAX = 1 << 16         # the lines of repeated reports listed, at most
PRE, POST = 8, 20
_BODY = parse._MAX_BODY

# Every headline of parse.REPORT_PATTERNS holds one of these words, and so does every
# line read anywhere in a log: a cheap test on the raw bytes before the real one.
_CANDIDATE = re.compile(rb"WARNING|INFO|BUG|DEBUG_LOCKS|mutex_debug|Oops|general prot"
                        rb"|invalid opcode|Unable to handle|Internal error|Kernel panic"
                        rb"|s2m-|# lockdep|Linux version|Command line:|ainted")
_GLOBAL = re.compile(r"^(?:# lockdep-class: |# lockdep_stats:\s+debug_locks:|"
                     + re.escape(parse.HARNESS_PREFIX) + "|" + re.escape(parse.INIT_DONE)
                     + ")")
# read only where they first come (the version, the scenario): kept once
_ONCE = re.compile(r"Linux version \d|Command line:|Not tainted|Tainted: ")
# the bytes a text may hold below 0x20: tab, newline, form feed, CR, escape (colour)
_CONTROL = bytes(b for b in range(32) if b not in b"\t\n\x0c\r\x1b") + b"\x7f"


class LogError(Exception):
    """The file is not a log to read (exit status 2: the user's to fix)."""


@dataclass
class Repeats:
    """The reports of one signature after its first: how many, and the line in the
    file of each (the first POSITIONS_MAX of the log's, in all)."""
    count: int = 0
    lines: list[int] = field(default_factory=list)


@dataclass
class Log:
    """The text the parser reads and the file's line number of each of its lines
    (None: the text is the whole file, line numbers are its own)."""
    text: str
    head: str
    line_of: list[int] | None = field(default=None, repr=False)
    # a kept headline's line in the file -> the headlines that repeat it word for word
    repeats: dict[int, Repeats] = field(default_factory=dict)

    def file_line(self, line: int) -> int:
        """A 1-based line of text -> the 1-based line of the file."""
        return self.line_of[line - 1] if self.line_of else line


def sniff(path: Path) -> bytes:
    """The first SNIFF bytes of the file, LogError when they are not text."""
    with open(path, "rb") as f:
        head = f.read(SNIFF)
        if b"\0" in head:
            raise LogError(f"log {path}: not text: it holds NUL bytes (a binary file?)")
        share = sum(head.count(c) for c in _CONTROL) / max(len(head), 1)
        if share > CONTROL_SHARE:
            raise LogError(f"log {path}: not text: {share:.0%} of its first "
                           f"{len(head) >> 10} KiB are control characters")
        seen, chunk = len(head), head
        while b"\n" not in chunk and chunk and seen < NEWLINE_MAX:
            chunk = f.read(min(SNIFF, NEWLINE_MAX - seen))
            seen += len(chunk)
        if b"\n" not in chunk and seen >= NEWLINE_MAX:
            raise LogError(f"log {path}: not text: no newline in its first "
                           f"{NEWLINE_MAX >> 20} MiB")
    return head


# how every headline of parse.REPORT_PATTERNS starts (they are anchored at ^)
_HEAD_START = ("WARNING: ", "[ INFO: ", "[ BUG: ", "BUG: ", "INFO: ", "DEBUG_LOCKS_WARN_ON(",
               "mutex_debug ", "kernel BUG at ", "general protection fault", "Oops: ",
               "invalid opcode: ", "Unable to handle kernel ", "Internal error: ",
               "Kernel panic - not syncing: ", parse.HARNESS_PREFIX)


def _headline(raw: bytes) -> bool:
    """Is this raw line (a _CANDIDATE) a report's headline, once normalised?"""
    return _is_headline(_norm(raw))


def _is_headline(line: str) -> bool:
    return line.startswith(_HEAD_START) and \
        any(pat.match(line) for _, pat in parse.REPORT_PATTERNS)


# A line read: its number in the file, its bytes, and its text once normalised when it
# is a _CANDIDATE but no headline (what may be a line read anywhere), else None.
_Line = tuple[int, bytes, "str | None"]

# the prefixes _norm takes off each line, off every line of a window's bytes at once
_ANSI_B = re.compile(logtext._ANSI.pattern.encode())
_QUOTE_B = re.compile(logtext._QUOTE.pattern.encode(), re.M)
_PREFIX_B = re.compile(logtext._PREFIX.pattern.encode(), re.M)


def _key(lines: list[_Line]) -> int:
    """The text of a window but for the prefixes of its lines, hashed."""
    text = _ANSI_B.sub(b"", b"".join([raw for _, raw, _ in lines])).replace(b"\r", b"")
    return hash(_PREFIX_B.sub(b"", _QUOTE_B.sub(b"", text)))


def _global(raw: bytes, once: set[str]) -> bool:
    """Is this raw line (a _CANDIDATE) one read anywhere in a log?  once: the _ONCE
    kinds of line kept already."""
    return _is_global(_norm(raw), once)


def _is_global(line: str, once: set[str]) -> bool:
    if _GLOBAL.match(line):
        return True
    m = _ONCE.search(line)
    if m and m[0] not in once:
        once.add(m[0])
        return True
    return False


def _norm(raw: bytes) -> str:
    line = logtext._ANSI.sub("", raw.decode(errors="replace")).replace("\r", "")
    return logtext._PREFIX.sub("", logtext._QUOTE.sub("", line), count=1).rstrip("\n")


class _Kept:
    """The lines kept so far, their line numbers, and the report windows seen."""

    def __init__(self, path: Path):
        self.path, self.lines, self.numbers, self.size = path, [], [], 0
        self.seen: dict[int, list[int]] = {}    # a kept window's key -> its headlines
        self.once: set[str] = set()
        self.repeats: dict[int, Repeats] = {}
        self.listed = 0

    def add(self, n: int, raw: bytes) -> None:
        self.lines.append(raw if raw.endswith(b"\n") else raw + b"\n")
        self.numbers.append(n)
        self.size += len(raw)
        if self.size > KEEP_MAX:
            raise LogError(f"log {self.path}: its reports alone are over "
                           f"{KEEP_MAX >> 20} MiB: cut the part of the log to read")

    def window(self, lines: list[_Line], heads: list[int]) -> None:
        """A report window closed (heads: the lines of its headlines): kept, unless
        the same text (but for the prefixes) was kept before: then each headline is a
        repeat of the kept one in its place, and only its lines read anywhere in a log
        (not headlines) are kept."""
        key = _key(lines)
        if key in self.seen:        # but its lockdep-class lines count again
            for first, n in zip(self.seen[key], heads):
                rep = self.repeats.setdefault(first, Repeats())
                rep.count += 1
                if self.listed < POSITIONS_MAX:
                    rep.lines.append(n)
                    self.listed += 1
            for n, raw, norm in lines:
                if norm is not None and _is_global(norm, self.once):
                    self.add(n, raw)
            return
        self.seen[key] = heads
        for n, raw, _ in lines:
            self.add(n, raw)


def _condense(f, path: Path) -> _Kept:
    """The lines kept of a large log (see the module's doc)."""
    kept = _Kept(path)
    before: deque[_Line] = deque(maxlen=PRE)
    window: list[_Line] = []
    heads: list[int] = []
    until = total = n = size = 0          # the window goes up to line `until`
    while raw := f.readline(LINE_MAX):
        n += 1
        total += len(raw)
        if total > READ_MAX:
            raise LogError(f"log {path}: more than {READ_MAX >> 30} GiB: an endless "
                           "input, or cut the part of the log to read")
        norm = _norm(raw) if _CANDIDATE.search(raw) else None
        if norm is not None and _is_headline(norm):
            norm = None
            size += sum(len(r) for _, r, _ in before)
            window += before
            before.clear()
            until = n + _BODY + POST
            heads.append(n)
        if n <= until:
            window.append((n, raw, norm))
            size += len(raw)
            if size > KEEP_MAX:
                raise LogError(f"log {path}: one stretch of reports from line "
                               f"{window[0][0]} is over {KEEP_MAX >> 20} MiB: cut the "
                               "part of the log to read")
            continue
        if window:
            kept.window(window, heads)
            window, heads, size = [], [], 0
        if norm is not None and _is_global(norm, kept.once):
            kept.add(n, raw)
        else:
            before.append((n, raw, norm))
    if window:
        kept.window(window, heads)
    return kept


def read_log(path: Path) -> Log:
    """The log at path as the parser reads it (see the module's doc); LogError when
    it is not a log, OSError when it cannot be read."""
    path = Path(path)
    if path.is_dir():
        raise LogError(f"log {path}: is a directory, not a file")
    head = sniff(path).decode(errors="replace")
    if path.is_file() and path.stat().st_size <= WHOLE_MAX:
        return Log(path.read_text(errors="replace"), head)
    with open(path, "rb") as f:
        kept = _condense(f, path)
    return Log(b"".join(kept.lines).decode(errors="replace"), head, kept.numbers,
               kept.repeats)
