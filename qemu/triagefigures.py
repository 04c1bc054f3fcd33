"""The triage table of docs/figures.md, generated from the measurement's JSON.

    python3 -m qemu.triagefigures            # rewrite the table in docs/figures.md
    python3 -m qemu.triagefigures --check    # exit 1 when docs/figures.md differs

`python3 -m qemu triage-eval CORPUS ... --out reports/linux-6.1.192/triage-eval.json`
measures (qemu.triageeval); the table sits between two marker lines, and a test fails
when it is not what this module makes of the committed JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from classify.inputs import shown
from classify.paths import PROJECT_DIR
from qemu.triageeval import CORPORA, FIGURES

DOC = PROJECT_DIR / "docs" / "figures.md"
BEGIN = ("<!-- triage figures: generated from {json} by `python3 -m qemu.triagefigures`; "
         "do not edit -->")
END = "<!-- end of the triage figures -->"
HEADS = {"syzkaller": "syzkaller's Linux report fixtures", "runtime": "the runtime set's logs"}


def _missed(rows: list[dict]) -> str:
    if not rows:
        return "none"
    titles: dict[str, int] = {}
    for r in rows:
        titles[r["title"]] = titles.get(r["title"], 0) + 1
    return f"{len(rows)}: " + "; ".join(f"`{t}`" + (f" ({n} reports)" if n > 1 else "")
                                       for t, n in sorted(titles.items()))


def _links(by_link: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(by_link.items())) or "none"


def _measured(c: dict) -> str:
    links = "" if c["tree_links"] else ", without the tree's lockdep maps"
    return f"{c['source']}, {c['date']}{links}"


def table(data: dict, json_path: Path = FIGURES) -> str:
    """The generated block, markers included (data: triage-eval.json's)."""
    cols = [c for c in CORPORA if c in data.get("corpora", {})]
    cs = [data["corpora"][c] for c in cols]

    def row(label: str, cell) -> str:
        return f"| {label} | " + " | ".join(cell(c) for c in cs) + " |"

    def recall(c: dict) -> str:
        return f"**{c['recall']:.2f}**" if c["recall"] is not None else "-"
    return "\n".join([
        BEGIN.format(json=shown(json_path)), "",
        "| `make triage` against the labels | " + " | ".join(HEADS[c] for c in cols) + " |",
        "|---|" + "---|" * len(cols),
        row("logs read", lambda c: str(c["logs"])),
        row("reports read", lambda c: str(c["reports"])),
        row("reports that name a semaphore", lambda c: str(c["named"])),
        row("named wrongly", lambda c: f"**{len(c['wrong'])}**"),
        row("reports a developer would pin on a semaphore (labels)",
            lambda c: str(c["pinned"])),
        row("of them, the semaphore named", lambda c: str(c["found"])),
        row("missed", lambda c: _missed(c["missed"])),
        row("recall", recall),
        row("links of the semaphores named", lambda c: _links(c["by_link"])),
        row("labels", lambda c: f"`{c['labels']}`"),
        row("measured", _measured),
        "", END])


def replace_block(text: str, block: str) -> str:
    """text with the block between the markers replaced (ValueError without them)."""
    start = text.find("<!-- triage figures:")
    end = text.find(END)
    if start < 0 or end < start:
        raise ValueError("no triage figures markers")
    return text[:start] + block + text[end + len(END):]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m qemu.triagefigures",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="exit 1 when the doc differs")
    p.add_argument("--doc", type=Path, default=DOC, help="default: %(default)s")
    p.add_argument("--json", type=Path, default=FIGURES, help="default: %(default)s")
    args = p.parse_args(argv)
    try:
        text = args.doc.read_text()
        new = replace_block(text, table(json.loads(args.json.read_text()), args.json))
    except (OSError, ValueError, KeyError) as err:
        print(f"triagefigures: error: {err}", file=sys.stderr)
        return 2
    if args.check:
        if new != text:
            print(f"triagefigures: {args.doc} differs from {args.json}: run "
                  "`python3 -m qemu.triagefigures`", file=sys.stderr)
            return 1
        return 0
    args.doc.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
