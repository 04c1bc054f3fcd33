"""Who a patch goes to and which series it belongs to: the tree's MAINTAINERS
file, read here, and its scripts/get_maintainer.pl, run on each patch alone.

- The series of a semaphore is the MAINTAINERS entry (section) of its files: for
  each file the most specific entry whose F: patterns match it (the pattern with
  the most directory levels, as get_maintainer.pl orders them; X: excludes), then
  the entry that most of the files name.
- Each patch gets the To (people) and Cc (lists) get_maintainer.pl gives for that
  patch alone; the cover letter gets the union of its patches'.
- The tree tag of the subject (``[PATCH net-next 1/2]``) comes from the ``T: git``
  lines of the matching entries, the most specific entry with such a line first:
  a tree whose repository is named ``<x>-next.git`` gives ``<x>-next`` (net-next,
  wireless-next, bpf-next); the trees in ``KNOWN_TREES`` whose maintainers name
  their next branch otherwise (``rdma/rdma.git`` takes ``rdma-next``).  Any other
  tree (a maintainer's own tree, a fixes tree such as net.git) gives no tag: a
  conversion is not a fix, and an unknown tag would only misroute the patch.
"""

from __future__ import annotations

import logging
import re
import subprocess
from collections import Counter, OrderedDict
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("sem2mutex.patches")

# repository (the end of the T: URL) -> the tag its maintainers expect
KNOWN_TREES = {"rdma/rdma.git": "rdma-next", "netdev/net.git": "net-next"}


@dataclass(frozen=True)
class Entry:
    """One section of MAINTAINERS."""
    name: str
    files: tuple[str, ...] = ()         # F:
    excludes: tuple[str, ...] = ()      # X:
    trees: tuple[str, ...] = ()         # T:
    status: str = ""                    # S: Maintained, Odd Fixes, Orphan, ...


def parse_maintainers(text: str) -> list[Entry]:
    """The sections of a MAINTAINERS file: a name line, then "X:\\tvalue" lines,
    up to a blank line (the preamble, before the first section, has no fields)."""
    entries: list[Entry] = []
    name, fields = "", {"F": [], "X": [], "T": [], "S": []}

    def close() -> None:
        if name and fields["F"]:
            entries.append(Entry(name, tuple(fields["F"]), tuple(fields["X"]),
                                 tuple(fields["T"]), " ".join(fields["S"])))

    for line in text.splitlines():
        m = re.match(r"^([A-Z]):\s*(.*?)\s*$", line)
        if m and name:
            if m.group(1) in fields:
                fields[m.group(1)].append(m.group(2))
        elif line.strip() and not m and not line.startswith((" ", "\t")):
            close()
            name, fields = line.strip(), {"F": [], "X": [], "T": [], "S": []}
    close()
    return entries


def pattern_depth(pattern: str, path: str) -> int:
    """How specific pattern is for path (get_maintainer.pl's file_match_pattern
    and its ordering), or -1 when it does not match: a pattern ending in "/"
    matches everything below it; any other matches a path as deep as itself
    ("*" and "?" as globs within that)."""
    rx = re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".")
    if not re.match(rx, path):
        return -1
    depth = pattern.count("/")
    if not pattern.endswith("/"):
        if path.count("/") != depth:
            return -1
        depth += 1
    return depth


def most_specific(entries: list[Entry], path: str) -> list[Entry]:
    """The entries matching path, the most specific first."""
    scored = []
    for i, e in enumerate(entries):
        if any(pattern_depth(x, path) >= 0 for x in e.excludes):
            continue
        depth = max((pattern_depth(f, path) for f in e.files), default=-1)
        if depth >= 0:
            scored.append((-depth, i, e))
    return [e for _, _, e in sorted(scored, key=lambda t: t[:2])]


def section_for(entries: list[Entry], paths: list[str]) -> Entry | None:
    """The entry most of paths name as their most specific (ties: the first
    path's); None when no entry matches any of them."""
    firsts = [m[0] for p in sorted(paths) if (m := most_specific(entries, p))]
    if not firsts:
        return None
    counts = Counter(e.name for e in firsts)
    best = max(counts.values())
    return next(e for e in firsts if counts[e.name] == best)


def tree_tag(entries: list[Entry], paths: list[str]) -> str:
    """The subject's tree tag for paths ("" for none); see the module's doc."""
    order: list[Entry] = []
    for p in sorted(paths):
        for e in most_specific(entries, p):
            if e not in order:
                order.append(e)
    order.sort(key=lambda e: -max(pattern_depth(f, p) for f in e.files for p in paths))
    for e in order:
        tags = [_tag(t) for t in e.trees]
        tags = [t for t in tags if t]
        if tags:
            return sorted(tags, key=lambda t: (not t.endswith("-next"), t))[0]
    return ""


def on_tree(kernel: Path, tag: str) -> bool:
    """Whether kernel's git repository holds the tree a tag names (a branch or
    remote ref called after it: net-next, refs/remotes/net-next/main): a
    subject carries a tree tag only on a base that is that tree."""
    if not tag or not (Path(kernel) / ".git").exists():
        return False
    res = subprocess.run(["git", "-C", str(kernel), "for-each-ref", "--format=%(refname)",
                          "refs/heads", "refs/remotes"], capture_output=True, text=True)
    return any(tag in ref.split("/") or ref.endswith("/" + tag)
               for ref in res.stdout.split())


# S: values under which a patch needs a word on where it should go
_UNUSUAL = {"orphan": "has no maintainer (S: Orphan)",
            "odd fixes": "is looked after only for fixes (S: Odd Fixes)",
            "obsolete": "is obsolete (S: Obsolete)"}


def routing(entries: list[Entry], paths: list[str], tag: str, tagged: bool,
            version: str) -> list[str]:
    """What a sender must know about where a patch goes: an entry without a
    maintainer (and the entry above it that get_maintainer.pl also names), the
    tree the entry names when the base is not that tree, and recipients read
    from a stable release's MAINTAINERS."""
    out = []
    chain: list[Entry] = []
    for p in sorted(paths):
        for e in most_specific(entries, p):
            if e not in chain:
                chain.append(e)
    if chain:
        first = chain[0]
        why = _UNUSUAL.get(first.status.lower().strip())
        if why:
            above = next((e for e in chain[1:]
                          if e.status.lower().strip() not in _UNUSUAL), None)
            out.append(f"{first.name} {why}: "
                       + (f"the patch goes to the list and maintainers of {above.name}, "
                          "who decide whether a clean-up of this code is wanted."
                          if above else "say in the mail who should take it."))
    if tag and not tagged:
        out.append(f"MAINTAINERS routes this through {tag}: the patch is based on "
                   f"Linux {version}, so rebase it there before sending.")
    elif not tag and _stable(version):
        # no -next tag to say it, but the driver's own tree is where it must apply
        # every tree of the first entry that names one (SCSI names two)
        trees = next(([t.split()[1] for t in e.trees if t.startswith("git ")
                       and len(t.split()) > 1] for e in chain
                      if any(t.startswith("git ") for t in e.trees)), [])
        trees = [t for t in trees
                 if t.rstrip("/").removesuffix(".git").rsplit("/", 1)[-1] != "linux"]
        if trees:
            out.append(f"The patch is based on Linux {version}: rebase it onto the "
                       f"{'tree' if len(trees) == 1 else 'trees'} MAINTAINERS names "
                       f"({' or '.join(trees)}), where the driver may have changed, "
                       "before sending.")
    if _stable(version):
        out.append(f"The recipients come from the MAINTAINERS of Linux {version}, a "
                   "stable release: check them against the current MAINTAINERS.")
    return out


def _stable(version: str) -> bool:
    """A stable release (6.1.192), not a mainline one (6.13, 6.13.0)."""
    return bool(re.fullmatch(r"\d+\.\d+\.\d+", version or "")) and not version.endswith(".0")


def _tag(tree: str) -> str:
    m = re.match(r"^git\s+(\S+?)(?:\.git)?\s*$", tree)
    if not m:                   # no URL, or a branch named after it (tip.git x/core)
        return ""
    repo = m.group(1).rstrip("/")
    if repo.endswith("-next"):
        return repo.rsplit("/", 1)[-1]
    for known, tag in KNOWN_TREES.items():
        if (repo + ".git").endswith("/" + known):
            return tag
    return ""


def read_entries(tree: Path) -> list[Entry]:
    try:
        return parse_maintainers((tree / "MAINTAINERS").read_text(errors="replace"))
    except OSError:
        return []


# ------------------------------------------------------------------ recipients

def split_addresses(output: str) -> tuple[list[str], list[str]]:
    """get_maintainer.pl's lines: people ("Name <addr>") To, lists Cc."""
    to, cc = [], []
    for line in output.splitlines():
        line = line.strip()
        if not line or "@" not in line:
            continue
        (to if "<" in line else cc).append(line)
    return list(OrderedDict.fromkeys(to)), list(OrderedDict.fromkeys(cc))


def recipients(tree: Path, patch: Path, me: str = "") -> tuple[list[str], list[str]]:
    """(To, Cc) of one patch from the tree's get_maintainer.pl, me (the sender's
    address, which it finds in the Signed-off-by) left out; the lists that take
    posts from subscribers only (--s) included, as a patch goes there too."""
    script = tree / "scripts" / "get_maintainer.pl"
    if not script.is_file():
        return [], []
    res = subprocess.run(["perl", str(script), "--no-git", "--no-rolestats", "--s",
                          str(patch)], cwd=tree, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        log.warning("get_maintainer.pl failed on %s: %s", patch.name,
                    res.stderr.strip()[-200:])
        return [], []
    to, cc = split_addresses(res.stdout)
    return ([a for a in to if not me or f"<{me}>" not in a],
            [a for a in cc if not me or a != me])


def union(lists: list[list[str]]) -> list[str]:
    return list(OrderedDict.fromkeys(a for one in lists for a in one))


def add_recipients(patch: Path, to: list[str], cc: list[str]) -> None:
    """Write To: and Cc: headers into a format-patch file (before the blank line
    that ends its headers), folded as git format-patch folds them."""
    text = patch.read_text()
    head, sep, body = text.partition("\n\n")
    for key, addrs in (("To", to), ("Cc", cc)):
        if addrs:
            head += f"\n{key}: " + ",\n    ".join(addrs)
    patch.write_text(head + sep + body)
