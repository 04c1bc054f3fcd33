"""KTAP, as KUnit's boot-time suites and our /init print it: nested documents of
results, read from a saved console log (kunit_parser.py's model).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass
class KtapNode:
    name: str = ""
    status: str = ""          # ok | not ok | skip | missing ("" for a document)
    number: int = 0
    plan: int | None = None
    children: list["KtapNode"] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)
    line: int = 0             # a result: the 1-based line of its "ok"/"not ok" (0: none)

    def leaves(self, prefix: str = "") -> list[tuple[str, str]]:
        return [(path, node.status) for path, node in self.leaf_nodes(prefix)]

    def leaf_nodes(self, prefix: str = "") -> list[tuple[str, "KtapNode"]]:
        """(path, node) of every result without subtests."""
        path = f"{prefix}/{self.name}" if prefix else self.name
        if not self.children:
            # an empty document ("1..0", KUnit with no suites) has no results at all
            return [(path, self)] if self.status else []
        out = []
        for child in self.children:
            out += child.leaf_nodes(path)
        return out


KTAP_VERSION = re.compile(r"^(?P<ind>\s*)(?:KTAP version \d+|TAP version \d+)\s*$")
_SUBTEST = re.compile(r"^(?P<ind>\s*)# Subtest: (?P<name>.+?)\s*$")
_PLAN = re.compile(r"^(?P<ind>\s*)1\.\.(?P<n>\d+)\s*$")
_RESULT = re.compile(r"^(?P<ind>\s*)(?P<st>ok|not ok) (?P<num>\d+)(?: -)?\s*(?P<name>[^#]*?)"
                     r"\s*(?:#\s*(?P<dir>\S+)(?P<reason>.*))?$")
_DIAG = re.compile(r"^(?P<ind>\s*)# (?P<text>.*)$")


def _indent(s: str) -> int:
    return len(s.expandtabs(8))


def parse_ktap(lines: list[str]) -> list[KtapNode]:
    """Every top-level KTAP document in the log, subtests nested by indentation.

    Lines that are not KTAP (kernel messages interleaved with the tests) are skipped.
    A document or subtest whose plan promised more results than it printed gets
    "missing" entries, so a crash in the middle of a suite shows up as a failure.
    """
    docs: list[KtapNode] = []
    open_: dict[int, KtapNode] = {}

    def close_from(level: int) -> None:
        for lvl in sorted([k for k in open_ if k >= level], reverse=True):
            node = open_.pop(lvl)
            _fill_missing(node)
            if lvl > 0:       # an unterminated subtest: attach it as missing
                parent = open_.get(max([k for k in open_ if k < lvl], default=-1))
                if parent is not None:
                    node.status = node.status or "missing"
                    parent.children.append(node)

    for number, raw in enumerate(lines, 1):
        if m := KTAP_VERSION.match(raw):
            lvl = _indent(m["ind"])
            close_from(lvl)
            node = KtapNode()
            open_[lvl] = node
            if lvl == 0:
                docs.append(node)
        elif m := _SUBTEST.match(raw):
            lvl = _indent(m["ind"])
            if lvl not in open_ and lvl > 0 and open_:
                open_[lvl] = KtapNode()
            if lvl in open_:
                open_[lvl].name = m["name"]
        elif m := _PLAN.match(raw):
            lvl = _indent(m["ind"])
            if lvl not in open_ and (open_ or lvl == 0):
                open_[lvl] = KtapNode()
                if lvl == 0:
                    docs.append(open_[lvl])
            if lvl in open_:
                open_[lvl].plan = int(m["n"])
        elif m := _RESULT.match(raw):
            lvl = _indent(m["ind"])
            if lvl not in open_:
                continue           # a stray "ok" outside any KTAP document
            child = open_.pop(lvl + 4, None) if (lvl + 4) in open_ else None
            for deeper in [k for k in open_ if k > lvl]:
                open_.pop(deeper)
            if child is None:
                child = KtapNode()
            else:
                _fill_missing(child)
            st = m["st"]
            if (m["dir"] or "").upper() == "SKIP":
                st = "skip"
            child.status, child.number, child.line = st, int(m["num"]), number
            child.name = child.name or m["name"].strip()
            open_[lvl].children.append(child)
        elif m := _DIAG.match(raw):
            lvl = _indent(m["ind"])
            if lvl in open_:
                open_[lvl].diagnostics.append(m["text"])
    close_from(0)
    n_kunit = 0
    for doc in docs:
        if any(d.startswith("s2m-init scenario:") for d in doc.diagnostics):
            doc.name = "s2m-init"
        elif doc.name:     # a document that names itself ("# Subtest: sem_bench")
            pass
        else:   # the other top-level document on our console is KUnit's, at boot
            n_kunit += 1
            doc.name = "kunit" if n_kunit == 1 else f"kunit{n_kunit}"
    return docs


def _fill_missing(node: KtapNode) -> None:
    if node.plan is not None and len(node.children) < node.plan:
        for n in range(len(node.children) + 1, node.plan + 1):
            node.children.append(KtapNode(name=f"#{n}", status="missing", number=n))


def ktap_summary(docs: list[KtapNode]) -> dict[str, int]:
    counts = {"ok": 0, "not ok": 0, "skip": 0, "missing": 0}
    for doc in docs:
        for _, st in doc.leaves():
            counts[st if st in counts else "missing"] += 1
    return counts
