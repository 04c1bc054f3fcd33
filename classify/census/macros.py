"""The macro hints of cocci/macros.h, read by the census: which macros define a
function (its name is an argument: `static CLOSURE_CALLBACK(fn) {`) and which
declare a variable of a type given as an argument (`closure_type(c, struct
cache_set, sb_write);`).  spatch gets the same file (classify/spatch.py), so the
census and spatch name the same functions.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from classify.paths import COCCI_DIR

MACRO_FILE = COCCI_DIR / "macros.h"

_DEFINE_RX = re.compile(r"^#define\s+(\w+)\(([^)]*)\)\s+(.+)$", re.M)


@dataclass(frozen=True)
class Hints:
    functions: dict[str, int]               # macro -> index of the argument naming the function
    declarators: dict[str, tuple[int, int]]  # macro -> (index of the name, index of the type)
    digest: str                              # of the file: part of the census cache key


def parse_hints(text: str) -> Hints:
    functions: dict[str, int] = {}
    declarators: dict[str, tuple[int, int]] = {}
    for name, params, body in _DEFINE_RX.findall(text):
        params_l = [p.strip() for p in params.split(",")]
        fm = re.match(r"^[\w\s\*]*?\b(\w+)\s*\(", body)
        if fm and fm.group(1) in params_l:
            functions[name] = params_l.index(fm.group(1))
            continue
        dm = re.match(r"^(\w+)\s*\*\s*(\w+)\s*=", body)
        if dm and dm.group(1) in params_l and dm.group(2) in params_l:
            declarators[name] = (params_l.index(dm.group(2)), params_l.index(dm.group(1)))
    return Hints(functions, declarators, hashlib.sha256(text.encode()).hexdigest()[:16])


def load_hints(path: Path | None = None) -> Hints:
    """The hints of path (default MACRO_FILE), parsed once per file content."""
    try:
        return _parse_cached(Path(path or MACRO_FILE).read_text())
    except OSError:
        return Hints({}, {}, "none")


@functools.lru_cache(maxsize=4)
def _parse_cached(text: str) -> Hints:
    return parse_hints(text)


def function_of(name: str, args_text: str, hints: Hints | None = None) -> str:
    """The function a function-defining macro call defines (its argument), or name."""
    hints = hints or load_hints()
    if name not in hints.functions:
        return name
    args = [a.strip() for a in args_text.split(",")]
    i = hints.functions[name]
    return args[i] if i < len(args) and re.fullmatch(r"\w+", args[i]) else name


def declared_struct(clean: str, base: str, hints: Hints | None = None) -> str:
    """The struct tag of base when the last declaration of it in clean is a declaring
    macro's (`closure_type(base, struct tag, member)`), else ""."""
    hints = hints or load_hints()
    found = ""
    for macro, (iname, itype) in hints.declarators.items():
        for m in re.finditer(r"\b" + re.escape(macro) + r"\s*\(([^()]*)\)", clean):
            args = [a.strip() for a in m.group(1).split(",")]
            if len(args) > max(iname, itype) and args[iname] == base:
                tm = re.fullmatch(r"struct\s+(\w+)\s*\*?", args[itype])
                if tm:
                    found = tm.group(1)
    return found
