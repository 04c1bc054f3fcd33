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

from classify.inputs import USER_ERRORS, InputError, OneLineParser, fail, load_audit, shown
from classify.paths import PROJECT_DIR, REPORTS_DIR, default_out
from classify.tree import check_kernel_tree

TRUTH_DIR = PROJECT_DIR / "classify" / "truth"
LABELS = ("mutex", "completion", "counting", "unclear")
CLASSES = ("mutex", "completion", "counting", "unknown")
CONVERTIBLE = ("mutex", "completion")
DEFAULT_VERSION = "6.1.192"     # the default tree's (make setup: work/linux-6.1)


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


def labelled_versions() -> list[str]:
    """The versions classify/truth/ has hand labels for."""
    return sorted(p.stem.removeprefix("linux-") for p in TRUTH_DIR.glob("linux-*.tsv"))


def inputs(args: argparse.Namespace) -> tuple[Path, dict, Path, str]:
    """(audit.json, its data, truth file, version): those of KERNEL= (the audit
    `make audit` wrote for it), of --version, or of the audit given (its
    kernel_version)."""
    if args.kernel is not None:
        tree = check_kernel_tree(args.kernel)
        version = tree.version
        audit_path = args.audit or default_out(tree.path, version) / "audit.json"
    elif args.audit is not None:
        audit_path = args.audit
        version = args.version or ""
    else:
        version = args.version or DEFAULT_VERSION
        audit_path = REPORTS_DIR / f"linux-{version}" / "audit.json"
    audit = load_audit(audit_path, "audit")
    version = version or audit["kernel_version"]
    if audit["kernel_version"] != version:
        raise InputError(f"audit {audit_path}: an audit of Linux "
                         f"{audit['kernel_version']}, not of Linux {version}")
    truth_path = args.truth or TRUTH_DIR / f"linux-{version}.tsv"
    if not truth_path.is_file():
        raise InputError(f"Linux {version}: no hand labels to evaluate the audit against "
                         f"({shown(truth_path)} does not exist; labelled: "
                         f"{', '.join(labelled_versions()) or 'none'})")
    return audit_path, audit, truth_path, version


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(
        prog="python3 -m classify.evaluate",
        description="The audit against the truth file: confusion matrix, precision and "
                    "recall of the convertible pools, and every disagreement.  Exit "
                    "status 0, 1 when a mutex/completion verdict contradicts a label, "
                    "2 for bad input (no audit, no labels for the version).")
    parser.add_argument("--kernel", type=Path, help="a kernel tree (make's KERNEL=, "
                        "TREE=): the audit `make audit` wrote for it, against the labels "
                        "of its version")
    parser.add_argument("--version", default=None, help=f"kernel version (default: "
                        f"{DEFAULT_VERSION}): reports/linux-V/audit.json, "
                        "classify/truth/linux-V.tsv")
    parser.add_argument("--audit", type=Path, help="audit.json to evaluate")
    parser.add_argument("--truth", type=Path, help="truth file (TSV)")
    parser.add_argument("--json", action="store_true", help="the figures as JSON")
    args = parser.parse_args(argv)
    try:
        audit_path, audit, truth_path, version = inputs(args)
        truth = load_truth(truth_path)
        ev = evaluate(audit, truth)
    except (*USER_ERRORS, OSError, ValueError, KeyError, TruthError) as err:
        return fail(err, "evaluate: error: ")
    if args.json:
        print(json.dumps({"kernel_version": version, "audit": shown(audit_path),
                          "truth": shown(truth_path),
                          "matrix": ev.matrix, "recall": round(ev.recall, 3),
                          "precision": round(ev.precision, 3),
                          "convertible": ev.convertible, "found": ev.true_positive,
                          "wrong_conversions": ev.wrong_conversions,
                          "disagreements": [list(d) for d in ev.disagreements]},
                         indent=1, sort_keys=True))
    else:
        print(f"evaluate: Linux {version}: {shown(audit_path)} against the hand labels "
              f"of {shown(truth_path)}")
        print(render(ev, truth))
    return 1 if ev.wrong_conversions else 0


if __name__ == "__main__":
    sys.exit(main())
