"""The conditions a statement runs under, and two that cannot hold together.

spatch says an up() runs in interrupt context when its function is called from a
handler the file registers (cocci/sem_atomic.cocci: "called from wave5_vpu_irq(),
an interrupt/timer/tasklet callback registered at line 321").  wave5's handler
releases only in polling mode, and registers that handler only in interrupt mode:

    if (dev->irq < 0)                                   (the up())
            up(&dev->irq_sem);
    ...
    if (dev->irq < 0) {                                 (the probe)
            ... kthread_run(irq_thread, ...)            polling
    } else {
            ... devm_request_threaded_irq(..., wave5_vpu_irq, ...)
    }

``conditions`` gives the chain of `if` conditions around a line in its function
(``Cond``: the test, negated in an else branch); ``exclusive`` finds a condition
of one chain that the other's contradicts (the same test negated, or the opposite
comparison of the same operands, as text).  The audit then drops the interrupt
context of that call, and says why; a guard it cannot weigh stays in the evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from classify.census.cscan import FileScopes
from classify.census.exits import _head, _line_starts, _scopes, _statement_guard

_OPPOSITE = {"<": ">=", ">=": "<", ">": "<=", "<=": ">", "==": "!=", "!=": "=="}
_CMP_RX = re.compile(r"^(.+?)(<=|>=|==|!=|<(?![<=])|(?<![-\s>])>(?![>=]))(.+)$")


@dataclass(frozen=True)
class Cond:
    test: str            # spaces removed
    negated: bool = False

    def text(self) -> str:
        return f"!({self.test})" if self.negated else self.test

    def normal(self) -> tuple[str, bool]:
        """(the test, whether it holds when it is true), `!x` read as x negated
        and a comparison as its `<`, `<=`, `==` form."""
        test, neg = self.test, self.negated
        while test.startswith("!") and not test.startswith("!="):
            inner = test[1:]
            if inner.startswith("(") and inner.endswith(")"):
                inner = inner[1:-1]
            test, neg = inner, not neg
        m = _CMP_RX.match(test)
        if m and m.group(2) in (">=", ">", "!="):
            test, neg = f"{m.group(1)}{_OPPOSITE[m.group(2)]}{m.group(3)}", not neg
        return test, neg


def _else_of(text: str, fs: FileScopes, start: int) -> str | None:
    """The test of the `if` whose block ends right before the `else {` at start."""
    before = text[:start].rstrip()
    if not before.endswith("else"):
        return None
    close = before[:-4].rstrip()
    if not close.endswith("}"):
        return None
    pos = len(close) - 1
    for sc in fs.scopes:
        if sc.end == pos and sc.kind == "block":
            head = _head(text, sc.start)
            m = re.match(r"(?:else\s+)?if\s*\((.*)\)$", head, re.S)
            return re.sub(r"\s+", "", m.group(1)) if m else None
    return None


def conditions(text: str, line: int) -> list[Cond]:
    """The conditions around the first statement on line, innermost first, up to
    its function: `if (c) stmt;`, `if (c) { ... }` and the else of such an if.
    text: the file with comments and strings blanked."""
    starts = _line_starts(text)
    if line > len(starts):
        return []
    pos = starts[line - 1]
    while pos < len(text) and text[pos].isspace():
        pos += 1
    fs = _scopes(text)
    out = []
    sg = _statement_guard(text, pos)
    if sg and sg != "?":
        out.append(Cond(sg))
    i = fs.innermost(pos)
    while i >= 0 and fs.scopes[i].kind == "block":
        sc = fs.scopes[i]
        head = _head(text, sc.start)
        m = re.fullmatch(r"(?:else\s+)?if\s*\((.*)\)", head, re.S)
        if m:
            out.append(Cond(re.sub(r"\s+", "", m.group(1))))
        elif head == "else":
            test = _else_of(text, fs, sc.start)
            if test:
                out.append(Cond(test, negated=True))
        i = sc.parent
    return out


def exclusive(a: list[Cond], b: list[Cond]) -> tuple[Cond, Cond] | None:
    """A condition of a and one of b that cannot both hold, or None."""
    for x in a:
        for y in b:
            tx, nx = x.normal()
            ty, ny = y.normal()
            if tx == ty and nx != ny:
                return x, y
    return None


def callback_line(why: str) -> int:
    """The line of the registration an atomic fact's reason names, 0 if none."""
    m = re.search(r"registered at line (\d+)", why)
    return int(m.group(1)) if m else 0


def weigh(text: str, line: int, why: str) -> tuple[str, str]:
    """An atomic fact about the call on line (why: spatch's reason) weighed against
    the guards of the call and of the registration it names: ("", guard) when
    they exclude each other (guard says why the interrupt path is dropped),
    else (why with the call's conditions, "")."""
    reg = callback_line(why)
    if not reg:
        return why, ""
    mine = conditions(text, line)
    if not mine:
        return why, ""
    hit = exclusive(mine, conditions(text, reg))
    cb = re.search(r"(?:called from|in) (\w+)\(\)", why)
    if hit is not None:
        return "", (f"only when {hit[0].text()}; {cb.group(1) if cb else 'the callback'}() "
                    f"is registered at line {reg} only when {hit[1].text()}: not reached "
                    "from that interrupt")
    return f"{why} (only when {' && '.join(c.text() for c in mine)})", ""
