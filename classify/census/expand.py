"""Function-defining macros, expanded for the analysis.

A `#define` whose body is a whole function with semaphore calls in it (the UFS
sysfs macros `UFS_FLAG`, `UFS_ATTRIBUTE`, `UFS_STRING_DESCRIPTOR`, which define a
`_name##_show()` each) hides those calls from the census, which cannot tie them to
a function, and from spatch, which does not parse a #define's body as code.
``expand_text`` rewrites such a file the way the preprocessor would, for those
macros only: each use at file scope is replaced by the macro's body with its
arguments put in (`##` pasted, `#` made a string), on the use's own line, and the
#define's lines are blanked.  Every other line keeps its number, so the census,
spatch and the call graph read one text in which the macro's functions stand
where the macro is used (`ufs-sysfs.c:1377: down() in device_init_show()`).

A macro whose body is not a function, one used inside another #define or inside a
function, and a use whose argument list does not close are left as they are:
their calls stay "inside macro NAME", named as not analysed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from classify.census.cscan import clean_source, macro_spans, scan_scopes
from classify.census.model import OPS
from classify.census.scan import arg_spans

EXPAND_VERSION = "expand-1"

_HEAD_RX = re.compile(r"[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)")
_OP_RX = re.compile(r"(?<![\w.>])(?:" + "|".join(OPS) + r")\s*\(")
_FUNC_BODY_RX = re.compile(r"\)\s*\{")
# string and char literals (kept), comments (dropped): the body becomes one line
_TOKEN_RX = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|/\*.*?\*/|//[^\n]*",
                       re.S)


@dataclass(frozen=True)
class FunctionMacro:
    name: str
    params: tuple[str, ...]
    body: str            # one line, comments dropped
    start: int           # span of the #define in the file's text
    end: int


@dataclass(frozen=True)
class Expansion:
    """One use of a function-defining macro, replaced on its line."""
    line: int
    macro: str
    functions: tuple[str, ...]   # the functions the expansion defines


def _one_line(body: str) -> str:
    body = re.sub(r"\\\n", " ", body)
    body = _TOKEN_RX.sub(lambda m: m.group(0) if m.group(0)[0] in "\"'" else " ", body)
    return re.sub(r"\s+", " ", body).strip()


def function_macros(text: str) -> dict[str, FunctionMacro]:
    """The #defines of text whose body defines a function with a semaphore call."""
    out = {}
    for start, end, name in macro_spans(text):
        m = _HEAD_RX.match(text, start)
        if not m or m.group(1) != name:
            continue
        body = _one_line(text[m.end():end])
        if _FUNC_BODY_RX.search(body) and _OP_RX.search(body):
            params = tuple(p.strip() for p in m.group(2).split(",") if p.strip())
            out[name] = FunctionMacro(name, params, body, start, end)
    return out


def substitute(macro: FunctionMacro, args: list[str]) -> str:
    """The macro's body with args in place of its parameters, as cpp does it for
    the forms these macros use: `#p` a string, `a ## b` pasted."""
    sub = dict(zip(macro.params, args))
    parts = []
    last = 0
    for m in re.finditer(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'", macro.body):
        parts.append(_substitute_code(macro.body[last:m.start()], sub))
        parts.append(m.group(0))
        last = m.end()
    parts.append(_substitute_code(macro.body[last:], sub))
    return "".join(parts)


def _substitute_code(code: str, sub: dict[str, str]) -> str:
    code = re.sub(r"(?<![#\w])#(?!#)\s*(\w+)",
                  lambda m: '"' + sub[m.group(1)] + '"' if m.group(1) in sub else m.group(0),
                  code)
    code = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: sub.get(m.group(0), m.group(0)), code)
    return re.sub(r"\s*##\s*", "", code)


def _defined_functions(code: str) -> tuple[str, ...]:
    fs = scan_scopes(clean_source(code))
    return tuple(sc.name for sc in fs.scopes if sc.kind == "func" and sc.name)


def expand_text(text: str) -> tuple[str, list[Expansion]]:
    """text with its function-defining macros expanded (see the module doc), and
    the uses replaced; (text, []) when there is nothing to expand."""
    if "#" not in text or "define" not in text:
        return text, []
    macros = function_macros(text)
    if not macros:
        return text, []
    kept = clean_source(text, keep_macro_bodies=True)
    spans = macro_spans(text)
    clean = clean_source(text)
    fs = scan_scopes(clean)
    uses: list[tuple[int, int, FunctionMacro, list[str]]] = []
    refused: set[str] = set()
    for name, macro in macros.items():
        # used in another #define (it would vanish with ours) or in a function
        for m in re.finditer(rf"(?<![\w.>]){re.escape(name)}\s*\(", kept):
            inside = next((s for s in spans if s[0] <= m.start() < s[1]), None)
            if inside is not None and inside[2] != name:
                refused.add(name)
        for m in re.finditer(rf"(?<![\w.>]){re.escape(name)}\s*\(", clean):
            if fs.function_at(m.start())[0]:
                refused.add(name)
                break
            args, close = arg_spans(clean, m.end() - 1, stop=";")
            if close < 0 or len(args) != len(macro.params):
                refused.add(name)
                break
            uses.append((m.start(), close + 1, macro,
                         [re.sub(r"\s+", " ", text[a:b]).strip() for a, b in args]))
    uses = [u for u in uses if u[2].name not in refused]
    if not uses:
        return text, []
    edits = [(m.start, m.end, "\n" * text.count("\n", m.start, m.end))
             for m in macros.values() if m.name not in refused]
    expansions = []
    for start, end, macro, args in uses:
        code = substitute(macro, args)
        edits.append((start, end, code))
        line = text.count("\n", 0, start) + 1
        expansions.append(Expansion(line, macro.name, _defined_functions(code)))
    out, last = [], 0
    for start, end, new in sorted(edits):
        out.append(text[last:start])
        out.append(new)
        last = end
    out.append(text[last:])
    return "".join(out), sorted(expansions, key=lambda e: e.line)
