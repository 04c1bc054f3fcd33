"""Which architectures can build a file x86_64 allmodconfig leaves out.

Read from the tree, without building: a file under arch/<dir>/ belongs to the
architectures that descend there; otherwise each CONFIG_ symbol that puts its
object into the build and is off on x86_64 is followed through Kconfig:

- a symbol defined under arch/<dir>/ (ARM, PPC32, AMIGA, SGI_IP32, ARCH_TEGRA in
  both arch/arm and arch/arm64) can be set only by those architectures;
- any other symbol can be set where its `depends on` lines hold, the `if`
  blocks around it and around the `source` line of its file included; a symbol
  with no prompt where one of its `default` expressions holds (PARPORT_GSC:
  `default GSC`), or, with no default either, where a `select` sets it;
- && intersects, || unites; `!64BIT` is the 32-bit architectures; BROKEN
  none at all; anything else (COMPILE_TEST, a comparison) says nothing.

The result is a list of candidates in the order of classify.arches.ARCHES; the
build tries them in turn and keeps the first whose allmodconfig enables the file
(kbuild.not_enabled there), so a candidate that is wrong costs a check, never a
wrong verdict.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from classify.arches import ARCHES, NATIVE, arches_of_dir, arches_of_path
from classify.kconfig import _joined, config_symbols

ANY = None                  # the expression does not restrict the architecture
_TOKEN = re.compile(r'\s*(&&|\|\||!=|[!()=<>]|"[^"]*"|[A-Za-z0-9_]+)')
_STOP = re.compile(r"^\s*(?:(?:menu)?config|choice|endchoice|menu|endmenu|if|endif|source|"
                   r"comment)\b", re.M)
_PROMPT = re.compile(r'^\s*(?:bool|tristate|string|int|hex|prompt)\s+"', re.M)
NEVER_SYMBOLS = {"BROKEN"}
# the pseudo-symbol of a Kconfig file sourced from arch/<dir>/
ARCH_DIR = "S2M_ARCH_DIR_"


def _and(a, b):
    if a is ANY:
        return b
    return a if b is ANY else a & b


def _or(a, b):
    return ANY if a is ANY or b is ANY else a | b


class KconfigArches:
    """The architectures that can set each Kconfig symbol of one tree; built on
    one `git grep` of every definition, memoised per symbol and per file."""

    def __init__(self, tree: Path):
        self.tree = tree
        self.defs: dict[str, list[tuple[str, int]]] = {}
        res = subprocess.run(["git", "-C", str(tree), "grep", "-n", "-E",
                              r"^\s*(menu)?config\s+[A-Za-z0-9_]+\s*$", "--", "*Kconfig*"],
                             capture_output=True, text=True)
        for hit in res.stdout.splitlines():
            path, line, text = hit.split(":", 2)
            self.defs.setdefault(text.split()[1], []).append((path, int(line)))
        self._memo: dict[str, frozenset | None] = {}
        self._files: dict[str, list[str]] = {}
        self._sourced: dict[str, str] = {}

    # -------------------------------------------------------------- reading

    def _lines(self, path: str) -> list[str]:
        if path not in self._files:
            self._files[path] = (self.tree / path).read_text(errors="replace").splitlines()
        return self._files[path]

    def _block(self, path: str, line: int) -> str:
        text = _joined("\n".join(self._lines(path)[line:]))
        return _STOP.split(text, maxsplit=1)[0]

    def _enclosing_ifs(self, path: str, line: int) -> list[str]:
        """The conditions of the `if` blocks of path that contain line."""
        out, depth = [], 0
        for text in reversed(self._lines(path)[:line - 1]):
            word = text.split()[0] if text.split() else ""
            if word == "endif":
                depth += 1
            elif word == "if" and depth:
                depth -= 1
            elif word == "if":
                out.append(text.strip()[3:].strip())
        return out

    def _sourced_if(self, path: str) -> list[str]:
        """The conditions of the `if` blocks around the `source` line of path."""
        if path not in self._sourced:
            res = subprocess.run(["git", "-C", str(self.tree), "grep", "-n", "-F",
                                  f'source "{path}"', "--", "*Kconfig*"],
                                 capture_output=True, text=True)
            self._sourced[path] = ""                # a cycle says nothing
            ways = []
            for hit in res.stdout.splitlines():
                src, line = hit.split(":")[:2]
                conds = self._enclosing_ifs(src, int(line)) + self._sourced_if(src)
                if src.startswith("arch/"):         # read by that arch's Kconfig only
                    conds.append(ARCH_DIR + Path(src).parts[1])
                ways.append(" && ".join(f"({c})" for c in conds))
            # read from several places: where any of them is
            self._sourced[path] = "" if not ways or "" in ways else \
                " || ".join(f"({w})" for w in ways)
        return [self._sourced[path]] if self._sourced[path] else []

    def _selected_by(self, sym: str) -> frozenset | None:
        """Where a symbol without prompt nor default can be set: nowhere when
        nothing selects it, the architectures of the arch/ Kconfig files that do
        when only those do, else ANY."""
        res = subprocess.run(["git", "-C", str(self.tree), "grep", "-l", "-E",
                              rf"^\s*(select|imply)\s+{sym}\b", "--", "*Kconfig*"],
                             capture_output=True, text=True)
        files = res.stdout.split()
        if not all(f.startswith("arch/") for f in files):
            return ANY
        return frozenset(a.name for f in files for a in arches_of_dir(Path(f).parts[1]))

    def in_choice(self, sym: str) -> bool:
        """Whether sym is an entry of a `choice` block (allmodconfig takes one
        entry of each choice, so the others need forcing)."""
        for path, line in self.defs.get(sym.removeprefix("CONFIG_"), []):
            depth = 0
            for text in self._lines(path)[:line - 1]:
                word = text.split()[0] if text.split() else ""
                depth += {"choice": 1, "endchoice": -1}.get(word, 0)
            if depth > 0:
                return True
        return False

    # -------------------------------------------------------------- meaning

    def of_symbol(self, sym: str) -> frozenset | None:
        """The architectures that can set sym (CONFIG_ prefix optional); ANY when
        Kconfig does not restrict it, frozenset() when none can (BROKEN)."""
        sym = sym.removeprefix("CONFIG_")
        if sym in NEVER_SYMBOLS:
            return frozenset()
        if sym not in self._memo:
            self._memo[sym] = ANY                     # a cycle says nothing
            result: frozenset | None = frozenset()
            for path, line in self.defs.get(sym, []):
                result = _or(result, self._of_entry(sym, path, line))
            self._memo[sym] = result if self.defs.get(sym) else ANY
        return self._memo[sym]

    def _of_entry(self, sym: str, path: str, line: int) -> frozenset | None:
        parts = Path(path).parts
        block = self._block(path, line)
        if parts[0] == "arch" and len(parts) > 2:
            here = frozenset(a.name for a in arches_of_dir(parts[1]))
            if _PROMPT.search(block) or re.search(r"^\s*(def_bool|def_tristate|default)\s",
                                                  block, re.M):
                return here
            return here & (self._selected_by(sym) or frozenset())   # a bare `bool`
        conds = re.findall(r"^\s*depends\s+on\s+(.+)$", block, re.M)
        conds += self._enclosing_ifs(path, line) + self._sourced_if(path)
        if not _PROMPT.search(block):
            defaults = [self._default(d) for d in
                        re.findall(r"^\s*(?:def_bool|def_tristate|default)\s+(.+)$", block, re.M)]
            if defaults:
                conds.append(" || ".join(f"({d})" for d in defaults))
            else:
                selected = self._selected_by(sym)
                return _and(selected, self.of_expr(" && ".join(f"({c})" for c in conds)))
        return self.of_expr(" && ".join(f"({c})" for c in conds)) if conds else ANY

    @staticmethod
    def _default(text: str) -> str:
        value, _, cond = text.partition(" if ")
        value = value.strip()
        value = "ANY_VALUE" if value in ("y", "m") or value.startswith('"') else value
        return f"{value} && ({cond})" if cond.strip() else value

    def of_expr(self, expr: str) -> frozenset | None:
        """The architectures under which a `depends on` expression can hold."""
        tokens = _TOKEN.findall(re.sub(r"#.*", "", expr))
        if not tokens:
            return ANY
        value, _ = self._or_expr(tokens, 0)
        return value

    def _or_expr(self, t: list[str], i: int):
        value, i = self._and_expr(t, i)
        while i < len(t) and t[i] == "||":
            right, i = self._and_expr(t, i + 1)
            value = _or(value, right)
        return value, i

    def _and_expr(self, t: list[str], i: int):
        value, i = self._unary(t, i)
        while i < len(t) and t[i] == "&&":
            right, i = self._unary(t, i + 1)
            value = _and(value, right)
        return value, i

    def _unary(self, t: list[str], i: int):
        if i >= len(t):
            return ANY, i
        if t[i] == "!":
            if i + 1 < len(t) and t[i + 1] == "64BIT":
                return frozenset(a.name for a in ARCHES.values() if a.bits == 32), i + 2
            _, i = self._unary(t, i + 1)
            return ANY, i
        if t[i] == "(":
            value, i = self._or_expr(t, i + 1)
            return value, i + (1 if i < len(t) and t[i] == ")" else 0)
        if i + 2 < len(t) and t[i + 1] in ("=", "!=", "<", ">"):
            return ANY, i + 3
        if t[i] in ("y", "m", "ANY_VALUE") or t[i].startswith('"'):
            return ANY, i + 1
        if t[i] == "n":
            return frozenset(), i + 1
        if t[i].startswith(ARCH_DIR):
            return frozenset(a.name for a in arches_of_dir(t[i][len(ARCH_DIR):])), i + 1
        return self.of_symbol(t[i]), i + 1


def candidates(index: KconfigArches, rel: str, values: dict[str, str]) -> list[str]:
    """The architectures, other than x86_64, whose configuration can build rel,
    in the order of ARCHES; [] when the tree says nothing of one (then x86_64's
    reason stands).  values: x86_64's .config, whose enabled symbols say nothing."""
    parts = Path(rel).parts
    allowed: frozenset | None = ANY
    if parts[0] == "arch" and len(parts) > 2:
        allowed = frozenset(a.name for a in arches_of_path(rel))
    else:
        for sym in config_symbols(index.tree, rel):
            if values.get(sym, "n") not in ("y", "m"):
                allowed = _and(allowed, index.of_symbol(sym))
    if allowed is ANY:
        return []
    return [name for name in ARCHES if name in allowed and name != NATIVE.name]
