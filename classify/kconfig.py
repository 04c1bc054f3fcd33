"""Reading Kconfig and kbuild Makefiles, without building: the CONFIG_ symbols
that put a file's object into the build, a symbol's Kconfig entry and its
`depends on`, and whether a Kconfig expression holds in a .config.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

def _joined(text: str) -> str:
    return re.sub(r"\\\n", " ", text)


def kbuild_text(tree: Path, directory: Path) -> str:
    """A directory's Kbuild and Makefile (kbuild reads the first; an arch's
    Makefile names directories too), with the files they include by a path
    from the tree's top (arch/mips/Kbuild includes arch/mips/Kbuild.platforms);
    "" when there is none."""
    text = ""
    for name in ("Kbuild", "Makefile"):
        try:
            text += _joined((tree / directory / name).read_text(errors="replace")) + "\n"
        except OSError:
            continue
    for inc in re.findall(r"^\s*-?include\s+(\S+)\s*$", text, re.M):
        inc = inc.removeprefix("$(srctree)/")
        if "$" not in inc and (tree / inc).is_file():
            text += "\n" + _joined((tree / inc).read_text(errors="replace"))
    return text


def kbuild_object(tree: Path, rel: str) -> str:
    """The make target of rel's object: <dir>/<file>.o, unless rel's directory
    Makefile is only a fragment (no obj- line) that a sibling directory's Makefile
    (or an ancestor's sibling) includes and builds with its own flags (amdgpu's
    `AMDKFD_PATH := ../amdkfd`): then <sibling>/../<dir>/<file>.o, which kbuild
    compiles with the sibling's -I options; `make <dir>/<file>.o` would not find
    the headers they name."""
    obj = rel[:-2] + ".o"
    here = Path(rel).parent
    fragment = kbuild_text(tree, here)
    if not fragment.strip() or re.search(r"^\s*obj-", fragment, re.M):
        return obj
    # amd/display/dc/core is built from amd/amdgpu too (`../display`): look for
    # the sibling at each level up
    for level in (here, *here.parents[:-1]):
        relative = re.compile(rf"\.\./{re.escape(level.name)}\b")
        for sibling in sorted((tree / level.parent).iterdir()):
            if sibling.name != level.name and sibling.is_dir() \
                    and relative.search(kbuild_text(tree, sibling.relative_to(tree))):
                return f"{level.parent}/{sibling.name}/../{Path(obj).relative_to(level.parent)}"
    return obj


def config_symbols(tree: Path, rel: str, depth: int = 6) -> list[str]:
    """The CONFIG_ symbols that put rel's object into the build, read from the
    Makefiles: the object's line, the composite object it is part of, then the
    line of each parent directory that descends into its directory (by obj-
    or by a list such as platform-$(CONFIG_X) += dir/)."""
    directory, want = Path(rel).parent, Path(rel).stem + ".o"
    out: list[str] = []
    for _ in range(depth):
        text = kbuild_text(tree, directory)
        if not text:
            break
        line = None
        for m in re.finditer(r"^\s*([\w-]+?)-(\$\(CONFIG_(\w+)\)|y|m|objs)\s*[:+]?=(.*)$",
                             text, re.M):
            # a directory may be named from the tree's top (arch/arm/Makefile:
            # core-$(CONFIG_XEN) += arch/arm/xen/)
            names = [want] + ([f"{directory}/{want}"] if want.endswith("/") else [])
            if any(re.search(rf"(?:^|\s){re.escape(n)}(?:\s|$)", m.group(4)) for n in names):
                line = m
                break
        if line is None:
            break
        if line.group(3):
            out.append(f"CONFIG_{line.group(3)}")
        if line.group(1) != "obj" and not want.endswith("/"):
            want = line.group(1) + ".o"     # part of a composite object
            continue
        if str(directory) in (".", ""):
            break
        want, directory = directory.name + "/", directory.parent
    return list(dict.fromkeys(out))


def kconfig_depends(tree: Path, sym: str, near: str = ""
                    ) -> tuple[str, list[str]] | None:
    """(the Kconfig file, the `depends on` expressions) of `config SYM` (CONFIG_
    prefix optional), looked for in the Kconfig files of near's directory and its
    parents first, then anywhere in the tree (git grep); None when no entry
    defines it."""
    name = sym.removeprefix("CONFIG_")
    entry = re.compile(rf"^\s*(?:menu)?config\s+{re.escape(name)}\s*$", re.M)
    files: list[Path] = []
    d = Path(near).parent if near else None
    while d is not None:
        files += sorted((tree / d).glob("Kconfig*"))
        d = None if str(d) in (".", "") else d.parent
    res = subprocess.run(["git", "-C", str(tree), "grep", "-l", "-E",
                          rf"^\s*(menu)?config\s+{name}\s*$", "--", "*Kconfig*"],
                         capture_output=True, text=True)
    files += [tree / f for f in res.stdout.split()] if res.returncode == 0 else []
    for f in dict.fromkeys(files):
        try:
            text = _joined(f.read_text(errors="replace"))
        except OSError:
            continue
        m = entry.search(text)
        if not m:
            continue
        block = re.split(r"^\s*(?:(?:menu)?config|choice|endchoice|menu|endmenu|if|endif|"
                         r"source|comment)\b", text[m.end():], maxsplit=1, flags=re.M)[0]
        return (str(f.relative_to(tree)),
                [d.strip() for d in re.findall(r"^\s*depends\s+on\s+(.+)$", block, re.M)])
    return None


def kconfig_true(expr: str, values: dict[str, str]) -> bool | None:
    """A Kconfig expression of symbols, !, &&, || and parentheses against a
    .config (y and m are true); None for anything else (=, !=, strings)."""
    if re.search(r"!=|[=<>\"']", expr):
        return None
    py = re.sub(r"\b([A-Za-z0-9_]+)\b",
                lambda m: " True " if values.get(f"CONFIG_{m.group(1)}", "n") in ("y", "m")
                else " False ", expr)
    py = py.replace("&&", " and ").replace("||", " or ").replace("!", " not ")
    if not re.fullmatch(r"[\s()]*(?:(?:True|False|and|or|not)[\s()]*)+", py):
        return None
    try:
        return bool(eval(py, {"__builtins__": {}}))   # only True/False/and/or/not left
    except SyntaxError:
        return None


def unmet_depends(exprs: list[str], values: dict[str, str]) -> list[str]:
    """What of `depends on` exprs the configuration does not meet: the symbols
    of a plain A && B chain that are not y/m, else each expression that is not
    true (or cannot be evaluated here)."""
    out: list[str] = []
    for expr in exprs:
        terms = [t.strip() for t in expr.split("&&")]
        if all(re.fullmatch(r"[A-Za-z0-9_]+", t) for t in terms):
            out += [t for t in terms if values.get(f"CONFIG_{t}", "n") not in ("y", "m")]
        elif kconfig_true(expr, values) is not True:
            out.append(expr)
    return list(dict.fromkeys(out))


def sourced_if(tree: Path, kconfig: str) -> str:
    """The condition of the `if` block a Kconfig file is sourced in ("ARM ||
    ARM64" for drivers/cpufreq/Kconfig.arm), "" when there is none."""
    res = subprocess.run(["git", "-C", str(tree), "grep", "-n", "-F", f'source "{kconfig}"',
                          "--", "*Kconfig*"], capture_output=True, text=True)
    for hit in res.stdout.splitlines():
        path, line = hit.split(":")[:2]
        lines = (tree / path).read_text(errors="replace").splitlines()[:int(line) - 1]
        depth = 0
        for text in reversed(lines):
            word = text.split()[0] if text.split() else ""
            if word == "endif":
                depth += 1
            elif word == "if" and depth == 0:
                return text.strip()[3:].strip()
            elif word == "if":
                depth -= 1
    return ""
