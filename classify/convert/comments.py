"""The comments and message strings that speak of the semaphore, said of the
new lock (a pass of finish.py): the words and calls a comment uses, the
comment laid out again in kernel style within 80 columns, and which comments
and messages are this lock's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from classify.convert.csource import _SEM_OPS, _line_of, comment_spans, strip_comments
from classify.convert.layout import LIMIT
from classify.convert.tested import _columns

# ------------------------------------------------------------------ words

_SEP = r"(?:[ \t]*\n[ \t]*(?:\*(?!/)|//)?[ \t]*|[ \t]+)"


def _phrase(words: str) -> str:
    """A regex for words, the spaces between them possibly a comment's line
    break (`the\\n\\t * semaphore`)."""
    return _SEP.join(re.escape(w) for w in words.split())


# the call -> its new name, by class; "()" or not, in comments and messages
CALLS = {
    "mutex": {"down_interruptible": "mutex_lock_interruptible",
              "down_killable": "mutex_lock_killable", "down_trylock": "mutex_trylock",
              "down": "mutex_lock", "up": "mutex_unlock", "sema_init": "mutex_init"},
    "completion": {"down_interruptible": "wait_for_completion_interruptible",
                   "down_killable": "wait_for_completion_killable",
                   "down_timeout": "wait_for_completion_timeout",
                   "down_trylock": "try_wait_for_completion", "down": "wait_for_completion",
                   "up": "complete", "sema_init": "init_completion"},
}


def phrases(cls: str, name: str) -> list[tuple[str, str]]:
    """(old words, new words), longest first: what a comment says of the
    semaphore, said of the new type (name: the lock's name after the patch)."""
    if cls == "mutex":
        table = [("up() the semaphore", "release the mutex"),
                 ("up the semaphore", "release the mutex"),
                 ("down() the semaphore", "take the mutex"),
                 ("down the semaphore", "take the mutex")]
    else:
        table = [("up() the semaphore", f"complete {name}"),
                 ("up the semaphore", f"complete {name}"),
                 ("down() the semaphore", "wait for the completion"),
                 ("down the semaphore", "wait for the completion"),
                 ("decrementing the semaphore", "waiting for the completion")]
    table += [("semaphores", "mutexes" if cls == "mutex" else "completions"),
              ("semaphore", cls)]
    return table


def _cased(old: str, new: str) -> str:
    """new with old's capital first letter."""
    return new[:1].upper() + new[1:] if old[:1].isupper() else new


def _replace_phrase(text: str, old: str, new: str) -> str:
    """old -> new in text, case-insensitively; a line break inside old stays,
    before new's last word."""
    def one(m: re.Match) -> str:
        said = m.group(0)
        breaks = re.findall(r"[ \t]*\n[^\S\n]*(?:\*(?!/)|//)?[ \t]*", said)
        repl = _cased(said, new)
        if breaks and " " in repl:
            head, last = repl.rsplit(" ", 1)
            repl = head + breaks[0] + last
        return repl
    return re.sub(rf"(?<![\w-]){_phrase(old)}(?!\w)", one, text, flags=re.I)


def reword(text: str, cls: str, old_name: str, new_name: str) -> str:
    """A comment's text that spoke of the semaphore, speaking of the new lock:
    the phrases, the calls (`down()` -> `mutex_lock()`), the lock's name."""
    name = new_name or old_name
    if cls == "completion" and old_name != "semaphore":
        # a completion has no counter to speak of: what it counts is said
        # ("queue->sema counter" is "the number of complete() calls on
        # queue->sema not yet waited for", the name renamed below)
        text = re.sub(rf"(?:\bthe{_SEP})?((?:[\w>.-]*(?:->|\.))?{re.escape(old_name)})"
                      rf"(?:{_SEP}|'s{_SEP})(?:counter|count|value)\b",
                      r"the number of complete() calls on \1 not yet waited for", text)
    for old, new in phrases(cls, name):
        text = _replace_phrase(text, old, new)
    for old, new in CALLS[cls].items():
        text = re.sub(rf"\b{old}\(\)", f"{new}()", text)
    text = re.sub(r"\bsema_init\b", CALLS[cls]["sema_init"], text)
    if new_name and new_name != old_name and old_name != "semaphore":
        text = re.sub(rf"(?<![\w-]){re.escape(old_name)}\b(?!\()", new_name, text)
    return text


def reword_message(text: str, cls: str) -> str:
    """A message string naming the old call (`"down_interruptible failed"`)."""
    for old, new in CALLS[cls].items():
        if "_" in old:
            text = re.sub(rf"\b{old}\b", new, text)
    return text


_OLD_WORDS = re.compile(r"\b(?:down|up)(?:_interruptible|_killable|_trylock|_timeout)?\(\)"
                        r"|\bsemaphores?\b|\bsema_init\b", re.I)


# ------------------------------------------------------------------ comment layout

def _leader(line: str) -> str:
    """The comment leader of a line: indent and `* `, `/* ` or `// `."""
    m = re.match(r"^([ \t]*(?:/\*+|\*(?!/)|//)?[ \t]*)", line)
    return m.group(1) if m else ""


def _kernel_style(block: list[str]) -> list[str]:
    """A multi-line block comment whose later lines lack the leading `*` or
    whose `*/` ends a line of text (checkpatch's BLOCK_COMMENT_STYLE, which
    a changed line must pass), in kernel style: `/* text`, ` * text`, ` */`."""
    if len(block) < 2 or not block[0].lstrip().startswith("/*"):
        return block
    later_bad = any(not x.lstrip().startswith("*") for x in block[1:])
    tail_bad = not re.match(r"^\s*\*/\s*$", block[-1])
    if not (later_bad or tail_bad):
        return block
    indent = re.match(r"^[ \t]*", block[0]).group(0)
    words = []
    for x in block:
        x = re.sub(r"^\s*(?:/\*+|\*(?!/))?", "", x)
        words.append(re.sub(r"\*/\s*$", "", x).strip())
    first, rest = words[0], [w for w in words[1:] if w]
    out = [f"{indent}/*{' ' + first if first else ''}"] if first else [f"{indent}/*"]
    out += [f"{indent} * {w}" for w in rest]
    return out + [f"{indent} */"]


def _fit(block: list[str], limit: int = LIMIT) -> list[str]:
    """Lines of a comment past limit: the words that do not fit go to the
    start of the next line when it continues the same text, else to a new
    line with the same leader."""
    out = list(block)
    i = 0
    while i < len(out):
        line = out[i]
        if _columns(line) <= limit:
            i += 1
            continue
        lead = _leader(line)
        spaces = [k for k in range(len(lead), len(line))
                  if line[k] == " " and _columns(line[:k]) <= limit]
        cut = spaces[-1] + 1 if spaces else 0
        if cut <= len(lead):
            i += 1      # one word longer than the line: left
            continue
        head, tail = line[:cut].rstrip(), line[cut:].strip()
        cont = lead.replace("/*", " *").replace("/", " ") if lead.lstrip().startswith("/*") \
            else lead
        nxt = out[i + 1] if i + 1 < len(out) else ""
        closing = tail.endswith("*/")
        if nxt and _leader(nxt) == cont and nxt[len(cont):].strip() and \
                not nxt.strip().startswith(("*/", "@")) and not closing:
            out[i], out[i + 1] = head, cont + tail + " " + nxt[len(cont):].strip()
        else:
            out[i:i + 1] = [head, cont + tail]
        i += 1
    return out


# ------------------------------------------------------------------ pass: comments

@dataclass
class Scope:
    """Where comments are this lock's: the functions the conversion touched
    and the declaration (line numbers in the file)."""
    functions: list[tuple[int, int]]
    declaration: set[int]
    doc: set[int] = field(default_factory=set)    # `@name:` of the struct's kernel-doc


def _next_code_line(lines: list[str], code: list[str], last: int) -> int:
    """The first line after line `last` (1-based) with code on it."""
    for n in range(last + 1, len(lines) + 1):
        if code[n - 1].strip():
            return n
    return 0


def rewrite_comments(text: str, changed: set[int], scope: Scope, cls: str,
                     old_name: str, new_name: str, path: str = "") -> tuple[str, list[str]]:
    """The comments of scope that speak of the semaphore, reworded; (new text,
    notes on those left).  A comment is this lock's when it is at the
    declaration, when the next code line (or its own line) is one the
    conversion changed, or when its function holds no other semaphore; one
    in a function that still uses another semaphore is left, with a note."""
    lines = text.split("\n")
    code = strip_comments(text).split("\n")
    edits: list[tuple[int, int, list[str]]] = []
    notes: list[str] = []

    def others_in(func: tuple[int, int]) -> bool:
        """func still uses a semaphore: another one, or this one unconverted"""
        return bool(_SEM_OPS.search("\n".join(code[func[0] - 1:func[1]])))

    for start, end in comment_spans(text):
        first, last = _line_of(text, start), _line_of(text, end - 1)
        body = text[start:end]
        named = new_name and new_name != old_name and re.search(
            rf"(?<![\w-]){re.escape(old_name)}\b(?!\()", body) and old_name != "semaphore"
        if not (_OLD_WORDS.search(body) or named):
            continue
        func = next((f for f in scope.functions if f[0] <= first <= f[1]), None)
        at_decl = bool(scope.declaration & set(range(first, last + 2)))
        doc = scope.doc & set(range(first, last + 1))
        if doc and not at_decl:
            for n in doc:       # only the lock's own lines of a kernel-doc
                lines[n - 1] = reword(lines[n - 1], cls, old_name, new_name)
            continue
        if named and (func is None or others_in(func)) and not at_decl:
            # a comment elsewhere in the file that quotes the old name
            # (hns_roce's "this should be called with "poll_sem"") names
            # what is gone: the name follows, the words stay
            block = [re.sub(rf"(?<![\w-]){re.escape(old_name)}\b(?!\()", new_name, x)
                     for x in lines[first - 1:last]]
            edits.append((first, last, block))
            continue
        if func is None and not at_decl:
            if any(abs(first - c) <= 6 for c in changed) and _OLD_WORDS.search(body):
                notes.append(f"{path}:{first}: a comment near the change left as it is "
                             f"(not this lock's?): \"{lines[first - 1].strip()[:60]}\"")
            continue
        own = code[first - 1].strip() and first in changed
        nxt = _next_code_line(lines, code, last)
        others = func is not None and others_in(func)
        if not (at_decl or own or nxt in changed or not others):
            notes.append(f"{path}:{first}: a comment left as it is (its function uses "
                         f"another semaphore too): \"{lines[first - 1].strip()[:60]}\"")
            continue
        # the whole lines of the comment, reworded and laid out again
        old_block = lines[first - 1:last]
        joined = "\n".join(old_block)
        col0 = start - (text.rfind("\n", 0, start) + 1)
        new_joined = joined[:col0] + reword(joined[col0:], cls, old_name, new_name)
        if new_joined == joined:
            continue
        block = new_joined.split("\n")
        if not code[first - 1].strip() and not code[last - 1].strip():
            block = _kernel_style(block)
            block = _fit(block)
        edits.append((first, last, block))
    for first, last, block in sorted(edits, reverse=True):
        lines[first - 1:last] = block
    return "\n".join(lines), notes


def rewrite_messages(text: str, changed: set[int], scope: Scope, cls: str,
                     near: int = 3) -> str:
    """Message strings that name the old call (ath6kl's "down_interruptible
    failed\\n") within near lines after a changed line, in a function that
    holds no other semaphore."""
    lines = text.split("\n")
    code = strip_comments(text).split("\n")
    for first, last in scope.functions:
        if not any(first <= c <= last for c in changed):
            continue
        if _SEM_OPS.search("\n".join(code[first - 1:last])):
            continue
        for n in range(first, last + 1):
            if not any(0 < n - c <= near for c in changed):
                continue
            lines[n - 1] = re.sub(r'"(?:[^"\\]|\\.)*"',
                                  lambda m: reword_message(m.group(0), cls), lines[n - 1])
    return "\n".join(lines)

