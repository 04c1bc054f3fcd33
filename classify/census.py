"""Census: every struct semaphore declaration and every semaphore API call of a tree.

The census is grep based on purpose: it does not depend on spatch parsing a file,
so it is the completeness baseline that the Coccinelle facts are checked against.
It also gives every semaphore its identity:

* ``path:name`` for a global, a static or a local (``path`` relative to the tree),
* ``path:struct_tag.member`` for a struct member (``path`` = the file declaring
  the struct; one member is one semaphore wherever it is used).

Declarations through pointers (``struct semaphore *``) are recorded as pointers:
they are not semaphores of their own, and the semaphores they point to are found
through the "address handed to other code" facts.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("sem2mutex.census")

OPS = ("sema_init", "down", "down_interruptible", "down_killable", "down_trylock",
       "down_timeout", "up")
ACQUIRE = ("down", "down_interruptible", "down_killable", "down_trylock", "down_timeout")

CENSUS_VERSION = "census-5"
# What makes a file matter; the same expression for git grep -P and for Python re.
PREFILTER = (r"struct semaphore|DEFINE_SEMAPHORE|__SEMAPHORE_INITIALIZER|sema_init|"
             r"\b(?:down|down_interruptible|down_killable|down_trylock|down_timeout|up)[ \t]*\(")
# The implementation of semaphores, and trees of user-space code, are not users.
EXCLUDE_PREFIXES = ("tools/", "Documentation/", "scripts/", "usr/")
EXCLUDE_FILES = ("include/linux/semaphore.h", "kernel/locking/semaphore.c")

_SUBSYS_TWO = ("drivers/", "fs/", "net/", "sound/", "arch/", "include/", "kernel/",
               "security/", "crypto/", "lib/", "mm/", "block/", "virt/", "samples/")


@dataclass(frozen=True)
class Decl:
    """A struct semaphore (or a pointer to one) declared somewhere."""
    id: str
    kind: str          # member | global | static | local | param (pointers only)
    path: str
    line: int
    name: str
    struct: str = ""   # struct tag for a member
    func: str = ""     # function for a local or a parameter
    array: bool = False
    pointer: bool = False
    init: str = ""     # count given in the declaration (DEFINE_SEMAPHORE, initializer)
    init_form: str = ""


@dataclass(frozen=True)
class Op:
    """One call of the semaphore API as the census sees it."""
    path: str
    line: int
    op: str
    expr: str          # the first argument, whitespace removed
    func: str          # enclosing function ("" at file scope)
    args: tuple[str, ...] = ()
    target: str = ""   # semaphore id, pointer id, or "" when unresolved
    via: str = ""      # direct | pointer | ambiguous | unresolved
    candidates: tuple[str, ...] = ()
    note: str = ""


@dataclass
class Census:
    root: Path
    files: list[str] = field(default_factory=list)
    sems: dict[str, Decl] = field(default_factory=dict)
    pointers: dict[str, Decl] = field(default_factory=dict)
    ops: list[Op] = field(default_factory=list)
    defines: dict[str, dict[str, str]] = field(default_factory=dict)  # path -> macro -> value
    scopes: dict[str, "FileScopes"] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    includes: dict[str, set[str]] = field(default_factory=dict)
    hints: dict[tuple[str, int, str], str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    funcs: dict[str, set[str]] = field(default_factory=dict)


def subsystem(path: str) -> str:
    parts = path.split("/")
    if len(parts) > 2 and path.startswith(_SUBSYS_TWO):
        return "/".join(parts[:2])
    return parts[0] if len(parts) > 1 else "."


# ---------------------------------------------------------------- prefilter

def candidate_files(root: Path) -> list[str]:
    """Files (relative paths) that can declare or use a semaphore."""
    root = Path(root)
    if root.is_file():
        return [root.name]
    if (root / ".git").exists():
        cmd = ["git", "-C", str(root), "grep", "-l", "-I", "-P", PREFILTER, "--",
               "*.c", "*.h"] + [f":!{p.rstrip('/')}" for p in EXCLUDE_PREFIXES]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode in (0, 1):
            files = res.stdout.split()
        else:  # not a usable git tree (e.g. a bare copy): walk it
            log.warning("git grep failed in %s, walking the tree", root)
            files = _walk_grep(root)
    else:
        files = _walk_grep(root)
    return sorted(f for f in files
                  if not f.startswith(EXCLUDE_PREFIXES) and f not in EXCLUDE_FILES)


def _walk_grep(root: Path) -> list[str]:
    """What `git grep -l -I` finds in a tree that is not a git repository: symlinks
    (a git tree records them as links, not files) and binary files are skipped."""
    rx = re.compile(PREFILTER)
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for fn in filenames:
            full = os.path.join(dirpath, fn)
            if not fn.endswith((".c", ".h")) or os.path.islink(full):
                continue
            try:
                with open(full, "rb") as fh:
                    data = fh.read()
            except OSError as err:
                log.warning("%s: %s", full, err)
                continue
            if b"\0" not in data[:8000] and rx.search(data.decode(errors="replace")):
                out.append(os.path.relpath(full, root))
    return out


# ---------------------------------------------------------------- C scanning

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
_ENUM_RX = re.compile(r"\benum\b[^=]*$")
_FUNC_TAIL_RX = re.compile(r"\)\s*(?:\w+(?:\([^()]*\))?\s*){0,4}$")


def scan_scopes(clean: str) -> FileScopes:
    line_starts = [0] + [m.end() for m in re.finditer(r"\n", clean)]
    scopes: list[Scope] = []
    stack: list[int] = []
    func_depth = 0  # open function scopes on the stack
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
                if nm and nm.group(1) not in _KEYWORDS and not re.search(r"\b__\w+$", before):
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


# ---------------------------------------------------------------- declarations

_DECL_RX = re.compile(r"\bstruct\s+semaphore\b(?!\s*;)")
_DEFSEM_RX = re.compile(r"\bDEFINE_SEMAPHORE\s*\(\s*(\w+)\s*(?:,\s*([^()]*(?:\([^()]*\)[^()]*)*))?\)")
_INITZ_RX = re.compile(r"__SEMAPHORE_INITIALIZER\s*\(\s*([^,()]+)\s*,\s*([^()]*(?:\([^()]*\)[^()]*)*)\)")


_DECLARATOR_RX = re.compile(
    r"\s*(\*+\s*(?:const\s+|__rcu\s+)?)?(\w+)\s*((?:\[[^\]]*\]\s*)*)(\(?)"
    r"(?:=\s*(?:\{\s*)?(__SEMAPHORE_INITIALIZER\s*\(\s*[^,]*,\s*([^)]*)\)))?")


def _skip_to_comma(rest: str, i: int) -> int:
    """Offset after the "," that starts the next declarator, or -1 at ";" / ")"."""
    depth = 0
    while i < len(rest):
        c = rest[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return -1
            depth -= 1
        elif c == ";" and depth == 0:
            return -1
        elif c == "," and depth == 0:
            return i + 1
        i += 1
    return -1


def _paren_depth(clean: str, start: int, pos: int) -> int:
    seg = clean[start:pos]
    return seg.count("(") - seg.count(")")


def scan_declarations(path: str, clean: str, fs: FileScopes) -> list[Decl]:
    out: list[Decl] = []
    for m in _DECL_RX.finditer(clean):
        rest = clean[m.end():m.end() + 400]
        # declarators: "*a", "b[4]", "c = __SEMAPHORE_INITIALIZER(c, 1)", separated by ","
        pos_scope = fs.innermost(m.start())
        scope = fs.scopes[pos_scope] if pos_scope >= 0 else None
        stmt_start = max(clean.rfind(";", 0, m.start()), clean.rfind("{", 0, m.start()),
                         clean.rfind("}", 0, m.start())) + 1
        in_parens = _paren_depth(clean, stmt_start, m.start()) > 0
        prefix = clean[stmt_start:m.start()]
        off = 0
        while True:
            dm = _DECLARATOR_RX.match(rest, off)
            if not dm:
                break
            pointer = bool(dm.group(1))
            name, arr = dm.group(2), bool(dm.group(3))
            if dm.group(4) == "(" or name in ("const", "volatile"):
                break  # a function returning a semaphore pointer, or a cast
            line = fs.line_of(m.start())
            init = (dm.group(6) or "").strip()
            form = "__SEMAPHORE_INITIALIZER" if init else ""
            if in_parens:
                if pointer and "sizeof" not in prefix:
                    func = _func_after(clean, fs, m.start())
                    out.append(Decl(f"{path}:{func}().{name}", "param", path, line, name,
                                    func=func, pointer=True))
                break
            if scope is not None and scope.kind == "struct":
                out.append(Decl(f"{path}:{scope.name}.{name}", "member", path, line, name,
                                struct=scope.name, array=arr, pointer=pointer,
                                init=init, init_form=form))
            elif scope is None or (scope.kind == "other" and not fs.function_at(m.start())[0]):
                if re.search(r"\bextern\b", prefix):
                    al = re.match(r"\s*__alias\s*\(\s*(\w+)\s*\)", rest[dm.end():])
                    if al:  # extern struct semaphore a __alias(b): a is b
                        out.append(Decl(f"{path}:{name}", "alias", path, line, name,
                                        init=al.group(1)))
                    break
                kind = "static" if re.search(r"\bstatic\b", prefix) else "global"
                out.append(Decl(f"{path}:{name}", kind, path, line, name, array=arr,
                                pointer=pointer, init=init, init_form=form))
            else:
                func = fs.function_at(m.start())[0]
                kind = "static" if re.search(r"\bstatic\b", prefix) else "local"
                out.append(Decl(f"{path}:{func}().{name}", kind, path, line, name, func=func,
                                array=arr, pointer=pointer, init=init, init_form=form))
            # skip to the next declarator of the same declaration, if any
            tail = _skip_to_comma(rest, dm.end())
            if tail < 0:
                break
            off = tail
    for m in _DEFSEM_RX.finditer(clean):
        name, count = m.group(1), (m.group(2) or "").strip() or "1"
        line = fs.line_of(m.start())
        func = fs.function_at(m.start())[0]
        ident = f"{path}:{func}().{name}" if func else f"{path}:{name}"
        stmt_start = max(clean.rfind(";", 0, m.start()), clean.rfind("}", 0, m.start()),
                         clean.rfind("{", 0, m.start())) + 1
        kind = "static" if re.search(r"\bstatic\b", clean[stmt_start:m.start()]) else (
            "local" if func else "global")
        out.append(Decl(ident, kind, path, line, name, func=func, init=count,
                        init_form="DEFINE_SEMAPHORE"))
    return out


def _func_after(clean: str, fs: FileScopes, pos: int) -> str:
    """Name of the function whose parameter list contains pos (definition or prototype)."""
    stmt_start = max(clean.rfind(";", 0, pos), clean.rfind("}", 0, pos),
                     clean.rfind("{", 0, pos)) + 1
    m = None
    for m in re.finditer(r"(\w+)\s*\(", clean[stmt_start:pos]):
        pass
    return m.group(1) if m else "?"


# ---------------------------------------------------------------- operations

_OP_RX = re.compile(r"(?<![\w.>])(" + "|".join(OPS) + r")\s*\(")


def split_args(clean: str, open_paren: int) -> tuple[list[str], int]:
    depth, i, start, args = 0, open_paren, open_paren + 1, []
    n = len(clean)
    while i < n:
        c = clean[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(clean[start:i])
                return [re.sub(r"\s+", "", a) for a in args], i
        elif c == "," and depth == 1:
            args.append(clean[start:i])
            start = i + 1
        i += 1
    return [], n


_OWN_RX = re.compile(r"^[ \t]*\w[\w \t*]*?\b(" + "|".join(OPS) + r")[ \t]*\([^;{}()]*\)\s*\{",
                     re.M)


def scan_ops(path: str, clean: str, fs: FileScopes,
             with_macros: str = "", macros: list[tuple[int, int, str]] | None = None,
             ) -> list[tuple[Op, int]]:
    """Semaphore API calls; with_macros (the text cleaned with macro bodies kept)
    also finds calls inside #define bodies, attributed to "macro NAME"."""
    # a file that defines its own up()/down() does not call the semaphore API
    own = {m.group(1) for m in _OWN_RX.finditer(clean)}
    out = []
    scan = with_macros or clean
    for m in _OP_RX.finditer(scan):
        name = m.group(1)
        if name in own:
            continue
        before = scan[max(0, m.start() - 40):m.start()]
        if re.search(r"(?:\bvoid|\bint|\blong|\bstatic|\binline|\*|#\s*define)\s*$", before):
            continue  # a prototype or definition of a same-named function
        args, _ = split_args(scan, m.end() - 1)
        if not args or not args[0]:
            continue
        func, _ = fs.function_at(m.start())
        for start, end, mname in macros or ():
            if start <= m.start() < end:
                func = f"macro {mname}"
                break
        out.append((Op(path, fs.line_of(m.start()), name, args[0], func, tuple(args)), m.start()))
    return out


# ---------------------------------------------------------------- resolution

def strip_expr(e: str) -> str:
    e = re.sub(r"\s+", "", e)
    changed = True
    while changed:
        changed = False
        if e.startswith("(") and _balanced_outer(e):
            e, changed = e[1:-1], True
        cm = re.match(r"\((?:struct)?semaphore\*\)|\(structsemaphore\*\)", e)
        if cm:
            e, changed = e[cm.end():], True
    return e


def _split_ternary(e: str) -> list[str]:
    depth, q = 0, -1
    for i, c in enumerate(e):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "?" and depth == 0 and q < 0:
            q = i
        elif c == ":" and depth == 0 and q >= 0:
            return [e[q + 1:i], e[i + 1:]]
    return []


def _balanced_outer(e: str) -> bool:
    depth = 0
    for i, c in enumerate(e):
        depth += c == "("
        depth -= c == ")"
        if depth == 0 and i < len(e) - 1:
            return False
    return e.endswith(")")


def last_name(e: str) -> tuple[str, str, bool]:
    """(base, last member or identifier, indexed) of an lvalue like a->b.c[i]."""
    e = re.sub(r"\[[^\[\]]*\]", "[]", e)
    e = re.sub(r"\[[^\[\]]*\]", "[]", e)
    indexed = e.endswith("[]")
    e2 = e.rstrip("[]") if indexed else e
    e2 = re.sub(r"\[\]$", "", e2)
    parts = re.split(r"->|\.", e2)
    return (parts[0] if len(parts) > 1 else ""), parts[-1], indexed


class Resolver:
    """Maps an operation's argument to a census identity."""

    def __init__(self, census: Census):
        self.census = census
        self.members: dict[str, list[Decl]] = {}
        self.by_struct: dict[tuple[str, str], list[Decl]] = {}
        self.globals: dict[str, list[Decl]] = {}
        self.locals: dict[tuple[str, str, str], Decl] = {}
        self.file_vars: dict[tuple[str, str], Decl] = {}
        for d in list(census.sems.values()) + list(census.pointers.values()):
            if d.kind == "member":
                self.members.setdefault(d.name, []).append(d)
                self.by_struct.setdefault((d.struct.split(".")[-1], d.name), []).append(d)
                self.by_struct.setdefault((d.struct, d.name), []).append(d)
            elif d.kind in ("local", "param") or (d.kind == "static" and d.func):
                self.locals[(d.path, d.func, d.name)] = d
            else:
                self.file_vars[(d.path, d.name)] = d
                if d.kind == "global":
                    self.globals.setdefault(d.name, []).append(d)
        self.includes: dict[str, set[str]] = {}

    def _included(self, path: str) -> set[str]:
        return self.census.includes.get(path, set())

    def _visible(self, path: str, decl_path: str) -> bool:
        if decl_path == path:
            return True
        inc = self._included(path)
        if decl_path in inc:
            return True
        m = re.match(r"arch/[^/]+/include/(asm/.+)$", decl_path)
        return bool(m and "asm:" + m.group(1)[4:] in inc)

    def _struct_of(self, path: str, func_start: int, pos: int, base: str) -> str:
        """The struct tag of a variable named base, found at scan time."""
        return self.census.hints.get((path, pos, base), "")  # pos is the line

    def resolve(self, path: str, func: str, expr: str, pos: int = -1,
                func_start: int = -1, strict: bool = False,
                ) -> tuple[str, str, tuple[str, ...], str]:
        """(target id, via, candidates, note).  strict: the expression need not be a
        semaphore (an argument of any function), so a member is only taken when its
        struct is known and matches, or its declaration is visible from path."""
        e = strip_expr(expr)
        tern = _split_ternary(e)
        if tern:
            targets = []
            for branch in tern:
                t, v, c, _ = self.resolve(path, func, branch, pos, func_start)
                targets += [t] if t else list(c)
            return "", "ambiguous", tuple(sorted(set(targets))), \
                f"conditional argument `{expr}`"
        addr = e.startswith("&")
        if addr:
            e = strip_expr(e[1:])
        e = re.sub(r"^\*\(?", "", e) if not addr and e.startswith("*") else e
        base, name, indexed = last_name(e)
        if not re.fullmatch(r"\w+", name or ""):
            return "", "unresolved", (), f"argument `{expr}` is not a plain lvalue"
        if not base:
            name = self.census.aliases.get(name, name)
            d = self.locals.get((path, func, name)) or self.file_vars.get((path, name))
            if d is None:
                cands = self.globals.get(name, [])
                if len(cands) == 1:
                    d = cands[0]
                elif cands:
                    return "", "ambiguous", tuple(sorted(c.id for c in cands)), \
                        f"several globals named {name}"
            if d is None and name in self.census.aliases.values():
                same = [x for (pth, nm), x in self.file_vars.items() if nm == name]
                d = same[0] if len(same) == 1 else None
            if d is None:
                return "", "unresolved", (), f"no struct semaphore named `{name}` in scope"
            if d.pointer and not addr:
                return d.id, "pointer", (), ""
            if not addr and not d.array:
                return "", "unresolved", (), f"`{name}` used without &"
            return d.id, "direct", (), "array element" if indexed else ""
        cands = self.members.get(name, [])
        # a member of a nested struct (tag.sub.name) is only reached through .sub
        path_expr = "." + re.sub(r"->", ".", re.sub(r"\[[^\]]*\]", "", e))
        cands = [c for c in cands if "." not in c.struct or "anon@" in c.struct
                 or path_expr.endswith("." + ".".join(c.struct.split(".")[1:] + [name]))]
        if not cands:
            return "", "unresolved", (), f"no struct member `{name}` is a struct semaphore"
        tag = ""
        if re.fullmatch(r"\w+", base) and pos >= 0:
            tag = self._struct_of(path, func_start, pos, base)
        chosen: list[Decl] = []
        if tag:
            chosen = [c for c in cands if c.struct == tag or c.struct.endswith("." + tag)
                      or c.struct.split(".")[0] == tag]
            if len(chosen) > 1:
                vis = [c for c in chosen if self._visible(path, c.path)]
                chosen = vis or chosen
        if strict:
            if tag:
                chosen = [c for c in chosen if self._visible(path, c.path)
                          or os.path.dirname(c.path) == os.path.dirname(path)]
            else:
                chosen = [c for c in cands if self._visible(path, c.path)]
            if len(chosen) != 1:
                return "", "unresolved", (), "not known to be a semaphore"
        if not chosen:
            if len(cands) == 1:
                chosen = cands
            else:
                vis = [c for c in cands if self._visible(path, c.path)]
                chosen = vis if vis else []
        if len(chosen) != 1:
            pool = chosen or cands
            here = os.path.dirname(path)
            near = [c for c in pool if os.path.dirname(c.path) == here]
            if len(near) == 1:
                chosen = near
        if len(chosen) != 1:
            return "", "ambiguous", tuple(sorted(c.id for c in pool)), \
                f"member `{name}` of {len(pool)} structs"
        d = chosen[0]
        if d.pointer:
            return d.id, ("pointer" if not addr else "pointer-address"), (), ""
        if not addr and not d.array:
            return "", "unresolved", (), f"`{e}` used without &"
        return d.id, "direct", (), "array element" if indexed else ""


# ---------------------------------------------------------------- the census

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


def _struct_hint(clean: str, func_start: int, pos: int, base: str) -> str:
    lo = max(0, func_start - 2000) if func_start >= 0 else 0
    found = re.findall(r"\bstruct\s+(\w+)\s*\*?\s*(?:const\s+)?\b" + re.escape(base)
                       + r"\b\s*[,;=)\[]", clean[lo:pos])
    return found[-1] if found else ""


def scan_file(rel: str, text: str) -> dict:
    """Everything the census needs from one file, as plain JSON-able data."""
    clean = clean_source(text)
    fs = scan_scopes(clean)
    decls = scan_declarations(rel, clean, fs)
    ops = []
    for op, pos in scan_ops(rel, clean, fs, clean_source(text, keep_macro_bodies=True),
                            macro_spans(text)):
        _, fstart = fs.function_at(pos)
        base, _, _ = last_name(strip_expr(op.expr).lstrip("&"))
        hint = _struct_hint(clean, fstart, pos, base) if re.fullmatch(r"\w+", base) else ""
        ops.append({"line": op.line, "op": op.op, "expr": op.expr, "func": op.func,
                    "args": list(op.args), "base": base, "hint": hint})
    decl_lines = {d.line for d in decls if d.init}
    for m in re.finditer(r"\b__SEMAPHORE_INITIALIZER\s*\(", clean):
        line = fs.line_of(m.start())
        if line in decl_lines:
            continue
        args, _ = split_args(clean, m.end() - 1)
        if len(args) < 2:
            continue
        func, fstart = fs.function_at(m.start())
        expr = "&" + args[0]
        base, _, _ = last_name(strip_expr(args[0]))
        hint = _struct_hint(clean, fstart, m.start(), base) if re.fullmatch(r"\w+", base) else ""
        ops.append({"line": line, "op": "__SEMAPHORE_INITIALIZER", "expr": expr, "func": func,
                    "args": [expr, args[1]], "base": base, "hint": hint})
    macros = object_macros(text)
    counts = {o["args"][1] for o in ops
              if o["op"] in ("sema_init", "__SEMAPHORE_INITIALIZER") and len(o["args"]) > 1}
    counts |= {d.init for d in decls if d.init}
    used = {k: v for k, v in macros.items()
            if len(v) < 80 and re.fullmatch(r"[\w\s()+\-*/<>|&]+", v)}
    return {"decls": [d.__dict__ for d in decls], "ops": ops, "defines": used,
            "includes": file_includes(rel, text),
            "funcs": sorted({sc.name for sc in fs.scopes if sc.kind == "func"})}


def _short_local_ids(census: Census) -> None:
    """Function-scope semaphores are `path:name` like file-scope ones; only when
    a file has two of the same name is the function added: `path:name@func`."""
    import dataclasses
    for table in (census.sems, census.pointers):
        seen: dict[tuple[str, str], int] = {}
        for d in list(census.sems.values()) + list(census.pointers.values()):
            if d.kind != "member":
                seen[(d.path, d.name)] = seen.get((d.path, d.name), 0) + 1
        for old, d in list(table.items()):
            if not d.func:
                continue
            new = f"{d.path}:{d.name}"
            if seen[(d.path, d.name)] > 1:
                new += f"@{d.func}"
            del table[old]
            table[new] = dataclasses.replace(d, id=new)


def take_census(root: Path, files: list[str] | None = None,
                cache: "object | None" = None) -> Census:
    """The census of root (a tree, or a single file).  cache, when given, has
    get(key) / put(key, value) and is keyed by the file content."""
    import hashlib
    import json
    root = Path(root)
    if files is None:
        files = candidate_files(root)
    census = Census(root=root, files=list(files))
    raw_ops = []
    for rel in files:
        try:
            text = read_text(root, rel)
        except OSError as err:
            log.warning("%s: %s", rel, err)
            continue
        census.texts[rel] = text
        key = "census-" + hashlib.sha256((CENSUS_VERSION + rel + "\0" + text).encode(
            "utf-8", "surrogateescape")).hexdigest()
        scan = cache.get(key) if cache is not None else None
        if scan is None:
            scan = scan_file(rel, text)
            if cache is not None:
                cache.put(key, scan)
        census.defines[rel] = scan["defines"]
        census.includes[rel] = set(scan["includes"])
        census.funcs[rel] = set(scan["funcs"])
        for dd in scan["decls"]:
            d = Decl(**dd)
            if d.kind == "alias":
                census.aliases[d.name] = d.init
                continue
            target = census.pointers if d.pointer else census.sems
            target.setdefault(d.id, d)
        for o in scan["ops"]:
            census.hints[(rel, o["line"], o["base"])] = o["hint"]
            raw_ops.append((rel, o))
    _short_local_ids(census)
    res = Resolver(census)
    census.resolver = res  # type: ignore[attr-defined]
    for rel, o in raw_ops:
        target, via, cands, note = res.resolve(rel, o["func"], o["expr"], o["line"])
        census.ops.append(Op(rel, o["line"], o["op"], o["expr"], o["func"],
                             tuple(o["args"]), target, via, cands, note))
    census.ops.sort(key=lambda o: (o.path, o.line, o.op, o.expr))
    return census
