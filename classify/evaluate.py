"""`make evaluate`: the audit against a truth file labelled by reading the code.

classify/truth/linux-<version>.tsv gives each semaphore of a tree a label
(mutex, completion, counting, or unclear when the code does not decide) with
its file:line evidence, written without looking at the classifier's output.  This
prints the confusion matrix of the audit's classes against the labels, the
precision and recall of the convertible pools (mutex + completion), and every
disagreement, so that each one is read: the tool is fixed, or the label.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from classify.paths import PROJECT_DIR, REPORTS_DIR

TRUTH_DIR = PROJECT_DIR / "classify" / "truth"
LABELS = ("mutex", "completion", "counting", "unclear")
CLASSES = ("mutex", "completion", "counting", "unknown")
CONVERTIBLE = ("mutex", "completion")


class TruthError(Exception):
    """A truth file that does not match its audit (missing or extra ids, bad labels)."""


@dataclass(frozen=True)
class Label:
    id: str
    label: str
    confidence: str
    evidence: str
    note: str


def load_truth(path: Path) -> dict[str, Label]:
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    truth = {}
    for row in rows:
        if row["label"] not in LABELS:
            raise TruthError(f"{path}: {row['id']}: label {row['label']!r} is not one of "
                             + ", ".join(LABELS))
        truth[row["id"]] = Label(row["id"], row["label"], row["confidence"],
                                 row["evidence"], row["note"])
    return truth


@dataclass
class Evaluation:
    matrix: dict[str, dict[str, int]]       # label -> class -> count
    disagreements: list[tuple[str, str, str, str]]   # id, label, class, why
    true_positive: int                       # convertible, and given its right pool
    wrong_conversions: int                   # given mutex/completion, but labelled otherwise
    convertible: int                         # labelled mutex or completion

    @property
    def recall(self) -> float:
        return self.true_positive / self.convertible if self.convertible else 1.0

    @property
    def precision(self) -> float:
        called = self.true_positive + self.wrong_conversions
        return self.true_positive / called if called else 1.0


def evaluate(audit: dict, truth: dict[str, Label]) -> Evaluation:
    classes = {s["id"]: s for s in audit["semaphores"]}
    missing, extra = sorted(set(classes) - set(truth)), sorted(set(truth) - set(classes))
    if missing or extra:
        raise TruthError(f"the truth file and the audit disagree on the semaphores: "
                         f"{len(missing)} not labelled {missing[:3]}, "
                         f"{len(extra)} not in the audit {extra[:3]}")
    matrix = {lab: {c: 0 for c in CLASSES} for lab in LABELS}
    disagreements = []
    tp = wrong = 0
    for sid in sorted(classes):
        label, cls = truth[sid].label, classes[sid]["class"]
        matrix[label][cls] += 1
        if cls in CONVERTIBLE:
            if cls == label:
                tp += 1
            else:
                wrong += 1
        if cls != label and not (label in ("counting", "unclear")
                                 and cls in ("counting", "unknown")):
            why = "; ".join(classes[sid].get("reasons", []))
            disagreements.append((sid, label, cls, why))
    convertible = sum(t.label in CONVERTIBLE for t in truth.values())
    return Evaluation(matrix, disagreements, tp, wrong, convertible)


def render(ev: Evaluation, truth: dict[str, Label]) -> str:
    width = max(len(c) for c in CLASSES) + 2
    out = ["label \\ audit".ljust(14) + "".join(c.rjust(width) for c in CLASSES)]
    for lab in LABELS:
        out.append(lab.ljust(14) + "".join(str(ev.matrix[lab][c]).rjust(width)
                                          for c in CLASSES))
    out.append("")
    out.append(f"convertible (mutex + completion): {ev.convertible} labelled; "
               f"{ev.true_positive} found in the right pool: recall {ev.recall:.2f}; "
               f"{ev.wrong_conversions} mutex/completion verdict(s) for a semaphore "
               f"labelled otherwise: precision {ev.precision:.2f}")
    out.append(f"disagreements: {len(ev.disagreements)}")
    for sid, label, cls, why in ev.disagreements:
        t = truth[sid]
        out.append(f"  {sid}: labelled {label} ({t.confidence}), audit {cls}: {why}")
        out.append(f"      label: {t.note}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m classify.evaluate",
        description="The audit against the truth file: confusion matrix, precision and "
                    "recall of the convertible pools, and every disagreement.  Exit "
                    "status 0, or 1 when a mutex/completion verdict contradicts a label.")
    parser.add_argument("--version", default="6.1.192", help="kernel version (default: "
                        "%(default)s): reports/linux-V/audit.json, classify/truth/linux-V.tsv")
    parser.add_argument("--audit", type=Path, help="audit.json to evaluate")
    parser.add_argument("--truth", type=Path, help="truth file (TSV)")
    parser.add_argument("--json", action="store_true", help="the figures as JSON")
    args = parser.parse_args(argv)
    audit_path = args.audit or REPORTS_DIR / f"linux-{args.version}" / "audit.json"
    truth_path = args.truth or TRUTH_DIR / f"linux-{args.version}.tsv"
    try:
        audit = json.loads(audit_path.read_text())
        truth = load_truth(truth_path)
        ev = evaluate(audit, truth)
    except (OSError, ValueError, KeyError, TruthError) as err:
        print(f"evaluate: error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"matrix": ev.matrix, "recall": round(ev.recall, 3),
                          "precision": round(ev.precision, 3),
                          "convertible": ev.convertible, "found": ev.true_positive,
                          "wrong_conversions": ev.wrong_conversions,
                          "disagreements": [list(d) for d in ev.disagreements]},
                         indent=1, sort_keys=True))
    else:
        print(render(ev, truth))
    return 1 if ev.wrong_conversions else 0


if __name__ == "__main__":
    sys.exit(main())
