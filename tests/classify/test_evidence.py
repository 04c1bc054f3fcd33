"""classify/evidence.py: lockdep name -> audit id, the runtime records, the marking of one
semaphore (by classify.convert.marking), and the report sections; each with the case it
must catch and one it must not."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from classify import evidence as rt
from classify.convert.marking import mark_commits
from classify.tree import GIT_ENV

REPO = Path(__file__).resolve().parents[2]
AUDIT = REPO / "reports" / "linux-6.1.192" / "audit.json"


def sem(sid, cls="counting", kind="member", init=(), ops=(), path=None):
    return {"id": sid, "class": cls,
            "declared": {"path": path or sid.split(":")[0], "line": 10, "kind": kind},
            "init": [{"path": p, "line": ln, "form": "sema_init"} for p, ln in init],
            "ops": [{"path": p, "line": ln, "op": op, "function": f} for p, ln, op, f in ops]}


SEMS = [
    sem("fs/xfs/xfs_log_priv.h:xlog_in_core.ic_sema", init=[("fs/xfs/xfs_log.c", 1639)],
        ops=[("fs/xfs/xfs_log.c", 1887, "down", "xlog_write_iclog"),
             ("fs/xfs/xfs_log.c", 1405, "up", "xlog_ioend_work")]),
    sem("fs/xfs/xfs_buf.h:xfs_buf.b_sema", cls="unknown", init=[("fs/xfs/xfs_buf.c", 239)],
        ops=[("fs/xfs/xfs_buf.c", 1100, "up", "xfs_buf_unlock"),
             ("fs/xfs/xfs_buf.c", 1090, "down", "xfs_buf_lock")]),
    sem("kernel/printk/printk.c:console_sem", kind="static",
        init=[("kernel/printk/printk.c", 86)],
        ops=[("kernel/printk/printk.c", 240, "up", "__up_console_sem")]),
    sem("drivers/a/x.c:lock", kind="static", init=[("drivers/a/x.c", 5)]),
    sem("drivers/b/y.c:lock", kind="static", init=[("drivers/b/y.c", 7)]),
    sem("drivers/c/z.c:dev.sem", cls="mutex", init=[("drivers/c/z.c", 3)],
        ops=[("drivers/c/z.c", 9, "up", "shared_fn"), ("drivers/c/z.c", 8, "down", "z_fn")]),
    sem("drivers/d/w.c:dev.sem", cls="mutex", init=[("drivers/d/w.c", 3)],
        ops=[("drivers/d/w.c", 9, "up", "shared_fn")]),
]
INDEX = rt.build_index(SEMS)


@pytest.mark.parametrize("name,expected", [
    ("&iclog->ic_sema@fs/xfs/xfs_log.c:1639", "fs/xfs/xfs_log_priv.h:xlog_in_core.ic_sema"),
    # the series moved the line: the file and the member name still say which one
    ("&iclog->ic_sema@fs/xfs/xfs_log.c:1645", "fs/xfs/xfs_log_priv.h:xlog_in_core.ic_sema"),
    ("&bp->b_sema@fs/xfs/xfs_buf.c:239#2/1", "fs/xfs/xfs_buf.h:xfs_buf.b_sema"),
    ("(console_sem).lock", "kernel/printk/printk.c:console_sem"),     # arch_semaphore
    ("console_sem.lock", "kernel/printk/printk.c:console_sem"),       # mutex_debug
    ("semaphore->lock", None),                  # the shared class of the inline sema_init()
    ("&p->pi_lock", None),
    ("rtnl_mutex", None),
    ("(lock).lock", None),                      # two static semaphores named lock
    ("(other).lock", None),
    ("&x->sem@fs/other.c:1", None),             # a sema_init site the audit does not know
    ("&iclog->other@fs/xfs/xfs_log.c:1700", None),
])
def test_lock_to_id(name, expected):
    assert rt.lock_to_id(name, INDEX) == expected


def test_lock_to_id_on_the_committed_audit():
    index = rt.build_index(json.loads(AUDIT.read_text())["semaphores"])
    assert rt.lock_to_id("&hdev->driver_input_lock@drivers/hid/hid-core.c:2927", index) == \
        "include/linux/hid.h:hid_device.driver_input_lock"
    assert rt.lock_to_id("&filter->notif->request@kernel/seccomp.c:1778", index) == \
        "kernel/seccomp.c:notification.request"
    assert rt.lock_to_id("(rxrpc_call_limiter).lock", index) == \
        "net/rxrpc/call_object.c:rxrpc_call_limiter"
    assert rt.lock_to_id("&fs_info->uuid_tree_rescan_sem@fs/btrfs/disk-io.c:3075", index) == \
        "fs/btrfs/ctree.h:btrfs_fs_info.uuid_tree_rescan_sem"
    assert rt.lock_to_id("&npinfo->dev_lock@net/core/netpoll.c:651", index) == \
        "include/linux/netpoll.h:netpoll_info.dev_lock"
    assert rt.lock_to_id("&hdev->driver_input_lock@drivers/hid/hid-input.c:1", index) is None


def report(kind="bad_unlock_balance", title="t", locks=(), frames=(), body=()):
    return {"kind": kind, "title": title, "frames": list(frames), "body": list(body),
            "locks": [{"name": n, "lock_class": n} for n in locks]}


def test_report_ids_by_lock_then_by_a_single_semaphores_function():
    assert rt.report_ids(report(locks=["&iclog->ic_sema@fs/xfs/xfs_log.c:1639"]), INDEX) == \
        ["fs/xfs/xfs_log_priv.h:xlog_in_core.ic_sema"]
    # DEBUG_LOCKS_WARN_ON names no lock: the first frame that is one semaphore's function
    assert rt.report_ids(report("debug_locks_warn_on", frames=["process_one_work",
                                                               "xlog_ioend_work"]), INDEX) == \
        ["fs/xfs/xfs_log_priv.h:xlog_in_core.ic_sema"]
    # a function of two semaphores says nothing
    assert rt.report_ids(report("debug_locks_warn_on", frames=["shared_fn"]), INDEX) == []
    assert rt.report_ids(report(locks=["&p->pi_lock"], frames=["kthread"]), INDEX) == []
    body = ["mutex_debug &bp->b_sema@fs/xfs/xfs_buf.c:239 initialized with count 64, a ..."]
    assert rt.report_ids(report("warning", body=body), INDEX) == \
        ["fs/xfs/xfs_buf.h:xfs_buf.b_sema"]


def test_build_error_ids():
    errs = ["../net/rxrpc/call_object.c:43:9: error: initialization of 'x' from 'int'",
            "drivers/b/y.c:7:1: error: expected ';'",
            "drivers/b/y.c:8:1: error: another line",
            "make[2]: *** [scripts/Makefile.build:250: net/rxrpc/call_object.o] Error 1"]
    sems = SEMS + [sem("net/rxrpc/call_object.c:rxrpc_call_limiter", kind="static",
                       init=[("net/rxrpc/call_object.c", 43)])]
    got = rt.build_error_ids(errs, rt.build_index(sems))
    assert [i for i, _ in got] == ["net/rxrpc/call_object.c:rxrpc_call_limiter",
                                   "drivers/b/y.c:lock"]
    assert got[0][1].startswith("net/rxrpc/call_object.c:43: error: initialization")


def test_lockdep_classes():
    lines = ["# lockdep-class: 00000000a1b2c3d4 OPS:     123 FD:    1 BD:    2 +.+.: "
             "(console_sem).lock",
             "# lockdep-class: 00000000a1b2c3d5 OPS:       0 FD:    0 BD:    0 ....: "
             "&iclog->ic_sema@fs/xfs/xfs_log.c:1639",
             "# lockdep-class: 00000000a1b2c3d6 FD:    0 BD:    1 -.-.: &bp->b_sema@fs/xfs/"
             "xfs_buf.c:239#2",
             "# lockdep_stats: lock-classes: 222", "ffff (console_sem).lock"]
    assert rt.lockdep_classes(lines) == [
        {"name": "(console_sem).lock", "ops": 123, "usage": "+.+."},
        {"name": "&iclog->ic_sema@fs/xfs/xfs_log.c:1639", "ops": 0, "usage": "...."},
        {"name": "&bp->b_sema@fs/xfs/xfs_buf.c:239#2", "ops": None, "usage": "-.-."}]


IC = "fs/xfs/xfs_log_priv.h:xlog_in_core.ic_sema"
BS = "fs/xfs/xfs_buf.h:xfs_buf.b_sema"
CS = "kernel/printk/printk.c:console_sem"


def cls(name, ops):
    return {"name": name, "ops": ops, "usage": "+.+."}


def test_runtime_records():
    trust = rt.Boot("runtime-xfs", "trust", frozenset({IC, BS, CS}),
                    [cls("&iclog->ic_sema@fs/xfs/xfs_log.c:1639", 40),
                     cls("&bp->b_sema@fs/xfs/xfs_buf.c:239", 900),
                     cls("(console_sem).lock", 0)])
    challenge = rt.Boot("runtime-xfs-challenge", "unmark:" + IC, frozenset({BS, CS}),
                        [cls("&iclog->ic_sema@fs/xfs/xfs_log.c:1639", 3)],
                        [report(locks=["&iclog->ic_sema@fs/xfs/xfs_log.c:1639"],
                                title="WARNING: bad unlock balance detected! in xlog_ioend_work")])
    console = rt.Boot("runtime-console-challenge", "unmark:" + CS, frozenset({IC, BS}),
                      [cls("console_sem.lock", 500)])
    built = {"fs/xfs/xfs_log.c", "fs/xfs/xfs_buf.c", "kernel/printk/printk.c"}
    recs = rt.runtime_records(SEMS, [trust, challenge, console], built)
    assert set(recs) == {s["id"] for s in SEMS}
    ic = recs[IC]
    assert (ic["status"], ic["boot"], ic["kind"]) == ("violated", "runtime-xfs-challenge",
                                                      "bad_unlock_balance")
    assert [(e["boot"], e["ran_as"], e["result"]) for e in ic["boots"]] == [
        ("runtime-xfs", "semaphore", "clean"), ("runtime-xfs-challenge", "mutex", "violated")]
    assert "finding" not in ic
    assert recs[BS]["status"] == "exercised-clean" and recs[BS]["evidence"].endswith("OPS 900")
    # exercised as a debug mutex, counting class, no report: a finding against the class
    assert recs[CS]["status"] == "exercised-clean"
    assert "classed counting" in recs[CS]["finding"]
    assert recs["drivers/a/x.c:lock"] == {"status": "not-built", "files": ["drivers/a/x.c"]}
    built.add("drivers/a/x.c")
    assert rt.runtime_records(SEMS, [trust], built)["drivers/a/x.c:lock"]["status"] == \
        "not-exercised"
    assert rt.counts(recs) == {"exercised-clean": 2, "violated": 1,
                               "does-not-build-as-a-mutex": 0, "not-exercised": 0,
                               "not-built": 4}


def test_a_report_on_a_marked_semaphore_is_a_finding():
    trust = rt.Boot("runtime-xfs", "trust", frozenset({IC}), [],
                    [report(locks=["&iclog->ic_sema@fs/xfs/xfs_log.c:1639"])])
    rec = rt.runtime_records(SEMS, [trust], {"fs/xfs/xfs_log.c"})[IC]
    assert rec["status"] == "violated" and "while it was a semaphore" in rec["finding"]


def test_build_error_of_a_challenge_is_its_violation():
    sems = [sem("net/rxrpc/call_object.c:rxrpc_call_limiter", kind="static",
                init=[("net/rxrpc/call_object.c", 43)])]
    b = rt.Boot("runtime-rxrpc-challenge", "unmark:net/rxrpc/call_object.c:rxrpc_call_limiter",
                frozenset(), build_errors=["net/rxrpc/call_object.c:43:9: error: bad"],
                verdict="not_built")
    rec = rt.runtime_records(sems, [b], {"net/rxrpc/call_object.c"})[sems[0]["id"]]
    assert (rec["status"], rec["compiler"]) == ("does-not-build-as-a-mutex",
                                                "net/rxrpc/call_object.c:43: error: bad")
    assert rec["boots"] == [{"boot": "runtime-rxrpc-challenge", "ran_as": "mutex",
                             "result": "does-not-build",
                             "error": "net/rxrpc/call_object.c:43: error: bad"}]
    line = rt.summary_line(rec)
    assert "not-built" not in line and "violated" not in line
    assert line.startswith("does not build as a mutex: net/rxrpc/call_object.c:43: error: bad")
    # the boot's record names the same line as the semaphore's
    assert rt.build_failures(b, rt.build_index(sems)) == [
        (sems[0]["id"], "net/rxrpc/call_object.c:43: error: bad")]


MEMBER = "struct x {\n\tstruct semaphore\tic_sema;\n\tstruct semaphore other;\n};\n"
PRINTK = "int x;\nint y;\nstatic DEFINE_SEMAPHORE(console_sem);\n"
needs_spatch = pytest.mark.skipif(shutil.which("spatch") is None, reason="spatch missing")


def small_repo(root: Path) -> Path:
    (root / "fs").mkdir(parents=True)
    (root / "kernel").mkdir()
    (root / "fs" / "x.h").write_text(MEMBER)
    (root / "kernel" / "printk.c").write_text(PRINTK)
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                       env={**os.environ, **GIT_ENV})
    return root


def decl(sid, path, line, kind):
    return {"id": sid, "class": "counting", "init": [], "ops": [],
            "declared": {"path": path, "line": line, "kind": kind}}


@needs_spatch
def test_marking_one_semaphore_is_the_marking_mechanism_and_revert_its_inverse(tmp_path):
    """What the runtime variants are made of (the line edit set_marking was replaced by
    classify.convert.marking): one commit per semaphore, only its declaration (the
    neighbour on the next line untouched; DEFINE_SEMAPHORE too), `git revert` the exact
    inverse, and a semaphore that is not there refused with no commit."""
    repo = small_repo(tmp_path / "k")
    ic, con = decl("fs/x.h:x.ic_sema", "fs/x.h", 2, "member"), \
        decl("kernel/printk.c:console_sem", "kernel/printk.c", 3, "static")
    gone = decl("fs/x.h:x.sem", "fs/x.h", 2, "member")
    marks = mark_commits(repo, [ic, con, gone])
    assert {i: m.status for i, m in marks.items()} == {
        ic["id"]: "marked", con["id"]: "marked", gone["id"]: "error"}
    assert not marks[gone["id"]].commit and marks[gone["id"]].why

    def show(commit, path):
        return subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"],
                              capture_output=True, text=True, check=True).stdout
    head = marks[con["id"]].commit
    assert show(marks[ic["id"]].commit, "fs/x.h").splitlines() == [
        "struct x {", "\tstruct arch_semaphore ic_sema;", "\tstruct semaphore other;", "};"]
    assert show(head, "kernel/printk.c") == PRINTK.replace("DEFINE_SEMAPHORE",
                                                           "DEFINE_ARCH_SEMAPHORE")
    subprocess.run(["git", "-C", str(repo), "revert", "--no-edit", marks[ic["id"]].commit],
                   check=True, capture_output=True, env={**os.environ, **GIT_ENV})
    assert (repo / "fs" / "x.h").read_text() == MEMBER
    assert "DEFINE_ARCH_SEMAPHORE(console_sem)" in (repo / "kernel" / "printk.c").read_text()


def test_summary_line():
    rec = {"status": "exercised-clean", "boot": "b1", "evidence": "(console_sem).lock: OPS 5",
           "boots": [{"boot": "b1", "ran_as": "semaphore", "result": "clean", "ops": 5},
                     {"boot": "b2", "ran_as": "mutex", "result": "clean", "ops": 7}],
           "finding": "classed counting, but ..."}
    line = rt.summary_line(rec)
    assert line.startswith("exercised, clean: (console_sem).lock: OPS 5 (b1)")
    assert "b2 (as mutex): clean, OPS 7" in line and "FINDING: classed counting" in line
    assert rt.summary_line({"status": "not-exercised"}) == "not-exercised"


def test_report_shows_the_runtime_record_of_every_semaphore(shared_cache):
    from classify.audit import run_audit
    from classify.report import to_html, to_json, to_markdown
    fixtures = Path(__file__).resolve().parent / "fixtures"
    a = run_audit(fixtures / "loop.c", shared_cache, nice=0, version="file-x")
    ids = [r.decl.id for r in a.results]
    runtime = {"config": "base+mode-full+runtime", "boots": {"b1": {}},
               "semaphores": {ids[0]: {"status": "violated", "boot": "b1",
                                       "kind": "bad_unlock_balance", "title": "<T> & co",
                                       "boots": []}}}
    data = to_json(a, None, runtime)
    assert data["semaphores"][0]["runtime"]["status"] == "violated"
    assert all(s["runtime"]["status"] == "not-run" for s in data["semaphores"][1:])
    md = to_markdown(a, None, runtime)
    assert "## Runtime evidence" in md and "violated: bad_unlock_balance: <T> & co (b1)" in md
    assert md.count("| not-run |") == len(ids) - 1
    page = to_html(a, None, runtime)
    assert "&lt;T&gt; &amp; co" in page and 'class="rt-violated"' in page
    # without runtime.json the report is what it was
    assert "Runtime evidence" not in to_markdown(a) and "runtime" not in to_json(a)[
        "semaphores"][0]


def test_build_error_in_a_macro_is_traced_to_the_site_by_gccs_note():
    sems = [sem("net/rxrpc/call_object.c:rxrpc_call_limiter", kind="static",
                init=[("net/rxrpc/call_object.c", 43), ("net/rxrpc/call_object.c", 44)])]
    errs = ["/w/trees/runtime/include/linux/semaphore.h:47:10: error: 'struct mutex_debug' "
            "has no member named 'count'",
            "/w/trees/runtime/net/rxrpc/call_object.c:44:9: note: in expansion of macro "
            "'__SEMAPHORE_INITIALIZER'",
            "/w/trees/runtime/net/rxrpc/call_object.c:90:9: note: in expansion of macro 'X'"]
    assert rt.build_error_ids(errs, rt.build_index(sems)) == [
        ("net/rxrpc/call_object.c:rxrpc_call_limiter", "net/rxrpc/call_object.c:44: error: "
         "'struct mutex_debug' has no member named 'count'")]


def test_a_variant_that_does_not_build_is_evidence_about_its_unmarked_semaphore():
    b = rt.Boot("runtime-xfs-probe", "unmark:" + BS, frozenset({IC}), verdict="not_built",
                build_errors=["/w/trees/runtime/fs/xfs/./xfs_trace.h:431:46: error: "
                              "'struct mutex_debug' has no member named 'count'",
                              "/w/x/include/trace/trace_events.h:413:23: note: in expansion of "
                              "macro 'PARAMS'"])
    rec = rt.runtime_records(SEMS, [b], {"fs/xfs/xfs_buf.c"})[BS]
    assert rec["status"] == "does-not-build-as-a-mutex"
    assert rec["compiler"] == ("fs/xfs/xfs_trace.h:431: error: 'struct mutex_debug' has no "
                               "member named 'count'")
    # the boot's build errors say the same (they were empty: no init site is named)
    assert rt.build_failures(b, rt.build_index(SEMS)) == [(BS, rec["compiler"])]
    # a trust kernel that does not build says nothing about any one semaphore
    t = rt.Boot("runtime-xfs", "trust", frozenset({IC}), build_errors=b.build_errors,
                verdict="not_built")
    assert rt.runtime_records(SEMS, [t], {"fs/xfs/xfs_buf.c"})[BS]["status"] == "not-exercised"


def test_version_and_subclass_suffixes_are_stripped_before_mapping():
    index = rt.build_index([{"id": "drivers/block/loop.c:loop_device.sem",
                          "declared": {"kind": "member", "path": "drivers/block/loop.c",
                                       "line": 3},
                          "init": [{"path": "drivers/block/loop.c", "line": 9}],
                          "ops": []}])
    assert rt.lock_to_id("&lo->sem@drivers/block/loop.c:9#2/1", index) == \
        "drivers/block/loop.c:loop_device.sem"
    # the look-alike: the same member name at an init site the audit does not know,
    # in another file
    assert rt.lock_to_id("&lo->sem@drivers/block/other.c:9", index) is None


def test_a_report_that_depends_on_timing_keeps_every_outcome():
    """A scenario booted 3 times: two reports of one kind, one of another: the record
    keeps the first as its status and every outcome with how often it was seen."""
    ic_class = "&iclog->ic_sema@fs/xfs/xfs_log.c:1639"
    titles = ["WARNING: bad unlock balance detected! in w", "WARNING: lock held when "
              "returning to user space!", "WARNING: bad unlock balance detected! in w"]
    kinds = ["bad_unlock_balance", "lock_held_return_to_user", "bad_unlock_balance"]
    boots = [rt.Boot(f"c.{i + 1}", "unmark:" + IC, frozenset(), [cls(ic_class, 2)],
                     [report(kind=kinds[i], locks=[ic_class], title=titles[i])],
                     scenario="c") for i in range(3)]
    rec = rt.runtime_records(SEMS, boots, {"fs/xfs/xfs_log.c"})[IC]
    assert (rec["status"], rec["boot"], rec["kind"]) == ("violated", "c.1",
                                                         "bad_unlock_balance")
    assert rec["repeats"] == [{"scenario": "c", "boots": 3, "outcomes": [
        {"outcome": f"bad_unlock_balance: {titles[0]}", "seen": 2},
        {"outcome": f"lock_held_return_to_user: {titles[1]}", "seen": 1}]}]
    line = rt.summary_line(rec)
    assert "over 3 boots of c: bad_unlock_balance" in line and "(depends on timing)" in line
    assert "c.2 (as mutex)" not in line          # the repeats are summed up, not listed
    # the same outcome every time is no timing: said so
    same = [rt.Boot(b.name, b.variant, b.marked, b.classes, [report(
        kind=kinds[0], locks=[ic_class], title=titles[0])], scenario="c") for b in boots]
    rec = rt.runtime_records(SEMS, same, {"fs/xfs/xfs_log.c"})[IC]
    assert rec["repeats"][0]["outcomes"] == [{"outcome": f"bad_unlock_balance: {titles[0]}",
                                              "seen": 3}]
    assert "(every time)" in rt.summary_line(rec)
    # a scenario booted once has no repeats
    assert "repeats" not in rt.runtime_records(SEMS, boots[:1], {"fs/xfs/xfs_log.c"})[IC]
    # another semaphore's challenge, where this one stayed marked, says nothing of it
    # as a mutex: its clean boots are no repeats of it (console_sem in every kernel)
    other = [rt.Boot(f"o.{i + 1}", "unmark:other", frozenset({IC}), [cls(ic_class, 2)],
                     [], scenario="o") for i in range(3)]
    rec = rt.runtime_records(SEMS, boots + other, {"fs/xfs/xfs_log.c"})[IC]
    assert [r["scenario"] for r in rec["repeats"]] == ["c"]


def test_the_count_warning_is_kept_as_the_detail():
    cnt = report(kind="warning", locks=["&iclog->ic_sema@fs/xfs/xfs_log.c:1639"],
                 title="WARNING in f")
    cnt["body"] = ["mutex_debug &iclog->ic_sema@fs/xfs/xfs_log.c:1639 initialized with "
                   "count 2048, a mutex counts to one"]
    b = rt.Boot("p", "unmark:" + IC, frozenset(), [], [cnt])
    rec = rt.runtime_records(SEMS, [b], {"fs/xfs/xfs_log.c"})[IC]
    assert rec["detail"].endswith("initialized with count 2048, a mutex counts to one")
    assert "[mutex_debug &iclog" in rt.summary_line(rec)
    cnt["body"] = ["some other line"]
    assert "detail" not in rt.runtime_records(SEMS, [b], {"fs/xfs/xfs_log.c"})[IC]
