"""make evaluate: the audit against the truth file, each figure with a case that
must move it and one that must not."""

import json
from pathlib import Path

import pytest

from classify.evaluate import Label, TruthError, evaluate, load_truth, main

REPO = Path(__file__).resolve().parents[2]


def audit(*pairs):
    return {"schema": "sem2mutex-audit-1", "kernel_version": "6.1.192",
            "semaphores": [{"id": i, "class": c, "reasons": [f"because {c}"],
                            "declared": {"path": "f.c", "line": 1}} for i, c in pairs]}


def truth(*pairs):
    return {i: Label(i, lab, "high", "f.c:1", "n") for i, lab in pairs}


def test_a_found_convertible_semaphore_counts_for_recall():
    ev = evaluate(audit(("a", "mutex"), ("b", "unknown")),
                  truth(("a", "mutex"), ("b", "completion")))
    assert (ev.true_positive, ev.convertible, ev.wrong_conversions) == (1, 2, 0)
    assert ev.recall == 0.5 and ev.precision == 1.0
    assert [d[0] for d in ev.disagreements] == ["b"]


def test_a_conversion_of_a_counting_semaphore_is_caught():
    ev = evaluate(audit(("a", "mutex"), ("b", "completion")),
                  truth(("a", "counting"), ("b", "mutex")))
    assert ev.wrong_conversions == 2 and ev.precision == 0.0
    assert len(ev.disagreements) == 2


def test_counting_or_unknown_for_a_semaphore_that_stays_one_is_no_disagreement():
    ev = evaluate(audit(("a", "unknown"), ("b", "counting"), ("c", "unknown")),
                  truth(("a", "counting"), ("b", "counting"), ("c", "unclear")))
    assert ev.disagreements == [] and ev.recall == 1.0


def test_a_truth_file_must_label_every_semaphore_of_the_audit():
    with pytest.raises(TruthError, match="1 not labelled"):
        evaluate(audit(("a", "mutex"), ("b", "mutex")), truth(("a", "mutex")))


@pytest.mark.parametrize("version", ["6.1.192", "6.12.118"])
def test_the_committed_truth_file_labels_the_committed_audit(version):
    t = load_truth(REPO / "classify" / "truth" / f"linux-{version}.tsv")
    a = json.loads((REPO / "reports" / f"linux-{version}" / "audit.json").read_text())
    assert set(t) == {s["id"] for s in a["semaphores"]}
    assert all(lab.evidence and lab.note for lab in t.values())


@pytest.mark.parametrize("version", ["6.1.192", "6.12.118"])
def test_the_committed_audit_converts_nothing_labelled_otherwise(version):
    """The acceptance of the audit on both trees: no mutex or completion verdict
    for a semaphore the labels put in another pool."""
    t = load_truth(REPO / "classify" / "truth" / f"linux-{version}.tsv")
    a = json.loads((REPO / "reports" / f"linux-{version}" / "audit.json").read_text())
    assert evaluate(a, t).wrong_conversions == 0


def test_the_command_exits_1_on_a_wrong_conversion(tmp_path, capsys):
    (tmp_path / "a.json").write_text(json.dumps(audit(("a", "mutex"))))
    (tmp_path / "t.tsv").write_text("id\tlabel\tconfidence\tevidence\tnote\n"
                                    "a\tcounting\thigh\tf.c:1\tcount 2\n")
    assert main(["--audit", str(tmp_path / "a.json"), "--truth", str(tmp_path / "t.tsv")]) == 1
    assert "precision 0.00" in capsys.readouterr().out
    (tmp_path / "t.tsv").write_text("id\tlabel\tconfidence\tevidence\tnote\n"
                                    "a\tmutex\thigh\tf.c:1\tlock\n")
    assert main(["--audit", str(tmp_path / "a.json"), "--truth", str(tmp_path / "t.tsv")]) == 0
