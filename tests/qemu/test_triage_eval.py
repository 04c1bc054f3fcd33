"""qemu/triageeval.py and qemu/triagefigures.py: triage measured against hand labels.

A corpus of small syzkaller-style fixtures written here (syzkaller's own are not
copied into the project) gives each figure a known value; the committed measurement
(reports/linux-6.1.192/triage-eval.json) is tied to the labels of qemu/truth/, to a
new run over the committed runtime logs, and to the table of docs/figures.md.  With
SYZKALLER_FIXTURES=<syzkaller>/pkg/report/testdata/linux/report the syzkaller column
is measured again too.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from qemu import cli, triage, triagefigures, triageeval

REPO = Path(__file__).resolve().parents[2]
SEM = "drivers/e/v.c:dev.sem"
AUDIT = {"kernel_version": "9.9.0", "semaphores": [
    {"id": SEM, "class": "counting", "declared": {"path": "drivers/e/v.c", "line": 3,
                                                  "kind": "member"},
     "init": [{"path": "drivers/e/v.c", "line": 40}],
     "ops": [{"path": "drivers/e/v.c", "line": 20, "op": "down", "function": "v_lock"},
             {"path": "drivers/e/v.c", "line": 30, "op": "up", "function": "v_unlock"}]}]}


def log(*lines: str) -> str:
    return "".join(f"[  100.{n:06d}] {ln}\n" for n, ln in enumerate(lines))


TRACE_TAIL = (" v_ioctl+0x10/0x20", " __x64_sys_ioctl+0x10/0x20", " do_syscall_64+0x1/0x2")
FIXTURES = {
    # a task hung in down() that v_lock() called: pinned, and named
    "1": "TITLE: INFO: task hung in v_lock\nTYPE: HANG\n\n" + log(
        "INFO: task a.out:123 blocked for more than 143 seconds.",
        "      Not tainted 5.10.0 #1", "Call Trace:", " __schedule+0x1/0x2",
        " schedule+0x1/0x2", " __down+0x1/0x2", " down+0x1/0x2", " v_lock+0x10/0x20",
        *TRACE_TAIL) + "\nREPORT:\nINFO: task a.out:123 blocked for more than 143 seconds.\n"
    " down+0x1/0x2\n v_lock+0x10/0x20\n",
    # a page fault whose trace passes v_lock(): screened ("? down"), labelled none
    "2": "TITLE: BUG: unable to handle kernel paging request in v_read\n\n" + log(
        "BUG: unable to handle page fault for address: 0000000000000008",
        "RIP: 0010:v_read+0x10/0x20", "Call Trace:", " ? down+0x1/0x2",
        " v_lock+0x10/0x20", *TRACE_TAIL),
    # sleeping in atomic, the check in v_lock() itself: pinned, and named
    "3": "TITLE: BUG: sleeping function called from invalid context in v_lock\n\n" + log(
        "BUG: sleeping function called from invalid context at drivers/e/v.c:19",
        "in_atomic(): 1, irqs_disabled(): 1, non_block: 0, pid: 7, name: a.out",
        "Call Trace:", " dump_stack_lvl+0x1/0x2", " __might_resched+0x1/0x2",
        " v_lock+0x10/0x20", *TRACE_TAIL),
    # a lockdep report about two other locks
    "4": "# a comment line in the header\nTITLE: possible deadlock in v_ioctl\n\n" + log(
        "======================================================",
        "WARNING: possible circular locking dependency detected",
        "a.out/7 is trying to acquire lock:",
        "ffff888000000000 (&a->lock){+.+.}-{3:3}, at: v_ioctl+0x10/0x20",
        "but task is already holding lock:",
        "ffff888000000001 (&b->lock){+.+.}-{3:3}, at: v_ioctl+0x10/0x20"),
    # a warning the labels pin on the semaphore, with no link triage can state: missed
    "5": "TITLE: WARNING in v_ioctl\n\n" + log(
        "WARNING: CPU: 0 PID: 7 at drivers/e/v.c:22 v_ioctl+0x10/0x20",
        "Call Trace:", *TRACE_TAIL),
    # a log of no report: an empty header
    "6": "\n" + log("usb 1-1: new high-speed USB device number 2 using dummy_hcd"),
}
LABELS = (f"# log\tkind\ttitle\tsemaphore\twhy\n"
          f"1\thung_task\t*\t{SEM}\tdown() from v_lock()\n"
          f"2\toops\t*\t-\ta fault in v_read()\n"
          f"3\tsleep_in_atomic\tv_lock\t{SEM}\tv_lock()'s might_sleep() before its down()\n"
          f"5\twarning\t*\t{SEM}\tthe count the semaphore keeps disagrees\n")


@pytest.fixture
def corpus(tmp_path):
    fixtures = tmp_path / "report"
    fixtures.mkdir()
    for name, text in FIXTURES.items():
        (fixtures / name).write_text(text)
    (tmp_path / "labels.tsv").write_text(LABELS)
    (tmp_path / "audit.json").write_text(json.dumps(AUDIT))
    return tmp_path


def run_eval(corpus: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "qemu", "triage-eval", "syzkaller",
                           str(corpus / "report"), "--labels", str(corpus / "labels.tsv"),
                           "--audit", str(corpus / "audit.json"), *extra], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


def figures(corpus: Path, capsys, *extra: str) -> tuple[int, dict]:
    rc = cli.main(["triage-eval", "syzkaller", str(corpus / "report"), "--labels",
                   str(corpus / "labels.tsv"), "--audit", str(corpus / "audit.json"),
                   "--json", *extra])
    return rc, json.loads(capsys.readouterr().out)


def test_each_figure_of_a_small_corpus(corpus, capsys):
    rc, fig = figures(corpus, capsys)
    assert rc == 0
    assert (fig["logs"], fig["reports"], fig["named"], fig["pinned"], fig["found"]) == \
        (6, 5, 2, 3, 2)          # the REPORT: section of "1" is not a report of its own
    assert fig["wrong"] == [] and fig["unlabelled"] == [] and fig["stale"] == []
    assert [(m["log"], m["kind"]) for m in fig["missed"]] == [("5", "warning")]
    assert fig["recall"] == 0.667 and fig["screened"] == 2
    links = {a["log"]: a["link"] for a in fig["attributions"]}
    assert "v_lock(), the caller of down()" in links["1"]
    assert "v_lock(), where might_sleep() fired (drivers/e/v.c:19" in links["3"]
    # the line is that of the fixture file, header included
    assert [a["line"] for a in fig["attributions"]] == [4, 3]
    text = run_eval(corpus)
    assert text.returncode == 0 and "wrongly: 0" in text.stdout
    assert "missed: 1; recall 0.67" in text.stdout


def test_a_wrong_name_an_unlabelled_report_and_a_stale_label_fail(corpus, capsys):
    labels = corpus / "labels.tsv"
    labels.write_text(LABELS.replace(f"1\thung_task\t*\t{SEM}", "1\thung_task\t*\t-"))
    rc, fig = figures(corpus, capsys)
    assert rc == 1 and [w["log"] for w in fig["wrong"]] == ["1"]
    labels.write_text("".join(ln + "\n" for ln in LABELS.splitlines() if not
                              ln.startswith("2\t")) + "7\toops\t*\t-\tno such fixture\n")
    rc, fig = figures(corpus, capsys)
    assert rc == 1 and fig["wrong"] == []
    assert [(u["log"], u["screen"]) for u in fig["unlabelled"]] == [
        ("2", ["semaphore API frame"])]
    assert len(fig["stale"]) == 1 and "7 oops" in fig["stale"][0]


def test_the_figures_are_merged_into_one_file(corpus, capsys, tmp_path):
    out = tmp_path / "eval.json"
    out.write_text(json.dumps({"schema": triageeval.SCHEMA, "corpora": {
        "runtime": {"kept": True}}}))
    rc, _ = figures(corpus, capsys, "--out", str(out))
    data = json.loads(out.read_text())
    assert rc == 0 and data["corpora"]["runtime"] == {"kept": True}
    assert data["corpora"]["syzkaller"]["found"] == 2


@pytest.mark.parametrize("rule,catch,leave", [
    ("semaphore API frame", " ? __down_interruptible+0x6b0/0x6b0", " down_read+0xa4/0x150"),
    ("semaphore API frame", "[<c0123>] (down) from [<c0456>] (f+0x1/0x2)",
     "[<c0123>] (down_write) from [<c0456>] (f+0x1/0x2)"),
    ("console_sem", " ? __down_trylock_console_sem+0x70/0x1e0", " is_console_locked+0x1/0x2"),
    ("semaphore lock class", "((console_sem).lock){-.-.}", "(&tty->ldisc_sem){++++}"),
    ("per-site class", "(&queue->sema@drivers/usb/gadget/legacy/raw_gadget.c:57){+.+.}",
     "(&sb->s_type->i_mutex_key#7){++++}"),
    ("mutex_debug", "mutex_debug console_sem.lock: up() in interrupt context",
     "mutex_lock_nested+0x1/0x2"),
    ("blocked on a semaphore", "INFO: task a:1 blocked on a semaphore likely last held by "
     "task b:2", "INFO: task a:1 blocked on a mutex likely last held by task b:2"),
])
def test_the_screen(rule, catch, leave):
    assert rule in triageeval.screen([catch])
    assert rule not in triageeval.screen([leave])


def test_a_fixture_as_syzkaller_reads_it():
    assert triageeval.fixture_log("TITLE: x\nTYPE: HANG\n\nlog\n\nREPORT:\ncopy\n") == \
        ("log\n\n", 3)
    assert triageeval.fixture_log("\nlog of no report\n") == ("log of no report\n", 1)
    # the look-alikes: a console log, a header line syzkaller does not write
    assert triageeval.fixture_log("[    1.0] Linux version 6.1\n\nmore\n") is None
    assert triageeval.fixture_log("TITLE: x\nnot a header\n\nlog\n") is None


def refused(capsys, *args: str) -> str:
    """The one line of a user error (exit status 2) of `triage-eval args`."""
    assert cli.main(["triage-eval", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_bad_input_is_one_line_and_status_2(corpus, capsys):
    base = ["syzkaller", str(corpus / "report"), "--labels", str(corpus / "labels.tsv"),
            "--audit", str(corpus / "audit.json")]
    assert "give the fixtures' directory" in refused(capsys, "syzkaller")
    assert "not JSON" in refused(capsys, *base, "--audit", str(corpus / "labels.tsv"))
    (corpus / "report" / "9").write_text("[    1.0] a console log, no header\n\nx\n")
    assert "9 is no report fixture" in refused(capsys, *base)
    (corpus / "report" / "9").unlink()
    for bad, naming in (("1\thung_task\t*\t-\n", "not five tab-separated cells"),
                        ("1\thung\t*\t-\tx\n", "kind 'hung'"),
                        ("1\thung_task\t*\tno:sem\tx\n", "'no:sem' is no semaphore")):
        (corpus / "labels.tsv").write_text(bad)
        err = refused(capsys, *base)
        assert "labels.tsv:1" in err and naming in err
    (corpus / "labels.tsv").write_text(LABELS)
    err = refused(capsys, *base, "--out", "reports/linux-6.1.192/other.json")
    assert "--out" in err and "committed" in err
    assert "is a directory" in refused(capsys, *base, "--out", str(corpus))
    empty = corpus / "empty"
    empty.mkdir()
    assert "no log in it" in refused(capsys, "runtime", str(empty))
    assert "no such directory" in refused(capsys, "runtime", str(corpus / "absent"))
    with pytest.raises(SystemExit) as ex:          # argparse's own, one line too
        cli.main(["triage-eval", "nonesuch", str(empty)])
    assert ex.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_help(capsys):
    with pytest.raises(SystemExit) as ex:
        cli.main(["triage-eval", "--help"])
    out = capsys.readouterr().out
    assert ex.value.code == 0 and "recall" in out and "syzkaller" in out


# ------------------------------------------------------------------ the committed figures

COMMITTED = json.loads(triageeval.FIGURES.read_text())


@pytest.mark.parametrize("corpus_name", triageeval.CORPORA)
def test_the_committed_figures_are_of_the_labels_there_are(corpus_name):
    fig = COMMITTED["corpora"][corpus_name]
    labels = REPO / fig["labels"]
    assert labels == triageeval.TRUTH / f"triage-{corpus_name}.tsv"
    assert fig["labels_sha256"] == triageeval.label_digest(labels), \
        f"{labels} changed: measure again (python3 -m qemu triage-eval {corpus_name} ...)"
    # the acceptance: no semaphore named wrongly, the labels cover the corpus
    assert fig["wrong"] == [] and fig["unlabelled"] == [] and fig["stale"] == []


def fresh(corpus_name: str, directory: Path) -> dict:
    audit = json.loads(triageeval.AUDIT.read_text())
    fig = triageeval.evaluate(corpus_name, directory, triageeval.TRUTH /
                              f"triage-{corpus_name}.tsv", audit,
                              triage.tree_links(None, audit)).to_json()
    return {k: v for k, v in fig.items() if k not in ("date", "source", "tree_links")}


def test_the_runtime_figures_are_a_new_run_over_the_committed_logs():
    old = {k: v for k, v in COMMITTED["corpora"]["runtime"].items()
           if k not in ("date", "source", "tree_links")}
    assert fresh("runtime", triageeval.RUNTIME_LOGS) == old


@pytest.mark.skipif(not os.environ.get("SYZKALLER_FIXTURES"),
                    reason="SYZKALLER_FIXTURES=<syzkaller>/pkg/report/testdata/linux/report "
                    "not given")
def test_the_syzkaller_figures_are_a_new_run_over_the_fixtures():
    old = {k: v for k, v in COMMITTED["corpora"]["syzkaller"].items()
           if k not in ("date", "source", "tree_links")}
    new = fresh("syzkaller", Path(os.environ["SYZKALLER_FIXTURES"]))
    assert new["logs_sha256"] == old["logs_sha256"], "another version of the fixtures"
    assert new == old


def test_the_docs_table_is_the_committed_figures(tmp_path):
    assert triagefigures.main(["--check"]) == 0
    # a changed measurement is caught, and the table made again from it
    bumped = json.loads(json.dumps(COMMITTED))
    bumped["corpora"]["runtime"]["found"] -= 1
    changed = tmp_path / "eval.json"
    changed.write_text(json.dumps(bumped))
    assert triagefigures.main(["--check", "--json", str(changed)]) == 1
    doc = tmp_path / "figures.md"
    doc.write_text(triagefigures.DOC.read_text())
    assert triagefigures.main(["--doc", str(doc), "--json", str(changed)]) == 0
    assert triagefigures.main(["--check", "--doc", str(doc), "--json", str(changed)]) == 0
    assert doc.read_text() != triagefigures.DOC.read_text()
