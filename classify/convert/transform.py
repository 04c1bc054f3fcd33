"""The conversion itself: the semaphore's semantic patch (cocci/sem_to_*.cocci)
run on each of its files in a worktree, all or nothing.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from classify import spatch
from classify.convert.finish import finish
from classify.convert.tested import _columns, drop_tested_values
from classify.tree import TreeError, git


SCRIPTS = {"mutex": "sem_to_mutex", "completion": "sem_to_completion"}


_REFUSAL = re.compile(r"^(sem_\w+): (?:(\S+?):(\d+): )?"
                      r"((?:allocated )?semaphore .* not (?:converted|marked): .*)$")


def cocci_id(sem: dict) -> str:
    """The -D sem= argument: a member is recognised by its struct type and a global
    is used through `extern` in other files, so both go without their path; a
    static or a local keeps it.  A semaphore allocated at run time is chosen by
    its file and the scope of its family (classify.allocated)."""
    sid = sem["id"]
    if sem["declared"]["kind"] == "allocated":
        # cocci/sem_alloc_to_arch.cocci: the functions and pointers of its family
        return f"{sem['declared']['path']}:{','.join(sem['scope'])}"
    if sem["declared"]["kind"] in ("member", "global"):
        return sid.rsplit(":", 1)[-1]
    return sid


def extern_files(tree: Path, name: str) -> list[str]:
    """Files declaring `extern struct semaphore name;` (the census does not tie
    them to the semaphore, yet they must change with it)."""
    res = subprocess.run(["git", "-C", str(tree), "grep", "-l", "-P",
                          rf"extern\s+struct\s+semaphore\s+{re.escape(name)}\s*;", "--",
                          "*.h", "*.c"], capture_output=True, text=True)
    return sorted(res.stdout.split()) if res.returncode == 0 else []


def files_for(sem: dict, tree: Path | None = None) -> list[str]:
    """Every file the conversion of sem must touch, sorted."""
    files = {sem["declared"]["path"]}
    files |= {o["path"] for o in sem.get("ops", [])}
    files |= {i["path"] for i in sem.get("init", [])}
    if tree is not None and sem["declared"]["kind"] == "global":
        files |= set(extern_files(tree, sem["declared"].get("name")
                                  or sem["id"].rsplit(":", 1)[-1]))
    return sorted(files)


@dataclass
class Conversion:
    changed: list[str]
    refusals: list[str]
    errors: list[str]
    # after a mutex/completion conversion (classify/convert/finish.py): the
    # lock's name after the patch ("" when unchanged), why a name that says
    # semaphore stays ("" otherwise), what the reviewer should know
    new_name: str = ""
    name_kept: str = ""
    notes: list[str] = field(default_factory=list)


def parse_refusals(stderr: str, tree: Path | None = None) -> list[str]:
    """The "semaphore X not converted: why" lines patch mode writes on stderr,
    as "path:line: why" (spatch's temporary copies named back to the file)."""
    out = []
    for line in stderr.splitlines():
        m = _REFUSAL.match(line.strip())
        if not m:
            continue
        path = re.sub(r"^.*/cocci_small_output-\d+-[0-9a-f]+-", "", m.group(2) or "")
        if tree is not None and path.startswith(str(tree) + "/"):
            path = path[len(str(tree)) + 1:]
        out.append(f"{path}:{m.group(3)}: {m.group(4)}" if path else m.group(4))
    return out


# A member reached through another struct declared in a header (hr_dev->cmd.poll_sem,
# struct hns_roce_dev in hns_roce_device.h) has no type spatch can infer with
# --no-includes: such a file is tried again with its local headers read for types,
# then with the kernel's include directories too (port->physport->ieee1284, struct
# parport in include/linux/parport.h).  Headers are only read for types, never changed.
NO_INCLUDES = ["--no-includes", "--include-headers"]


TYPE_HEADERS = [["--local-includes", "--include-headers-for-types"],
                ["--all-includes", "--include-headers-for-types", "-I", "include",
                 "-I", "arch/x86/include", "-I", "include/uapi",
                 "-I", "arch/x86/include/uapi"]]


NO_TYPE = "cannot infer the type"


def run_spatch(tree: Path, script: str, sem_arg: str, rel: str, timeout: float = 300.0,
               includes: list[str] = NO_INCLUDES) -> spatch.SpatchRun:
    """The script in patch mode on one file of tree, changed in place."""
    return spatch.run(["--very-quiet", *includes, "-D", "patch", "-D", f"sem={sem_arg}",
                       "--sp-file", str(spatch.script_path(script)), "--in-place", rel],
                      tree, timeout)


def changed_files(tree: Path) -> list[str]:
    return sorted(git(tree, "diff", "--name-only").split())


def convert(tree: Path, sem: dict, files: list[str], script: str | None = None,
            must_change: list[str] | None = None) -> Conversion:
    """Run the semaphore's script (by default the one of its class) on each of its
    files; all or nothing: on any refusal or error, the worktree is reset and
    nothing of it stays.  Each file of must_change (by default: those holding its
    operations) must have been changed."""
    script = script or SCRIPTS[sem["class"]]
    refusals: list[str] = []
    errors: list[str] = []
    for rel in files:
        if not (tree / rel).is_file():
            errors.append(f"{rel}: not in the tree")
            continue
        res = run_spatch(tree, script, cocci_id(sem), rel)
        refused = parse_refusals(res.stderr, tree)
        for includes in TYPE_HEADERS:
            if res.status == "timeout" or not (refused and rel.endswith(".c")
                                               and all(NO_TYPE in r for r in refused)):
                break
            git(tree, "checkout", "-q", "--", rel)
            res = run_spatch(tree, script, cocci_id(sem), rel, includes=includes)
            refused = parse_refusals(res.stderr, tree)
        if res.status == "timeout":
            errors.append(f"{rel}: spatch timed out")
            continue
        refusals += refused
        if res.returncode != 0:
            errors.append(f"{rel}: spatch failed: "
                          + " | ".join(res.stderr.strip().splitlines()[-2:]))
    changed = changed_files(tree)
    if must_change is None:
        must_change = sorted({o["path"] for o in sem.get("ops", [])} |
                             {i["path"] for i in sem.get("init", [])})
    if not refusals and not errors:
        for rel in must_change:
            if rel not in changed:
                errors.append(f"{rel}: the script left it unchanged (a declaration or "
                              "function spatch could not parse?)")
    if refusals or errors:
        git(tree, "checkout", "-q", "--", ".")
        changed = []
    for rel in changed:
        realign(tree, rel)
        drop_tested_values(tree / rel)
    if changed and script in SCRIPTS.values():
        done = finish(tree, sem, files, changed)
        return Conversion(changed_files(tree), refusals, errors,
                          done.new_name, done.name_kept, done.notes)
    return Conversion(changed, refusals, errors)


_OLD_WORDS = re.compile(r"\b(?:down|up)(?:_interruptible|_killable|_trylock|_timeout)?\(\)"
                        r"|\bsemaphores?\b|\bsema_init\b", re.I)
# in a message string the calls have no parentheses: "down_interruptible failed"
_OLD_CALLS = re.compile(r"\b(?:down_(?:interruptible|killable|trylock|timeout)|sema_init)\b"
                        r"|\bsemaphores?\b", re.I)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def _changed_lines(tree: Path, rev: str) -> dict[str, set[int]]:
    """path -> the line numbers rev added or changed (on its side of the diff)."""
    out: dict[str, set[int]] = {}
    path = ""
    for text in git(tree, "show", "--format=", "-U0", rev).splitlines():
        if text.startswith("+++ "):
            path = text[6:] if text.startswith("+++ b/") else ""
            continue
        m = _HUNK.match(text)
        if m and path:
            first, count = int(m.group(1)), int(m.group(2) or 1)
            out.setdefault(path, set()).update(range(first, first + max(count, 1)))
    return out


def _comment_parts(lines: list[str]):
    """(line number, the comment text on it, its string literals) for each line,
    following /* ... */ blocks across lines."""
    in_block = False
    for number, line in enumerate(lines, 1):
        comment, rest = [], line
        while rest:
            if in_block:
                end = rest.find("*/")
                comment.append(rest if end < 0 else rest[:end])
                rest = "" if end < 0 else rest[end + 2:]
                in_block = end < 0
                continue
            start, slashes = rest.find("/*"), rest.find("//")
            if slashes >= 0 and (start < 0 or slashes < start):
                comment.append(rest[slashes:])
                rest = rest[:slashes]
                break
            if start < 0:
                break
            in_block, rest = True, rest[start + 2:]
        code = line if not comment else line.split("/*")[0].split("//")[0]
        yield number, " ".join(comment), _STRING.findall(code)


def stale_comments(tree: Path, rev: str = "HEAD", name: str = "", near: int = 6) -> list[str]:
    """Comments (and message strings) that still speak of the semaphore after
    rev: near a line rev changed, any that names down(), up() or "semaphore";
    anywhere in a changed file, any that names the lock itself (a kernel-doc
    `@name: Semaphore for ...`) together with those words.  The script changes
    code, not words: the reviewer is told where to look ("path:line: comment")."""
    out: list[str] = []
    lock = re.compile(rf"\b{re.escape(name)}\b") if name else None
    for path, changed in sorted(_changed_lines(tree, rev).items()):
        try:
            lines = git(tree, "show", f"{rev}:{path}").split("\n")
        except TreeError:          # the file is gone at rev
            continue
        for number, comment, strings in _comment_parts(lines):
            close = any(abs(number - c) <= near for c in changed)
            said = comment and _OLD_WORDS.search(comment) and (
                close or (lock is not None and lock.search(comment)))
            if said:
                out.append(f"{path}:{number}: a comment still speaks of the semaphore: "
                           f"\"{lines[number - 1].strip()[:80]}\"")
            elif close and any(_OLD_CALLS.search(s) for s in strings):
                out.append(f"{path}:{number}: a message still speaks of the semaphore: "
                           f"\"{lines[number - 1].strip()[:80]}\"")
    return out


_OLD_DECL = re.compile(r"^(\s*(?:static\s+)?)struct semaphore(\s+)(\S.*)$")
_NEW_DECL = re.compile(r"^(\s*(?:static\s+)?)struct (mutex|completion)(\s+)(\S.*)$")


def aligned(old: str, new: str) -> str:
    """new (`struct mutex m;`, as the script wrote it) with its name at the column
    old (`struct semaphore\\tm;`) had it, in old's whitespace (tabs or spaces):
    a member stays aligned with its neighbours.  A single space stays one."""
    mo, mn = _OLD_DECL.match(old), _NEW_DECL.match(new)
    if not (mo and mn) or mo.group(2) == " " or mo.group(3) != mn.group(4):
        return new
    want = _columns(old[:mo.start(3)])
    head = f"{mn.group(1)}struct {mn.group(2)}"
    if "\t" in mo.group(2):
        gap = "\t"
        while _columns(head + gap) < want:
            gap += "\t"
    else:
        gap = " " * max(1, want - _columns(head))
    return head + gap + mn.group(4)


def realign(tree: Path, rel: str) -> bool:
    """Re-align in rel (changed in tree, not committed) each declaration the
    script turned from struct semaphore into struct mutex/completion; True when
    a line changed."""
    diff = git(tree, "diff", "-U0", "--", rel)
    path = tree / rel
    lines = path.read_text().split("\n")
    changed = False
    removed: list[str] = []
    added: list[tuple[int, str]] = []

    def flush() -> None:
        nonlocal changed
        olds = [r for r in removed if _OLD_DECL.match(r)]
        news = [(n, a) for n, a in added if _NEW_DECL.match(a)]
        for old, (n, new) in zip(olds, news):
            fixed = aligned(old, new)
            if fixed != lines[n]:
                lines[n], changed = fixed, True
        removed.clear()
        added.clear()

    line = 0
    for text in diff.splitlines():
        m = _HUNK.match(text)
        if m:
            flush()
            line = int(m.group(1)) - 1
        elif text.startswith("-") and not text.startswith("---"):
            removed.append(text[1:])
        elif text.startswith("+") and not text.startswith("+++"):
            added.append((line, text[1:]))
            line += 1
    flush()
    if changed:
        path.write_text("\n".join(lines))
    return changed
