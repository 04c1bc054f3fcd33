"""The committed runtime record is what its committed artifacts say.

reports/linux-6.1.192/runtime/ holds each boot's console log and each failed build's
compiler errors; runtime.json is re-derived from them with the code the run uses
(qemu.runrecord.derive) and must be the same bytes.  Negative controls: an edited log,
an edited build error or an edited record no longer agree.  The runtime table of
docs/runtime.md is the one runtime.json gives."""

import json
import re
import shutil
from pathlib import Path

import pytest

from classify import lockmap
from classify.records.runtime import RuntimeRecord
from classify.report import readme
from classify.report.runtime import summary_line
from qemu import parse, runrecord
from qemu.scenarios import load_scenario

REPO = Path(__file__).resolve().parents[2]
REPORTS = REPO / "reports" / "linux-6.1.192"
ARTS = REPORTS / "runtime"
AUDIT = json.loads((REPORTS / "audit.json").read_text())
COMMITTED = (REPORTS / "runtime.json").read_text()
RECORD = json.loads(COMMITTED)
RUN = json.loads((ARTS / "run.json").read_text())
LOG_BOOTS = [b for b in RUN["boots"] if "log" in b]
RUNTIME_DOC = REPO / "docs" / "runtime.md"     # holds the generated runtime table
REPORTS_612 = REPO / "reports" / "linux-6.12.118"
RECORD_612 = REPORTS_612 / "runtime.json"
AUDIT_612 = json.loads((REPORTS_612 / "audit.json").read_text())


def test_runtime_json_is_derived_from_the_committed_artifacts():
    assert runrecord.derive(AUDIT, ARTS).dumps() == COMMITTED


def test_every_artifact_belongs_to_a_boot_and_every_boot_has_one():
    named = {b.get("log") or b.get("build_errors") for b in RUN["boots"]} - {None}
    # and each conversion patch booted to its variant
    named |= {v["patch"] for v in RUN["variants"].values() if v.get("patch")}
    assert named == {p.name for p in ARTS.iterdir()} - {runrecord.RUN_FILE}
    assert [b["name"] for b in RUN["boots"]] == list(RECORD["boots"]) or \
        sorted(b["name"] for b in RUN["boots"]) == sorted(RECORD["boots"])


def copy_of_artifacts(tmp_path: Path) -> Path:
    dest = tmp_path / "runtime"
    shutil.copytree(ARTS, dest)
    return dest


def violated_with_class() -> tuple[str, dict]:
    """A semaphore a boot with a log reported, and that boot's entry (with its class)."""
    for sid, rec in sorted(RECORD["semaphores"].items()):
        for e in rec.get("boots", []):
            if e["result"] == "violated" and e.get("lock_class"):
                return sid, e
    pytest.skip("no violated record with a lock class")


def test_an_edited_log_no_longer_gives_the_committed_record(tmp_path):
    sid, entry = violated_with_class()
    arts = copy_of_artifacts(tmp_path)
    log = arts / next(b["log"] for b in LOG_BOOTS if b["name"] == entry["boot"])
    text = log.read_text(errors="replace")
    assert entry["lock_class"] in text
    log.write_text(text.replace(entry["lock_class"], "&edited->lock@kernel/edited.c:1"))
    edited = runrecord.derive(AUDIT, arts)
    assert edited.dumps() != COMMITTED
    assert edited.semaphores[sid].to_json() != RECORD["semaphores"][sid]


def test_an_edited_build_error_no_longer_gives_the_committed_record(tmp_path):
    failed = [b for b in RUN["boots"] if "build_errors" in b]
    if not failed:
        pytest.skip("every variant built")
    arts = copy_of_artifacts(tmp_path)
    path = arts / failed[0]["build_errors"]
    path.write_text(path.read_text().replace("error:", "error: edited:", 1))
    assert runrecord.derive(AUDIT, arts).dumps() != COMMITTED


def test_an_edited_record_is_not_what_the_artifacts_give():
    sid, entry = violated_with_class()
    edited = json.loads(COMMITTED)
    edited["semaphores"][sid]["title"] = "WARNING: lock held when returning to user space!" \
        if "bad unlock" in edited["semaphores"][sid]["title"] else \
        "WARNING: bad unlock balance detected!"
    assert runrecord.derive(AUDIT, ARTS).to_json() != edited


@pytest.mark.parametrize("boot", LOG_BOOTS, ids=[b["name"] for b in LOG_BOOTS])
def test_each_report_is_about_the_semaphore_its_kernel_left_a_mutex(boot):
    """A trust boot reports nothing; a challenge or probe boot reports only on the one
    semaphore it leaves a debug mutex (what the run's evaluation requires), but for the
    reports about no semaphore its scenario declares (bcache's reboot, a hang)."""
    text = (ARTS / boot["log"]).read_text(errors="replace")
    parsed = parse.parse_log(text)
    assert f"s2m.scenario={boot['scenario']}" in text
    index = lockmap.build_index(AUDIT["semaphores"])
    unmarked = boot["variant"][len("unmark:"):] if boot["variant"].startswith("unmark:") \
        else None
    declared = load_scenario(boot["scenario"]).reports
    reports = [r for r in parsed.reports if not any(d.matches(r) for d in declared)]
    for r in reports:
        assert unmarked in lockmap.report_ids(r, index), r.title
    if unmarked is None:
        assert reports == []


# -- every report of a boot, in order -----------------------------------------------------

UDLFB = "include/video/udlfb.h:urb_list.limit_sem"
UDLFB_CLASS = "&dlfb->urbs.limit_sem@drivers/video/fbdev/udlfb.c:1933"
# three reports of one boot, cut down from the committed udlfb challenge log
THREE = f"""KTAP version 1
# s2m-init scenario: runtime-udlfb-challenge
1..2
ok 1 boot
=====================================
WARNING: bad unlock balance detected!
6.1.192+ #1 Not tainted
-------------------------------------
kworker/0:0/3 is trying to release lock ({UDLFB_CLASS}) at:
[<ffffffffa415244b>] mutex_debug_up+0x46/0x49
but there are no more locks to release!

stack backtrace:
CPU: 0 PID: 3 Comm: kworker/0:0 Not tainted 6.1.192+ #1
Call Trace:
 <TASK>
 mutex_debug_up+0x46/0x49
 dlfb_usb_probe+0x5ce/0x822
 usb_probe_interface+0x13d/0x195
 </TASK>
------------[ cut here ]------------
mutex_debug {UDLFB_CLASS}: up() in interrupt context, a mutex is for task context only
WARNING: CPU: 0 PID: 3 at include/linux/semaphore.h:185 mutex_debug_up+0x3c/0x49
Call Trace:
 <IRQ>
 dlfb_urb_completion+0xa4/0xab
 __usb_hcd_giveback_urb+0x67/0xa0
 </IRQ>
---[ end trace 0000000000000000 ]---
ok 2 workload:udlfb
# lockdep-class: (____ptrval____) OPS:       1 FD:    4 BD:    1 +.+.: {UDLFB_CLASS}
s2m-init: done
INFO: task kworker/0:0:3 blocked for more than 120 seconds.
      Tainted: G        W          6.1.192+ #1
task:kworker/0:0     state:D stack:0     pid:3     ppid:2      flags:0x00004000
Call Trace:
 <TASK>
 __schedule+0x453/0x495
 schedule+0x80/0xaf
 __mutex_lock+0x1ca/0x291
 mutex_lock_nested+0x16/0x18
 dlfb_free_urb_list+0x6e/0xe0
 dlfb_usb_disconnect+0x2d/0x6b
 </TASK>
s2m-harness: qemu exited with status 0 after 20.0 s
"""


def one_boot_run(tmp_path: Path, text: str) -> Path:
    """A run directory of one challenge boot whose log is text."""
    arts = tmp_path / "runtime"
    arts.mkdir(parents=True)
    (arts / "b.log").write_text(text)
    variant = f"unmark:{UDLFB}"
    (arts / runrecord.RUN_FILE).write_text(json.dumps({
        "schema": runrecord.RUN_SCHEMA, "kernel_version": "6.1.192", "config": "x",
        "trust_marks": [UDLFB], "built": ["drivers/video/fbdev/udlfb.c"],
        "boots": [{"name": "b", "scenario": "runtime-udlfb-challenge", "variant": variant,
                   "log": "b.log"}],
        "variants": {"trust": {"marked": [UDLFB], "not_marked": {}},
                     variant: {"unmarks": UDLFB}}}))
    return arts


def headline_line(text: str, start: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith(start))


def test_a_log_with_three_reports_keeps_all_three_in_order(tmp_path):
    """Every report of a boot is in its record, in log order, with its lock classes,
    its function and its line; the semaphore's record shows the first and counts the
    other two."""
    record = runrecord.derive(AUDIT, one_boot_run(tmp_path, THREE))
    got = [(r.kind, r.title, r.lock_classes, r.function, r.line)
           for r in record.boots["b"].reports]
    assert got == [
        ("bad_unlock_balance", "WARNING: bad unlock balance detected! in dlfb_usb_probe",
         [UDLFB_CLASS], "dlfb_usb_probe",
         headline_line(THREE, "WARNING: bad unlock balance")),
        ("mutex_debug_context", f"mutex_debug {UDLFB_CLASS}: up() in interrupt context, a "
         "mutex is for task context only in dlfb_urb_completion", [UDLFB_CLASS],
         "dlfb_urb_completion", headline_line(THREE, "mutex_debug ")),
        ("hung_task", "INFO: task kworker/0:0 blocked for more than N seconds in "
         "dlfb_free_urb_list", [], "dlfb_free_urb_list", headline_line(THREE, "INFO: task")),
    ]
    assert [r.ids for r in record.boots["b"].reports[:2]] == [[UDLFB], [UDLFB]]
    rec = record.semaphores[UDLFB]
    assert (rec.status, rec.kind, rec.boot) == ("violated", "bad_unlock_balance", "b")
    assert rec.boots[-1].more == 2
    # the tables: the first report, and the two others counted
    assert "; 2 more reports in b" in summary_line(rec)
    assert "; 2 more reports in b: mutex_debug_context, hung_task" in readme.said(
        rec, record.boots)
    # negative control: a log with the first report alone has no others to count
    first = THREE.split("------------[ cut here ]")[0] + "s2m-init: done\n"
    alone = runrecord.derive(AUDIT, one_boot_run(tmp_path / "alone", first))
    assert [r.kind for r in alone.boots["b"].reports] == ["bad_unlock_balance"]
    assert alone.semaphores[UDLFB].boots[-1].more is None
    assert "more report" not in summary_line(alone.semaphores[UDLFB])


def kinds_titles(boot: str) -> list[tuple[str, str]]:
    return [(r["kind"], r["title"]) for r in RECORD["boots"][boot]["reports"]]


def test_the_committed_records_keep_every_report_of_their_logs():
    """What the first report alone hid: udlfb's up() in interrupt context and hung
    worker, smscufx's recursive locking and hung reboot, bcache's second report."""
    udlfb = kinds_titles("runtime-udlfb-challenge.1")
    assert ("mutex_debug_context", f"mutex_debug {UDLFB_CLASS}: up() in interrupt context, "
            "a mutex is for task context only in dlfb_urb_completion") in udlfb
    assert ("hung_task", "INFO: task kworker/0:0 blocked for more than N seconds in "
            "dlfb_free_urb_list") in udlfb
    smscufx = kinds_titles("runtime-smscufx-challenge.1")
    assert ("recursive_locking", "WARNING: possible recursive locking detected in "
            "ufx_free_urb_list") in smscufx
    assert "hung_task" in [k for k, _ in smscufx]
    reports = RECORD["boots"]["runtime-smscufx-challenge.1"]["reports"]
    # a WARNING's function is its own, a harness's hang names none
    assert [(r["kind"], r["function"]) for r in reports if r["kind"] in ("warning", "hang")] \
        == [("warning", "ufx_usb_probe"), ("hang", "")]
    assert reports[0]["lock_classes"] == [
        "&dev->urbs.limit_sem@drivers/video/fbdev/smscufx.c:1926"]
    bcache = [kinds_titles(f"runtime-bcache-cache-set-sb-write-mutex-challenge.{i}")
              for i in (1, 2, 3)]
    # the bad unlock balance depends on timing: in some of the boots
    assert 1 <= sum("bad_unlock_balance" in [k for k, _ in b] for b in bcache) <= 3
    assert [len(b) for b in bcache] == [2, 2, 2]


@pytest.mark.parametrize("boot", LOG_BOOTS, ids=[b["name"] for b in LOG_BOOTS])
def test_each_report_of_the_record_is_at_its_line_of_the_log(boot):
    lines = (ARTS / boot["log"]).read_text(errors="replace").splitlines()
    reports = RECORD["boots"][boot["name"]]["reports"]
    assert [r["line"] for r in reports] == sorted(r["line"] for r in reports)
    for r in reports:
        head = lines[r["line"] - 1]
        assert head.split(":", 1)[0] in r["title"] or r["kind"] in ("warning", "hang"), \
            (r, head)
        assert all(c in "\n".join(lines) for c in r["lock_classes"])
        assert not r["function"] or r["function"] in "\n".join(
            lines[r["line"] - 1:r["line"] + 200])


def test_the_docs_table_is_the_one_runtime_json_gives():
    text = RUNTIME_DOC.read_text()
    block = readme.table(RuntimeRecord.from_json(RECORD), AUDIT)
    assert block in text
    assert readme.replace_block(text, block) == text
    # negative control: a document whose table says something else is caught
    row = next(ln for ln in block.splitlines() if ln.startswith("| `"))
    wrong = text.replace(row, row.replace("|", "| edited", 1), 1)
    assert block not in wrong
    assert readme.main(["--check", "--readme", str(RUNTIME_DOC)]) == 0


def test_the_table_check_fails_on_an_edited_table(tmp_path, capsys):
    text = RUNTIME_DOC.read_text()
    row = next(ln for ln in readme.table(RuntimeRecord.from_json(RECORD), AUDIT).splitlines()
               if ln.startswith("| `"))
    edited = tmp_path / "runtime.md"
    edited.write_text(text.replace(row, row + " edited", 1))
    start = tmp_path / "README.md"
    start.write_text(README.read_text())
    args = ["--readme", str(edited), "--start-page", str(start)]
    assert readme.main(["--check", *args]) == 1
    assert "not the one runtime.json gives" in capsys.readouterr().err
    assert readme.main(args) == 0
    assert edited.read_text() == text and start.read_text() == README.read_text()


# -- the runtime figures of the documents: generated, and typed nowhere else -------------

README = REPO / "README.md"
FIGURES_DOC = REPO / "docs" / "figures.md"
QEMU_README = REPO / "qemu" / "README.md"


def test_the_readme_row_is_generated_and_checked(tmp_path, capsys):
    text = README.read_text()
    assert readme.replace_row(text, REPO / "reports") == text
    row = next(ln for ln in text.splitlines() if ln.startswith(f"| {readme.ROW_LABEL} |"))
    figures = readme.figures(RuntimeRecord.from_json(RECORD), AUDIT)
    assert f"| {figures.ran} of {len(AUDIT['semaphores'])} (" in row
    other = RuntimeRecord.from_json(json.loads(RECORD_612.read_text()))
    assert row.endswith(f"| {readme.figures(other, AUDIT_612).ran} of "
                        f"{len(AUDIT_612['semaphores'])} ([docs/runtime.md](docs/runtime.md)) |")
    # negative control: a hand-typed figure in the row is caught, and made again
    start = tmp_path / "README.md"
    start.write_text(text.replace(row, row.replace(f"| {figures.ran} of", "| 32 of", 1)))
    args = ["--readme", str(RUNTIME_DOC), "--start-page", str(start)]
    assert readme.main(["--check", *args]) == 1
    assert "runtime row is not the one" in capsys.readouterr().err
    assert readme.main(args) == 0 and start.read_text() == text


def test_the_figures_count_what_the_docs_say_they_count():
    """Each figure from the files themselves, not through the generator: a semaphore
    ran when an entry of its record has OPS > 0; boots are run.json's boots with a
    log (the trust boots among them counted as boots, not kernels)."""
    f = readme.figures(RuntimeRecord.from_json(RECORD), AUDIT)
    ran = [sid for sid, r in RECORD["semaphores"].items()
           if any(e.get("ops", 0) > 0 for e in r.get("boots", []))]
    assert f.ran == len(ran)
    # reported but never ran: the WARNING of its sema_init() only
    assert "drivers/md/dm-core.h:mapped_device.swap_bios_semaphore" not in ran
    assert RECORD["semaphores"]["drivers/md/dm-core.h:mapped_device.swap_bios_semaphore"][
        "status"] == "violated"
    assert f.boots == len(LOG_BOOTS) == len(list(ARTS.glob("*.log")))
    assert f.trust == sum(b["variant"] == "trust" for b in LOG_BOOTS)
    assert f.trust + f.challenge + f.probe + f.converted == f.boots
    assert f.converted == sum(b["variant"].startswith("convert:") for b in LOG_BOOTS)
    assert f.kernels == len({b["variant"] for b in LOG_BOOTS})
    assert f.variants == len(RUN["variants"])
    assert f.not_built == len({b["variant"] for b in RUN["boots"] if "build_errors" in b})
    text = readme.figures_text(RuntimeRecord.from_json(RECORD), AUDIT)
    assert f"{f.ran} of the audit's {len(AUDIT['semaphores'])} semaphores ran" in text
    assert f"{f.boots} boots of {f.kernels} kernels" in text
    assert f"{f.trust} boots of the trust kernel" in text


NUMBER = (r"\b(?:\d[\d,]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|"
          r"twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|"
          r"twenty\S*|thirty\S*)")
COUNTED = r"(?:boots?|logs?|kernels|variants|semaphores|challenges|probes|exercised|ran)\b"
TYPED = re.compile(NUMBER + r"(?:\s+[^\s|;:.()]+){0,3}?\s+" + COUNTED, re.I)


def section(text: str, heading: str) -> str:
    """The section whose heading line starts with heading, up to the next heading of
    its level or above."""
    m = re.search(rf"^{re.escape(heading)}.*\n", text, re.M)
    assert m, heading
    level = len(heading.split(" ", 1)[0])
    return re.split(rf"^#{{1,{level}}} ", text[m.end():], maxsplit=1, flags=re.M)[0]


def runtime_prose() -> dict[str, str]:
    """The text about the runtime set that nothing generates: docs/runtime.md but its
    generated block, the README but its generated row, the runtime sections of
    qemu/README.md and of docs/figures.md (there the prose: its table's rows are
    dated measurements of earlier runs, each with its conditions)."""
    doc = RUNTIME_DOC.read_text()
    start, end = doc.index("<!-- runtime table:"), doc.index(readme.END)
    start_page = "\n".join(ln for ln in README.read_text().splitlines()
                           if not ln.startswith(f"| {readme.ROW_LABEL} |"))
    figures = "\n".join(ln for ln in section(FIGURES_DOC.read_text(),
                                             "### The runtime set").splitlines()
                        if not ln.startswith("|"))
    return {"docs/runtime.md": doc[:start] + doc[end:], "README.md": start_page,
            "qemu/README.md": section(QEMU_README.read_text(), "## The runtime set"),
            "docs/figures.md": figures}


def typed_figures(texts: dict[str, str]) -> list[str]:
    return [f"{name}: {m.group(0)!r}" for name, text in texts.items()
            for m in TYPED.finditer(text)]


def test_no_runtime_figure_is_typed_by_hand():
    """A count of the runtime set's boots, logs, kernels or semaphores outside the
    generated text drifts from the record ("24 trust boots" where run.json has 23, "all
    117 logs" where 94 exist): the documents say it only where it is generated."""
    texts = runtime_prose()
    assert all(texts.values())
    assert typed_figures(texts) == []
    # negative controls: the statements this test exists for are caught
    for wrong in ("the 24 trust boots are clean", "all 117 logs pass", "32 exercised",
                  "Nine do not build as a mutex: three semaphores",
                  "94 boots of 24 kernels"):
        assert typed_figures({"x": wrong}), wrong
    assert typed_figures({"x": "Kernel patch 0009 brings back the 2005 check"}) == []


def test_a_log_of_another_variant_is_refused(tmp_path):
    arts = copy_of_artifacts(tmp_path)
    boot = LOG_BOOTS[0]
    log = arts / boot["log"]
    text = log.read_text(errors="replace")
    line = next(ln for ln in text.splitlines() if "Kernel command line:" in ln)
    bare = re.sub(r" s2m\.variant=\S+", "", line)
    # its own variant named: the same record; another one: refused by name
    log.write_text(text.replace(line, f"{bare} s2m.variant={boot['variant']}"))
    assert runrecord.derive(AUDIT, arts).dumps() == COMMITTED
    log.write_text(text.replace(line, f"{bare} s2m.variant=unmark:x.c:other"))
    with pytest.raises(ValueError, match=f"{boot['log']}: the kernel booted says variant "
                                         "unmark:x.c:other"):
        runrecord.derive(AUDIT, arts)


def test_a_runtime_boot_names_its_variant_on_the_command_line():
    sc = load_scenario("runtime-parport")
    assert f"s2m.variant={sc.variant}" in sc.append().split()
    assert "s2m.variant" not in load_scenario("clean").append()   # not of the runtime set


def test_the_second_tree_s_record_is_derived_from_its_artifacts():
    # 6.12's run: the scenarios that apply to it (qemu.variants.for_tree), each
    # boot's kernel naming its variant on its command line
    derived = runrecord.derive(AUDIT_612, REPORTS_612 / "runtime")
    assert derived.dumps() == RECORD_612.read_text()
    run = json.loads((REPORTS_612 / "runtime" / "run.json").read_text())
    logs = [b for b in run["boots"] if "log" in b]
    assert logs and all(runrecord.logged_variant(
        (REPORTS_612 / "runtime" / b["log"]).read_text(errors="replace")) == b["variant"]
        for b in logs)


def test_the_command_names_a_log_of_another_kernel_in_one_line(tmp_path, capsys):
    reports = tmp_path / "linux-6.1.192"
    shutil.copytree(ARTS, reports / "runtime")
    for name in ("audit.json", "runtime.json"):
        shutil.copy(REPORTS / name, reports / name)
    log = reports / "runtime" / LOG_BOOTS[0]["log"]
    text = log.read_text(errors="replace")
    line = next(ln for ln in text.splitlines() if "Kernel command line:" in ln)
    bare = re.sub(r" s2m\.variant=\S+", "", line)
    log.write_text(text.replace(line, f"{bare} s2m.variant=unmark:x.c:other"))
    assert runrecord.main(["--reports", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("runrecord: ") and "says variant unmark:x.c:other" in err
    assert err.count("\n") == 1
