"""A small C scanner: comments and strings blanked, macros read, the scopes
(functions, struct bodies) of a file, and its #include lines.  Enough to place a
declaration or a call; the real C parse is spatch's.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from classify.census.macros import function_of, load_hints


_CLEAN_RX = re.compile(
    r"(?P<pp>^[ \t]*#(?:[^\n\\]|\\.|\\\n)*)"
    r"|(?P<bc>/\*.*?(?:\*/|\Z))"
    r"|(?P<lc>//[^\n]*)"
    r"|(?P<str>\"(?:[^\"\\\n]|\\.)*\"?)"
    r"|(?P<chr>'(?:[^'\\\n]|\\.)*'?)",
    re.M | re.S)


_MACRO_HEAD_RX = re.compile(r"#\s*define\s+\w+(?:\([^)]*\))?")


def _blank_keep_macros(m: re.Match) -> str:
    t = m.group(0)
    if m.lastgroup == "pp":
        head = _MACRO_HEAD_RX.search(t)
        if head:  # keep the body of a #define, blank its head and the backslashes
            body = re.sub(r"\\\n", " \n", t[head.end():])
            body = _CLEAN_RX.sub(_blank, body)
            return re.sub(r"[^\n]", " ", t[:head.end()]) + body
    return _blank(m)


def _blank(m: re.Match) -> str:
    t = m.group(0)
    if m.lastgroup in ("str", "chr"):
        return t[0] + re.sub(r"[^\n]", " ", t[1:-1]) + t[-1] if len(t) > 1 else t
    return re.sub(r"[^\n]", " ", t)


def clean_source(text: str, keep_macro_bodies: bool = False) -> str:
    """Blank comments, string and char literals and preprocessor lines, keeping
    every offset and newline, so positions in the result are positions in text.
    keep_macro_bodies: keep the bodies of #define (to find calls made in macros)."""
    return _CLEAN_RX.sub(_blank_keep_macros if keep_macro_bodies else _blank, text)


_MACRO_SPAN_RX = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(?:[^\n\\]|\\.|\\\n)*", re.M)


def macro_spans(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group(1)) for m in _MACRO_SPAN_RX.finditer(text)]


_DEFINE_RX = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([^\n\\]+?)[ \t]*$", re.M)


def object_macros(text: str) -> dict[str, str]:
    """#define NAME value, and enum constants with an explicit value."""
    out = {m.group(1): re.sub(r"/\*.*?\*/|//.*", "", m.group(2)).strip()
           for m in _DEFINE_RX.finditer(text)}
    for body in re.findall(r"\benum\b[^{;]*\{([^}]*)\}", text):
        body = re.sub(r"/\*.*?\*/|//[^\n]*", "", body, flags=re.S)
        for name, value in re.findall(r"\b([A-Za-z_]\w*)\s*=\s*([^,]+)", body):
            out.setdefault(name, value.strip())
    return out


@dataclass
class Scope:
    start: int
    end: int
    kind: str      # struct | func | block | other
    name: str      # struct tag / function name
    parent: int    # index of the parent scope, -1 at file scope


@dataclass
class FileScopes:
    scopes: list[Scope]
    line_starts: list[int]

    def line_of(self, pos: int) -> int:
        import bisect
        return bisect.bisect_right(self.line_starts, pos)

    def pos_of_line(self, line: int) -> int:
        return self.line_starts[max(0, min(line - 1, len(self.line_starts) - 1))]

    def innermost(self, pos: int) -> int:
        best = -1
        for i, s in enumerate(self.scopes):
            if s.start < pos < s.end and (best < 0 or s.start > self.scopes[best].start):
                best = i
        return best

    def function_at(self, pos: int) -> tuple[str, int]:
        i = self.innermost(pos)
        while i >= 0:
            if self.scopes[i].kind == "func":
                return self.scopes[i].name, self.scopes[i].start
            i = self.scopes[i].parent
        return "", -1


_KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else", "case",
             "typeof", "__typeof__", "defined", "goto"}


_STRUCT_HEAD_RX = re.compile(r"\b(struct|union)\b\s*((?:__\w+(?:\([^)]*\))?\s+)*)(\w+)?\s*$")


# an enum declaration ("enum tag {", "typedef enum {"), not a parameter of an enum type
_ENUM_RX = re.compile(r"\benum\b\s*\w*\s*$")


_FUNC_TAIL_RX = re.compile(r"\)\s*(?:\w+(?:\([^()]*\))?\s*){0,4}$")


def scan_scopes(clean: str) -> FileScopes:
    line_starts = [0] + [m.end() for m in re.finditer(r"\n", clean)]
    scopes: list[Scope] = []
    stack: list[int] = []
    func_depth = 0  # open function scopes on the stack
    hints = load_hints()
    last_stmt = 0   # offset after the last ; { or }
    for m in re.finditer(r"[{};]", clean):
        ch, pos = m.group(), m.start()
        if ch == "{":
            head = clean[max(last_stmt, pos - 400):pos].rstrip()
            parent = stack[-1] if stack else -1
            in_func = func_depth > 0
            kind, name = ("block" if in_func else "other"), ""
            if ("struct" in head or "union" in head) and (
                    sm := _STRUCT_HEAD_RX.search(head)):
                kind, name = "struct", sm.group(3) or ""
            elif head.endswith("=") or "enum" in head and _ENUM_RX.search(head):
                kind = "other"
            elif not in_func and head and (head[-1] == ")" or head[-1].isalnum()
                                           or head[-1] == "_") and _FUNC_TAIL_RX.search(head):
                # function definition: name before the parameter list
                name = _function_name(head)
                if name in hints.functions:      # static CLOSURE_CALLBACK(fn) {
                    am = re.search(re.escape(name) + r"\s*\(([^()]*)\)\s*$", head)
                    name = function_of(name, am.group(1), hints) if am else name
                kind = "func" if name else "other"
            scopes.append(Scope(pos, len(clean), kind, name, parent))
            stack.append(len(scopes) - 1)
            func_depth += kind == "func"
            last_stmt = pos + 1
        elif ch == "}":
            if stack:
                i = stack.pop()
                scopes[i].end = pos
                func_depth -= scopes[i].kind == "func"
                if scopes[i].kind == "struct" and not scopes[i].name:
                    after = re.match(r"\s*(?:__\w+(?:\([^)]*\))?\s*)*\**\s*(\w+)", clean[pos + 1:pos + 200])
                    scopes[i].name = after.group(1) if after else f"anon@{clean.count(chr(10), 0, scopes[i].start) + 1}"
                    if scopes[i].parent >= 0 and scopes[scopes[i].parent].kind == "struct":
                        scopes[i].name = scopes[scopes[i].parent].name + "." + scopes[i].name
            last_stmt = pos + 1
        else:
            # a ; inside parentheses (for loops) does not end a statement head
            last_stmt = pos + 1
    return FileScopes(scopes, line_starts)


def _function_name(head: str) -> str:
    # find the identifier before the first top-level "(" of the last declarator
    depth = 0
    end = len(head.rstrip())
    i = end - 1
    # walk back over trailing attributes like __releases(x) to the parameter list
    while i >= 0:
        c = head[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                before = head[:i].rstrip()
                nm = re.search(r"(\w+)\s*$", before)
                # `__name(` after a parameter list is an attribute (`f(x) __acquires(l)`);
                # anywhere else it is the function's own name (`static void __down(`)
                if nm and nm.group(1) not in _KEYWORDS and not re.search(r"\)\s*__\w+$", before):
                    # the outermost parenthesised group right after a name
                    outer = _function_name_outer(head[:i])
                    return outer or nm.group(1)
                if nm and nm.group(1) not in _KEYWORDS:
                    end = i
        i -= 1
    return ""


def _function_name_outer(before: str) -> str:
    nm = re.search(r"(\w+)\s*$", before.rstrip())
    if not nm:
        return ""
    name = nm.group(1)
    if name.startswith("__") and name not in ("__init", "__exit"):
        # an attribute such as __acquires(...) follows the real parameter list
        rest = before[:nm.start()].rstrip()
        if rest.endswith(")"):
            return _function_name(rest)
    return name


def read_text(root: Path, rel: str) -> str:
    p = root / rel if root.is_dir() else root
    with open(p, errors="replace") as fh:
        return fh.read()


def file_includes(path: str, text: str) -> list[str]:
    inc = set()
    for m in re.finditer(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', text, re.M):
        name = m.group(1)
        inc.add(os.path.normpath(os.path.join(os.path.dirname(path), name)))
        inc.add("include/" + name)
        inc.add("include/uapi/" + name)
        inc.add(name)
        if name.startswith("asm/"):
            inc.add("asm:" + name[4:])
    return sorted(inc)



_LOOP_HEAD_RX = re.compile(r"(?:\b(?:for|while)\s*\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"
                           r"|\bdo)\s*$")


def _statement_start(clean: str, pos: int) -> int:
    """The offset after the ; { or } that ends the statement before pos (a ; inside
    the parentheses of a for head does not)."""
    depth = 0
    for i in range(pos - 1, max(-1, pos - 2000), -1):
        ch = clean[i]
        if ch == ")":
            depth += 1
        elif ch == "(":
            depth -= 1
        elif ch in ";{}" and depth <= 0:
            return i + 1
    return max(0, pos - 2000)


def in_loop(clean: str, fs: FileScopes, pos: int) -> bool:
    """Whether pos lies in the body of a for, while or do loop of its function:
    a single statement right after the loop's head, or a braced body."""
    if _LOOP_HEAD_RX.search(clean[_statement_start(clean, pos):pos].rstrip()):
        return True
    i = fs.innermost(pos)
    while i >= 0 and fs.scopes[i].kind == "block":
        sc = fs.scopes[i]
        head = _LOOP_HEAD_RX.search(clean[_statement_start(clean, sc.start):sc.start].rstrip())
        # do { ... } while (0) runs once: the macro idiom, not a loop
        once = re.match(r"\s*while\s*\(\s*0\s*\)", clean[sc.end + 1:sc.end + 40])
        if head and not (head.group(0).startswith("do") and once):
            return True
        i = sc.parent
    return False
