"""`python3 -m qemu triage-eval`: does triage name the semaphore a report is about, and
never a wrong one?  Measured over logs labelled by hand.

    triage-eval syzkaller DIR    syzkaller's Linux report fixtures (github.com/google/
                                 syzkaller, pkg/report/testdata/linux/report: a header,
                                 a blank line, the log), fetched apart from the project
    triage-eval runtime [DIR]    the committed logs of the runtime set (default:
                                 reports/linux-6.1.192/runtime)

Every report qemu.parse reads in a log is triaged as `make triage` does (the audit of
6.1.192 and, when it is there, its tree's lockdep maps and macro helpers) and compared
with the labels of qemu/truth/triage-<corpus>.tsv: a line per report a kernel developer
would pin on a struct semaphore (which one), and per report that looks like one and is
about none (why).  The labels were written by reading the logs and the kernel source,
not from triage's output.  A report no label matches is about no semaphore; so that
this is not taken on trust, screen() (a rule set of its own: semaphore API frames,
console_sem and its lockdep map, semaphore lock classes, the series' per-site
classes) flags the reports that must carry a label.

    named      reports in which triage names a semaphore
    wrong      ... a semaphore the labels do not give that report (0 is required)
    pinned     reports the labels pin on a semaphore; found: triage names it
    missed     pinned reports in which triage does not name it
    recall     found / pinned

Exit status 0; 1 when a semaphore was named wrongly or the labels do not cover the
corpus (a screened report without a label, a label no report matches); 2 for bad input.
--out writes the figures into reports/linux-6.1.192/triage-eval.json (or a file in
the work area); docs/figures.md quotes them (qemu.triagefigures).
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from classify import lockmap
from classify.inputs import InputError, load_audit, refuse_committed, shown
from classify.paths import PROJECT_DIR, REPORTS_DIR
from qemu import parse, runrecord, triage

CORPORA = ("syzkaller", "runtime")
TRUTH = PROJECT_DIR / "qemu" / "truth"
AUDIT = REPORTS_DIR / "linux-6.1.192" / "audit.json"
RUNTIME_LOGS = AUDIT.parent / "runtime"
FIGURES = AUDIT.parent / "triage-eval.json"
SCHEMA = "sem2mutex.triage-eval/1"
_KINDS = {k for k, _ in parse.REPORT_PATTERNS}
_HEADER = re.compile(r"^(?:[A-Z]+: |#)")


class EvalError(InputError):
    """Bad input: one line naming it (exit status 2)."""


# ------------------------------------------------------------------ the labels

@dataclass(frozen=True)
class Label:
    log: str            # a log's file name, or a glob ("runtime-udlfb-challenge.*.log")
    kind: str           # the report's kind (qemu.parse)
    title: str          # a piece of its title, or "*"
    sem: str | None     # the audit id of the semaphore, None: about no semaphore
    why: str
    line: int           # in the labels file

    def matches(self, log: str, kind: str, title: str) -> bool:
        return fnmatch.fnmatchcase(log, self.log) and kind == self.kind and (
            self.title == "*" or self.title in title)


def load_labels(path: Path, sems: set[str]) -> list[Label]:
    """The labels file: "log<TAB>kind<TAB>title<TAB>semaphore<TAB>why" lines, "#" a
    comment; EvalError for a line that is not one, or names what is not there."""
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise EvalError(f"labels {path}: cannot read it: {err.strerror or err}") from None
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if len(cells) != 5 or not all(c.strip() for c in cells):
            raise EvalError(f"labels {path}:{n}: not five tab-separated cells (log, kind, "
                            "title, semaphore or -, why)")
        log, kind, title, sem, why = (c.strip() for c in cells)
        if kind not in _KINDS:
            raise EvalError(f"labels {path}:{n}: kind {kind!r} is none of qemu.parse's")
        if sem != "-" and sem not in sems:
            raise EvalError(f"labels {path}:{n}: {sem!r} is no semaphore of the audit")
        out.append(Label(log, kind, title, None if sem == "-" else sem, why, n))
    return out


# ------------------------------------------------------------------ the screen

# Independent of triage: what in a report's lines says a struct semaphore may be
# involved.  Broad on purpose ("? " frames too): it only asks for a label.
SCREEN = {
    "semaphore API frame": re.compile(
        r"(?:^|[\s(])(?:\? )?(?:__)?(?:down|up)(?:_interruptible|_killable|_timeout|"
        r"_trylock|_common)?(?:\.[\w.]+)?(?:\+0x[0-9a-f]+/0x[0-9a-f]+|\) from | from \w)"),
    "console_sem": re.compile(r"\bconsole_(?:sem|lock|trylock|unlock)\b|_console_sem\b"),
    "semaphore lock class": re.compile(r"semaphore->lock|\(\w*sema?\w*\)\.lock|"
                                       r"\bsema?\)?->lock\b"),
    "per-site class": re.compile(r"@[\w./+-]+\.[ch]:\d+(?:[#/][\d/]*)?[){: ]"),
    "mutex_debug": re.compile(r"\bmutex_debug \S+[: ]"),
    "blocked on a semaphore": re.compile(r"blocked on an? semaphore"),
}


def screen(lines: list[str]) -> list[str]:
    """The SCREEN rules a report's lines meet."""
    return [name for name, pat in SCREEN.items() if any(pat.search(ln) for ln in lines)]


# ------------------------------------------------------------------ the corpora

def fixture_log(text: str) -> tuple[str, int] | None:
    """The log of a syzkaller fixture and the lines before it, as syzkaller's
    report_test.go reads one: the header ("TITLE: ..." lines and "#" comments, none
    for a log of no report) up to a blank line, then the log, up to a "REPORT:" line
    after a blank one (the report expected, a copy of the log's); None when the text
    does not start that way."""
    head, sep, log = text.partition("\n\n") if not text.startswith("\n") else (
        "", "\n", text[1:])
    if not sep or not all(_HEADER.match(ln) for ln in head.splitlines()):
        return None
    log = re.split(r"(?m)(?<=\n\n)REPORT:$", log, maxsplit=1)[0]
    return log, text[:len(head) + len(sep)].count("\n")


def read_corpus(corpus: str, directory: Path) -> list[tuple[str, str, int]]:
    """(name, log text, lines of header before it) of each log of the corpus."""
    if not directory.is_dir():
        raise EvalError(f"{corpus} {directory}: no such directory")
    out = []
    if corpus == "runtime":
        for p in sorted(directory.glob("*.log")):
            out.append((p.name, p.read_text(errors="replace"), 0))
    else:
        for p in sorted((p for p in directory.iterdir() if p.is_file()),
                        key=lambda p: (len(p.name), p.name)):
            fixture = fixture_log(p.read_text(errors="replace"))
            if fixture is None:
                raise EvalError(f"syzkaller {directory}: {p.name} is no report fixture "
                                "(a header of \"TITLE: ...\" lines, a blank line, the "
                                "log): give pkg/report/testdata/linux/report of a "
                                "syzkaller checkout")
            out.append((p.name, *fixture))
    if not out:
        raise EvalError(f"{corpus} {directory}: no log in it")
    return out


def digest(items: list[tuple[str, str]]) -> str:
    h = hashlib.sha256()
    for name, text in items:
        h.update(name.encode() + b"\0" + text.encode(errors="replace") + b"\0")
    return h.hexdigest()


# ------------------------------------------------------------------ one report

@dataclass
class Seen:
    """One report, what triage named in it and what its label says."""
    log: str
    line: int               # of the headline, in the file
    kind: str
    title: str
    named: list[dict]       # {"id", "by", "link"} of each semaphore triage names
    label: str | None       # the semaphore the labels pin it on
    labelled: bool
    screened: list[str]

    @property
    def wrong(self) -> list[str]:
        return [n["id"] for n in self.named if n["id"] != self.label]

    @property
    def found(self) -> bool:
        return self.label is not None and self.label in [n["id"] for n in self.named]


def seen_in(name: str, text: str, offset: int, index: lockmap.SemIndex, sems: dict,
            allocated: list, labels: list[Label], used: set[int]) -> list[Seen]:
    """Each report of one log, triaged as `make triage` does, with its label."""
    boot = runrecord.log_boot(name, "series", frozenset(), text)
    items = triage.report_items(boot, index, sems, {}, allocated)
    out = []
    for rep, item in zip(boot.reports, items):
        label = next((lb for lb in labels if lb.matches(name, rep.kind, rep.title)), None)
        if label:
            used.add(label.line)
        named = [{"id": lk["id"], "by": lk["by"], "link": lk["link"]}
                 for lk in item["locks"] if lk["id"]]
        out.append(Seen(name, rep.line + offset, rep.kind, rep.title, named,
                        label.sem if label else None, label is not None,
                        screen(rep.body)))
    return out


# ------------------------------------------------------------------ the figures

def _brief(s: Seen) -> dict:
    return {"log": s.log, "line": s.line, "kind": s.kind, "title": s.title}


@dataclass
class Figures:
    """What one corpus measured (the JSON of reports/.../triage-eval.json)."""
    corpus: str
    source: str
    logs: int
    logs_sha256: str
    labels: str
    labels_sha256: str
    tree_links: bool
    reports: int = 0
    screened: int = 0
    named: int = 0
    pinned: int = 0
    found: int = 0
    recall: float | None = None
    wrong: list[dict] = field(default_factory=list)
    missed: list[dict] = field(default_factory=list)
    unlabelled: list[dict] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    by_link: dict[str, int] = field(default_factory=dict)
    attributions: list[dict] = field(default_factory=list)
    date: str = ""

    @property
    def ok(self) -> bool:
        return not (self.wrong or self.unlabelled or self.stale)

    def to_json(self) -> dict:
        return asdict(self)


def tally(fig: Figures, seen: list[Seen]) -> Figures:
    """The figures of the reports seen."""
    for s in seen:
        fig.reports += 1
        fig.screened += bool(s.screened)
        fig.named += bool(s.named)
        fig.pinned += s.label is not None
        fig.found += s.found
        if s.wrong:
            fig.wrong.append({**_brief(s), "named": s.wrong, "label": s.label})
        if s.label is not None and not s.found:
            fig.missed.append({**_brief(s), "label": s.label})
        if s.screened and not s.labelled:
            fig.unlabelled.append({**_brief(s), "screen": s.screened})
        for n in s.named:
            how = n["by"] if "lockdep map" not in n["link"] else "lockdep map"
            fig.by_link[how] = fig.by_link.get(how, 0) + 1
            fig.attributions.append({**_brief(s), "id": n["id"], "link": n["link"]})
    fig.recall = round(fig.found / fig.pinned, 3) if fig.pinned else None
    return fig


def evaluate(corpus: str, directory: Path, labels_path: Path, audit: dict,
             links, source: str = "") -> Figures:
    """The figures of one corpus (see the module's doc)."""
    sems = {s["id"]: s for s in audit["semaphores"]}
    labels = load_labels(labels_path, set(sems) | {f["id"] for f in audit.get(
        "allocated", [])})
    logs = read_corpus(corpus, directory)
    index = lockmap.build_index(audit["semaphores"], links)
    used: set[int] = set()
    seen = [s for name, text, off in logs for s in seen_in(
        name, text, off, index, sems, audit.get("allocated", []), labels, used)]
    fig = Figures(corpus, source or shown(directory), len(logs),
                  digest([(n, t) for n, t, _ in logs]), shown(labels_path),
                  label_digest(labels_path), links is not None,
                  date=datetime.date.today().isoformat())
    fig.stale = [f"{shown(labels_path)}:{lb.line}: {lb.log} {lb.kind} {lb.title}"
                 for lb in labels if lb.line not in used]
    return tally(fig, seen)


def label_digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _listed(title: str, rows: list[dict], key: str = "") -> list[str]:
    if not rows:
        return []
    return [f"{title}:"] + [f"  {r['log']}:{r['line']}: {r['kind']}: {r['title']}"
                            + (f" -> {r[key]}" if key else "") for r in rows]


def render(fig: Figures) -> str:
    """The text for a person."""
    recall = f"{fig.recall:.2f}" if fig.recall is not None else "-"
    out = [f"triage-eval: {fig.corpus}: {fig.source}: {fig.logs} logs, {fig.reports} "
           f"reports; labels {fig.labels}" + ("" if fig.tree_links else
                                             "; no kernel tree: no lockdep maps"),
           f"named a semaphore: {fig.named} report(s); wrongly: {len(fig.wrong)}",
           f"pinned on a semaphore by the labels: {fig.pinned}; named: {fig.found}; "
           f"missed: {len(fig.missed)}; recall {recall}",
           f"screened: {fig.screened} report(s); without a label: {len(fig.unlabelled)}; "
           f"labels matching no report: {len(fig.stale)}"]
    out += [f"  {a['log']}:{a['line']}: {a['id']}: {a['link']}" for a in fig.attributions]
    out += _listed("named wrongly", fig.wrong, "named")
    out += _listed("missed", fig.missed, "label")
    out += _listed("screened, no label", fig.unlabelled, "screen")
    out += ["label matching no report: " + s for s in fig.stale]
    return "\n".join(out)


def write_figures(fig: Figures, out: Path, audit_path: Path) -> None:
    """Merge one corpus' figures into the JSON at out (the other corpus kept)."""
    data = json.loads(out.read_text()) if out.is_file() else {}
    if data and data.get("schema") != SCHEMA:
        raise EvalError(f"--out {out}: not a triage-eval figures file")
    data.update(schema=SCHEMA, audit=shown(audit_path))
    data.setdefault("corpora", {})[fig.corpus] = fig.to_json()
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


# ------------------------------------------------------------------ command line

def add_parser(sub) -> None:
    sp = sub.add_parser("triage-eval", help="measure triage over logs labelled by hand: "
                        "semaphores named, named wrongly, missed", description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    sp.add_argument("corpus", choices=CORPORA, help="which logs and labels")
    sp.add_argument("dir", type=Path, nargs="?", default=None, help="the logs (syzkaller: "
                    "its pkg/report/testdata/linux/report; runtime: default "
                    f"{shown(RUNTIME_LOGS)})")
    sp.add_argument("--labels", type=Path, default=None,
                    help="the labels (default: qemu/truth/triage-<corpus>.tsv)")
    sp.add_argument("--audit", type=Path, default=AUDIT, help="default: %(default)s")
    sp.add_argument("--tree", type=Path, default=None, help="the audit's kernel tree, for "
                    "its lockdep maps and macro helpers (default: work/linux-<version>)")
    sp.add_argument("--source", default="", help="what DIR is, kept with the figures "
                    "(e.g. google/syzkaller@<commit>)")
    sp.add_argument("--json", action="store_true", help="print the figures as JSON")
    sp.add_argument("--out", type=Path, default=None, help="merge the figures into this "
                    f"JSON ({shown(FIGURES)}, or a file outside reports/)")


def check(args: argparse.Namespace) -> None:
    """The inputs, before any log is read (EvalError)."""
    if args.dir is None and args.corpus == "syzkaller":
        raise EvalError("syzkaller: give the fixtures' directory (pkg/report/testdata/"
                        "linux/report of a syzkaller checkout)")
    args.dir = args.dir or RUNTIME_LOGS
    args.labels = args.labels or TRUTH / f"triage-{args.corpus}.tsv"
    if args.out is not None:
        refuse_committed(args.out, "--out", allowed=FIGURES)
        if args.out.is_dir():
            raise EvalError(f"--out {args.out}: is a directory: give a file name")
    if args.tree is not None and not args.tree.is_dir():
        raise EvalError(f"--tree {args.tree}: no such directory")


def run(args: argparse.Namespace) -> int:
    check(args)
    audit = load_audit(args.audit)
    fig = evaluate(args.corpus, args.dir, args.labels, audit,
                   triage.tree_links(args.tree, audit), args.source)
    if args.out is not None:
        write_figures(fig, args.out, args.audit)
    print(json.dumps(fig.to_json(), indent=1, sort_keys=True) if args.json else render(fig))
    return 0 if fig.ok else 1
