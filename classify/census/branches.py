"""A release in each branch of an if/else after a take: the path check that
census.exits.held_exit() leaves out.

held_exit() needs one release that every path from a take passes; `take(); if (c)
{ ...; give(); } else { give(); ... }` has two, one in each branch (dm-vdo's
barrier on 6.12, taken through its __down() helper).  ``released_on_every_path``
asks held_exit() first, then walks the statements that follow the take in its
block: a plain statement holding a release closes every path, an if/else closes
them when each branch does before it leaves (return, goto, break, continue); any
other way out, or a label a path may come in by, fails it.
"""

from __future__ import annotations

import re

from classify.census.exits import (_LEAD_LABELS_RX, _LEAVE_RX, _body_end, _call_on,
                                   _innermost, _line_starts, _paren_end, _scopes,
                                   _statement_guard, held_exit)

_STMT_IF_RX = re.compile(r"if\s*\(")
_STMT_LOOP_RX = re.compile(r"(?:for|while|switch)\s*\(|do\b")


def _statements(text: str, start: int, end: int):
    """(start, end) of each statement of text[start:end], a statement sequence."""
    pos = start
    while True:
        m = re.compile(r"\s*").match(text, pos, end)
        pos = m.end()
        lead = _LEAD_LABELS_RX.match(text, pos, end)
        if lead.end() > pos and text[lead.end() - 1:lead.end()] in (":", "") and \
                ":" in text[pos:lead.end()]:
            return              # a label: a path may come in from elsewhere
        if pos >= end:
            return
        stop = _statement_end(text, pos, end)
        yield pos, stop
        pos = stop


def _statement_end(text: str, pos: int, end: int) -> int:
    m = _STMT_IF_RX.match(text, pos) or _STMT_LOOP_RX.match(text, pos)
    if m and text[pos:pos + 2] != "do":
        close = _paren_end(text, m.end() - 1)
        stop = _body_end(text, close) if close > 0 else end
        if text.startswith("if", pos):
            rest = re.compile(r"\s*else\b").match(text, stop, end)
            if rest:
                return _statement_end(text, rest.end(), end) if re.match(
                    r"\s*if\s*\(", text[rest.end():end]) else _body_end(text, rest.end())
        return min(stop, end)
    if text.startswith("do", pos):
        body = _body_end(text, pos + 2)
        semi = text.find(";", body)
        return end if semi < 0 else min(semi + 1, end)
    return min(_body_end(text, pos), end)


def _sequence_releases(text: str, start: int, end: int, gives: list[int]) -> bool:
    """Whether every path through the statements of text[start:end] passes one of
    gives (offsets of release calls) before any return, goto, break or continue."""
    for s, e in _statements(text, start, end):
        if any(s <= g < e for g in gives) and _STMT_IF_RX.match(text, s) is None \
                and _STMT_LOOP_RX.match(text, s) is None:
            return True               # a plain statement holding a release
        m = _STMT_IF_RX.match(text, s)
        if m:
            close = _paren_end(text, m.end() - 1)
            then_end = _body_end(text, close)
            rest = re.compile(r"\s*else\b").match(text, then_end, e)
            if rest and _branch_releases(text, close, then_end, gives) and \
                    _branch_releases(text, rest.end(), e, gives):
                return True
        if _LEAVE_RX.search(text, s, e):
            return False
    return False


def _branch_releases(text: str, start: int, end: int, gives: list[int]) -> bool:
    m = re.compile(r"\s*\{").match(text, start, end)
    if m:
        return _sequence_releases(text, m.end(), _body_end(text, m.end() - 1) - 1, gives)
    return _sequence_releases(text, start, end, gives)


def released_on_every_path(text: str, take: int, gives: list[int],
                           names: frozenset[str] = frozenset()) -> bool:
    """Whether every path after the take on line take passes a release on a line of
    gives: one release every path reaches (held_exit), or, along the statements
    that follow the take in its block, an if/else whose branches each release
    before they leave.  A path that fails the take is not asked about when the
    take is the condition of an if (held_exit's failure branch)."""
    close, _ = held_exit(text, take, gives, names)
    if close:
        return True
    starts = _line_starts(text)
    if take > len(starts):
        return False
    t0, t1 = _call_on(text, take, names)
    block = _innermost(_scopes(text), t0)
    if block is None or _statement_guard(text, t0) is not None:
        return False
    end = text.find(";", t1)
    gpos = [_call_on(text, g, names)[0] for g in gives if 0 < g <= len(starts)]
    return end >= 0 and _sequence_releases(text, end + 1, block.end, gpos)
