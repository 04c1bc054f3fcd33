"""classify/runtime_records.py: the boots of a runtime set -> one record per semaphore;
each with the case it must catch and one it must not."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from audit_sems import SEMS, sem  # noqa: E402

from classify import lockmap, runtime_records  # noqa: E402
from classify.records.boot import Boot, Lock, LockClass, Report  # noqa: E402
from classify.records.runtime import BootEntry, Outcome, Repeat, SemRuntime  # noqa: E402
from classify.report.runtime import summary_line  # noqa: E402

IC = "fs/xfs/xfs_log_priv.h:xlog_in_core.ic_sema"
BS = "fs/xfs/xfs_buf.h:xfs_buf.b_sema"
CS = "kernel/printk/printk.c:console_sem"
IC_CLASS = "&iclog->ic_sema@fs/xfs/xfs_log.c:1639"


def cls(name, ops):
    return LockClass.named(name, ops, "+.+.")


def report(kind="bad_unlock_balance", title="t", locks=(), detail=""):
    return Report(kind, title, title, 1, locks=[Lock.named(n, "involved") for n in locks],
                  detail=detail)


def test_runtime_records():
    trust = Boot("runtime-xfs", "trust", frozenset({IC, BS, CS}),
                 [cls(IC_CLASS, 40), cls("&bp->b_sema@fs/xfs/xfs_buf.c:239", 900),
                  cls("(console_sem).lock", 0)])
    challenge = Boot("runtime-xfs-challenge", "unmark:" + IC, frozenset({BS, CS}),
                     [cls(IC_CLASS, 3)],
                     [report(locks=[IC_CLASS],
                             title="WARNING: bad unlock balance detected! in xlog_ioend_work")])
    console = Boot("runtime-console-challenge", "unmark:" + CS, frozenset({IC, BS}),
                   [cls("console_sem.lock", 500)])
    built = {"fs/xfs/xfs_log.c", "fs/xfs/xfs_buf.c", "kernel/printk/printk.c"}
    recs = runtime_records.runtime_records(SEMS, [trust, challenge, console], built)
    assert set(recs) == {s["id"] for s in SEMS}
    ic = recs[IC]
    assert (ic.status, ic.boot, ic.kind) == ("violated", "runtime-xfs-challenge",
                                             "bad_unlock_balance")
    assert [(e.boot, e.ran_as, e.result) for e in ic.boots] == [
        ("runtime-xfs", "semaphore", "clean"), ("runtime-xfs-challenge", "mutex", "violated")]
    assert ic.finding is None and "finding" not in ic.to_json()
    assert recs[BS].status == "exercised-clean" and recs[BS].evidence.endswith("OPS 900")
    # exercised as a debug mutex, counting class, no report: a finding against the class
    assert recs[CS].status == "exercised-clean"
    assert "classed counting" in recs[CS].finding
    assert recs["drivers/a/x.c:lock"].to_json() == {"status": "not-built",
                                                    "files": ["drivers/a/x.c"]}
    built.add("drivers/a/x.c")
    assert runtime_records.runtime_records(SEMS, [trust], built)[
        "drivers/a/x.c:lock"].status == "not-exercised"
    assert runtime_records.counts(recs) == {"exercised-clean": 2, "violated": 1,
                                            "does-not-build-as-a-mutex": 0,
                                            "not-exercised": 0, "not-built": 4}


def test_exercised_adds_up_the_operations_of_a_semaphores_classes():
    b = Boot("b", "trust", frozenset(), [cls(IC_CLASS, 2), cls(IC_CLASS + "#2", 3),
                                         cls("&p->pi_lock", 9), cls(CS.split(":")[1], 0),
                                         LockClass.named("(console_sem).lock", None)])
    ex = runtime_records.exercised(b, lockmap.build_index(SEMS))
    assert ex == {IC: runtime_records.Ran(5, IC_CLASS, "+.+."),
                  CS: runtime_records.Ran(1, "(console_sem).lock", "")}


def test_a_report_on_a_marked_semaphore_is_a_finding():
    trust = Boot("runtime-xfs", "trust", frozenset({IC}), [], [report(locks=[IC_CLASS])])
    rec = runtime_records.runtime_records(SEMS, [trust], {"fs/xfs/xfs_log.c"})[IC]
    assert rec.status == "violated" and "while it was a semaphore" in rec.finding


def test_build_error_of_a_challenge_is_its_violation():
    sems = [sem("net/rxrpc/call_object.c:rxrpc_call_limiter", kind="static",
                init=[("net/rxrpc/call_object.c", 43)])]
    b = Boot("runtime-rxrpc-challenge", "unmark:net/rxrpc/call_object.c:rxrpc_call_limiter",
             frozenset(), build_errors=["net/rxrpc/call_object.c:43:9: error: bad"],
             verdict="not_built")
    rec = runtime_records.runtime_records(sems, [b], {"net/rxrpc/call_object.c"})[
        sems[0]["id"]]
    assert (rec.status, rec.compiler) == ("does-not-build-as-a-mutex",
                                          "net/rxrpc/call_object.c:43: error: bad")
    assert rec.boots == [BootEntry("runtime-rxrpc-challenge", "mutex", "does-not-build",
                                   error="net/rxrpc/call_object.c:43: error: bad")]
    line = summary_line(rec)
    assert "not-built" not in line and "violated" not in line
    assert line.startswith("does not build as a mutex: net/rxrpc/call_object.c:43: error: bad")
    # the boot's record names the same line as the semaphore's
    assert runtime_records.build_failures(b, lockmap.build_index(sems)) == [
        (sems[0]["id"], "net/rxrpc/call_object.c:43: error: bad")]


def test_a_variant_that_does_not_build_is_evidence_about_its_unmarked_semaphore():
    b = Boot("runtime-xfs-probe", "unmark:" + BS, frozenset({IC}), verdict="not_built",
             build_errors=["/w/trees/runtime/fs/xfs/./xfs_trace.h:431:46: error: "
                           "'struct mutex_debug' has no member named 'count'",
                           "/w/x/include/trace/trace_events.h:413:23: note: in expansion of "
                           "macro 'PARAMS'"])
    rec = runtime_records.runtime_records(SEMS, [b], {"fs/xfs/xfs_buf.c"})[BS]
    assert rec.status == "does-not-build-as-a-mutex"
    assert rec.compiler == ("fs/xfs/xfs_trace.h:431: error: 'struct mutex_debug' has no "
                            "member named 'count'")
    # the boot's build errors say the same (they were empty: no init site is named)
    assert runtime_records.build_failures(b, lockmap.build_index(SEMS)) == [
        (BS, rec.compiler)]
    # a trust kernel that does not build says nothing about any one semaphore
    t = Boot("runtime-xfs", "trust", frozenset({IC}), build_errors=b.build_errors,
             verdict="not_built")
    assert runtime_records.runtime_records(SEMS, [t], {"fs/xfs/xfs_buf.c"})[BS].status == \
        "not-exercised"


def test_a_report_that_depends_on_timing_keeps_every_outcome():
    """A scenario booted 3 times: two reports of one kind, one of another: the record
    keeps the first as its status and every outcome with how often it was seen."""
    titles = ["WARNING: bad unlock balance detected! in w", "WARNING: lock held when "
              "returning to user space!", "WARNING: bad unlock balance detected! in w"]
    kinds = ["bad_unlock_balance", "lock_held_return_to_user", "bad_unlock_balance"]
    boots = [Boot(f"c.{i + 1}", "unmark:" + IC, frozenset(), [cls(IC_CLASS, 2)],
                  [report(kind=kinds[i], locks=[IC_CLASS], title=titles[i])],
                  scenario="c") for i in range(3)]
    records = runtime_records.runtime_records
    rec = records(SEMS, boots, {"fs/xfs/xfs_log.c"})[IC]
    assert (rec.status, rec.boot, rec.kind) == ("violated", "c.1", "bad_unlock_balance")
    assert rec.repeats == [Repeat("c", 3, [Outcome(f"bad_unlock_balance: {titles[0]}", 2),
                                           Outcome(f"lock_held_return_to_user: {titles[1]}",
                                                   1)])]
    line = summary_line(rec)
    assert "over 3 boots of c: bad_unlock_balance" in line and "(depends on timing)" in line
    assert "c.2 (as mutex)" not in line          # the repeats are summed up, not listed
    # the same outcome every time is no timing: said so
    same = [Boot(b.name, b.variant, b.marked, b.classes, [report(
        kind=kinds[0], locks=[IC_CLASS], title=titles[0])], scenario="c") for b in boots]
    rec = records(SEMS, same, {"fs/xfs/xfs_log.c"})[IC]
    assert rec.repeats[0].outcomes == [Outcome(f"bad_unlock_balance: {titles[0]}", 3)]
    assert "(every time)" in summary_line(rec)
    # a scenario booted once has no repeats
    assert "repeats" not in records(SEMS, boots[:1], {"fs/xfs/xfs_log.c"})[IC].to_json()
    # another semaphore's challenge, where this one stayed marked, says nothing of it
    # as a mutex: its clean boots are no repeats of it (console_sem in every kernel)
    other = [Boot(f"o.{i + 1}", "unmark:other", frozenset({IC}), [cls(IC_CLASS, 2)],
                  [], scenario="o") for i in range(3)]
    rec = records(SEMS, boots + other, {"fs/xfs/xfs_log.c"})[IC]
    assert [r.scenario for r in rec.repeats] == ["c"]


def test_the_count_warning_is_kept_as_the_detail():
    count = ("mutex_debug &iclog->ic_sema@fs/xfs/xfs_log.c:1639 initialized with count "
             "2048, a mutex counts to one")
    b = Boot("p", "unmark:" + IC, frozenset(), [],
             [report("warning", "WARNING in f", [IC_CLASS], detail=count)])
    rec = runtime_records.runtime_records(SEMS, [b], {"fs/xfs/xfs_log.c"})[IC]
    assert rec.detail == count and rec.boots[0].detail == count
    assert "[mutex_debug &iclog" in summary_line(rec)
    b.reports[0].detail = ""
    rec = runtime_records.runtime_records(SEMS, [b], {"fs/xfs/xfs_log.c"})[IC]
    assert "detail" not in rec.to_json() and "detail" not in rec.boots[0].to_json()


def test_runtime_record_names_each_boots_reports_and_build_errors():
    b = Boot("c.1", "unmark:" + IC, frozenset({BS}), [cls(IC_CLASS, 2)],
             [report(locks=[IC_CLASS], title="T"), report(locks=["&p->pi_lock"], title="U")],
             scenario="c")
    audit = {"semaphores": SEMS}
    rec = runtime_records.runtime_record(audit, "6.1.192", [BS], [b], {"fs/xfs/xfs_log.c"},
                                         {}, "base")
    assert [(r.kind, r.title, r.ids) for r in rec.boots["c.1"].reports] == [
        ("bad_unlock_balance", "T", [IC]), ("bad_unlock_balance", "U", [])]
    assert rec.boots["c.1"].scenario == "c" and rec.trust_marks == [BS]
    assert rec.semaphores[IC].status == "violated" and rec.counts["violated"] == 1
    assert rec.of("no:such") == SemRuntime("not-run")


def test_a_boot_of_a_conversion_patch_is_listed_apart_clean_or_broken():
    trust = Boot("runtime-xfs", "trust", frozenset({IC}), [cls(IC_CLASS, 40)])
    clean = Boot("runtime-xfs-converted.1", "convert:" + IC, frozenset(),
                 scenario="runtime-xfs-converted")
    # the boot of the patch names no lock class of the semaphore, and says
    # nothing of its status: the trust boot decides it
    recs = runtime_records.runtime_records(SEMS, [trust, clean], {"fs/xfs/xfs_log.c"},
                                           {"convert:" + IC: "0001-xfs.patch"})
    ic = recs[IC]
    assert ic.status == "exercised-clean" and [e.boot for e in ic.boots] == ["runtime-xfs"]
    assert [c.to_json() for c in ic.converted] == [
        {"boot": "runtime-xfs-converted.1", "patch": "0001-xfs.patch", "result": "clean",
         "verdict": "completed", "failed": []}]
    assert "converted by 0001-xfs.patch: booted clean in runtime-xfs-converted.1" in \
        summary_line(ic)
    assert recs[BS].converted is None
    # negative controls: a report, a failed step, a hang each break it
    hung = Boot("c.2", "convert:" + IC, frozenset(), verdict="hang",
                reports=[report("hung_task", "INFO: task blocked in xlog_wait")],
                failed=["s2m-init/workload:xfs"])
    got = runtime_records.runtime_records(SEMS, [trust, hung], {"fs/xfs/xfs_log.c"})[IC]
    c = got.converted[0]
    assert (c.result, c.kind, c.failed, c.verdict) == (
        "broken", "hung_task", ["s2m-init/workload:xfs"], "hang")
    assert ("BROKE in c.2: hung_task: INFO: task blocked in xlog_wait; "
            "s2m-init/workload:xfs not ok; hang") in summary_line(got)
    step = Boot("c.3", "convert:" + IC, frozenset(), failed=["s2m-init/workload:xfs"])
    assert runtime_records.runtime_records(SEMS, [step], {"fs/xfs/xfs_log.c"})[
        IC].converted[0].result == "broken"
