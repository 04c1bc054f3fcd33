"""classify/lockmap.py: lockdep names, reports and compiler errors -> audit ids; each
with the case it must catch and one it must not."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from audit_sems import SEMS, sem  # noqa: E402

from classify import lockmap  # noqa: E402
from classify.records.boot import Lock, LockClass, Report  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
AUDIT = REPO / "reports" / "linux-6.1.192" / "audit.json"
INDEX = lockmap.build_index(SEMS)


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
    assert lockmap.lock_to_id(name, INDEX) == expected


def test_lock_to_id_on_the_committed_audit():
    index = lockmap.build_index(json.loads(AUDIT.read_text())["semaphores"])
    assert lockmap.lock_to_id("&hdev->driver_input_lock@drivers/hid/hid-core.c:2927", index) \
        == "include/linux/hid.h:hid_device.driver_input_lock"
    assert lockmap.lock_to_id("&filter->notif->request@kernel/seccomp.c:1778", index) == \
        "kernel/seccomp.c:notification.request"
    assert lockmap.lock_to_id("(rxrpc_call_limiter).lock", index) == \
        "net/rxrpc/call_object.c:rxrpc_call_limiter"
    assert lockmap.lock_to_id("&fs_info->uuid_tree_rescan_sem@fs/btrfs/disk-io.c:3075",
                              index) == "fs/btrfs/ctree.h:btrfs_fs_info.uuid_tree_rescan_sem"
    assert lockmap.lock_to_id("&npinfo->dev_lock@net/core/netpoll.c:651", index) == \
        "include/linux/netpoll.h:netpoll_info.dev_lock"
    assert lockmap.lock_to_id("&hdev->driver_input_lock@drivers/hid/hid-input.c:1",
                              index) is None


def test_version_and_subclass_suffixes_are_stripped_before_mapping():
    index = lockmap.build_index([{"id": "drivers/block/loop.c:loop_device.sem",
                                  "declared": {"kind": "member", "path": "drivers/block/loop.c",
                                               "line": 3},
                                  "init": [{"path": "drivers/block/loop.c", "line": 9}],
                                  "ops": []}])
    assert lockmap.lock_to_id("&lo->sem@drivers/block/loop.c:9#2/1", index) == \
        "drivers/block/loop.c:loop_device.sem"
    assert lockmap.class_id(LockClass.named("&lo->sem@drivers/block/loop.c:9#2", 5), index) \
        == "drivers/block/loop.c:loop_device.sem"
    # the look-alike: the same member name at an init site the audit does not know,
    # in another file
    assert lockmap.lock_to_id("&lo->sem@drivers/block/other.c:9", index) is None


def report(kind="bad_unlock_balance", title="t", locks=(), frames=(), **kw):
    return Report(kind, title, title, 1, locks=[Lock.named(n, "involved") for n in locks],
                  frames=list(frames), **kw)


IC = "fs/xfs/xfs_log_priv.h:xlog_in_core.ic_sema"


def test_report_ids_by_lock_then_by_the_caller_of_the_lock_api():
    assert lockmap.report_ids(report(locks=["&iclog->ic_sema@fs/xfs/xfs_log.c:1639"]),
                              INDEX) == [IC]
    # DEBUG_LOCKS_WARN_ON names no lock: the caller of the lock API it was raised in,
    # a function of one semaphore
    assert lockmap.report_ids(report("debug_locks_warn_on", frames=[
        "mutex_debug_up", "up", "xlog_ioend_work", "process_one_work"]), INDEX) == [IC]
    (att,) = lockmap.attributions(report("debug_locks_warn_on", frames=[
        "up", "xlog_ioend_work"]), INDEX)
    assert att.by == "call trace" and "xlog_ioend_work(), the caller of up()" in att.link
    # ... not a frame further down, nor one that is not under the lock API
    assert lockmap.report_ids(report("debug_locks_warn_on", frames=[
        "process_one_work", "xlog_ioend_work"]), INDEX) == []
    assert lockmap.report_ids(report("debug_locks_warn_on", frames=[
        "up", "process_one_work", "xlog_ioend_work"]), INDEX) == []
    # a function of two semaphores says nothing
    assert lockmap.report_ids(report("debug_locks_warn_on", frames=["up", "shared_fn"]),
                              INDEX) == []
    assert lockmap.report_ids(report(locks=["&p->pi_lock"], frames=["kthread"]), INDEX) == []
    # the count warning's lock (qemu.parse puts it among the report's locks)
    assert lockmap.report_ids(report("warning", locks=["&bp->b_sema@fs/xfs/xfs_buf.c:239"]),
                              INDEX) == ["fs/xfs/xfs_buf.h:xfs_buf.b_sema"]


def test_a_hung_task_names_the_semaphore_its_down_was_called_for():
    hung = report("hung_task", frames=["__down_common", "down", "xlog_write_iclog",
                                       "xlog_write"])
    (att,) = lockmap.attributions(hung, INDEX)
    assert (att.id, att.by) == (IC, "call trace")
    assert "xlog_write_iclog(), the caller of down()" in att.link
    # a DEBUG_MUTEX_FULL kernel: the semaphore's down() is mutex_lock()
    assert lockmap.report_ids(report("hung_task", frames=[
        "__mutex_lock", "mutex_lock_nested", "xlog_write_iclog"]), INDEX) == [IC]
    # the caller only releases the semaphore: it cannot be blocked on it
    assert lockmap.report_ids(report("hung_task", frames=["down", "xlog_ioend_work"]),
                              INDEX) == []


@pytest.mark.parametrize("kind,frames,extra", [
    # a page fault, a BUG, a WARNING and a lockdep report about other locks whose traces
    # pass a function with a down()
    ("oops", ["kobject_put", "xlog_write_iclog"], {}),
    ("bug", ["down", "xlog_write_iclog"], {}),
    ("warning", ["up", "xlog_ioend_work"], {}),
    ("circular_locking", ["mutex_lock_nested", "xlog_write_iclog"], {}),
    # a hung task not blocked in a take, or in an rw_semaphore's
    ("hung_task", ["xlog_write_iclog", "xlog_write"], {}),
    ("hung_task", ["rwsem_down_read_slowpath", "down_read", "xlog_write_iclog"], {}),
    # a "? " frame never reaches report.frames; a blocker line saying it is a mutex
    ("hung_task", ["down", "xlog_write_iclog"],
     {"blocker": "mutex, last held by task a/1"}),
])
def test_look_alikes_name_no_semaphore(kind, frames, extra):
    locks = ["&a->lock", "&b->lock"] if kind == "circular_locking" else []
    assert lockmap.attributions(report(kind, locks=locks, frames=frames, **extra),
                                INDEX) == []


def test_an_out_of_tree_module_frame_names_nothing():
    frames = ["down", "xlog_write_iclog"]
    (att,) = lockmap.attributions(report("hung_task", frames=frames,
                                         modules={"xlog_write_iclog": "mydrv"}), INDEX)
    assert att.id is None and "out of tree" in att.link
    assert lockmap.report_ids(report("hung_task", frames=frames,
                                     modules={"xlog_write_iclog": "mydrv"}), INDEX) == []
    # the module of the semaphore's own files is the tree's
    assert lockmap.report_ids(report("hung_task", frames=frames,
                                     modules={"xlog_write_iclog": "xfs"}), INDEX) == [IC]


def test_build_error_ids():
    errs = ["../net/rxrpc/call_object.c:43:9: error: initialization of 'x' from 'int'",
            "drivers/b/y.c:7:1: error: expected ';'",
            "drivers/b/y.c:8:1: error: another line",
            "make[2]: *** [scripts/Makefile.build:250: net/rxrpc/call_object.o] Error 1"]
    sems = SEMS + [sem("net/rxrpc/call_object.c:rxrpc_call_limiter", kind="static",
                       init=[("net/rxrpc/call_object.c", 43)])]
    got = lockmap.build_error_ids(errs, lockmap.build_index(sems))
    assert [i for i, _ in got] == ["net/rxrpc/call_object.c:rxrpc_call_limiter",
                                   "drivers/b/y.c:lock"]
    assert got[0][1].startswith("net/rxrpc/call_object.c:43: error: initialization")


def test_build_error_in_a_macro_is_traced_to_the_site_by_gccs_note():
    sems = [sem("net/rxrpc/call_object.c:rxrpc_call_limiter", kind="static",
                init=[("net/rxrpc/call_object.c", 43), ("net/rxrpc/call_object.c", 44)])]
    errs = ["/w/trees/runtime/include/linux/semaphore.h:47:10: error: 'struct mutex_debug' "
            "has no member named 'count'",
            "/w/trees/runtime/net/rxrpc/call_object.c:44:9: note: in expansion of macro "
            "'__SEMAPHORE_INITIALIZER'",
            "/w/trees/runtime/net/rxrpc/call_object.c:90:9: note: in expansion of macro 'X'"]
    assert lockmap.build_error_ids(errs, lockmap.build_index(sems)) == [
        ("net/rxrpc/call_object.c:rxrpc_call_limiter", "net/rxrpc/call_object.c:44: error: "
         "'struct mutex_debug' has no member named 'count'")]


def test_first_error_is_relative_to_the_tree():
    assert lockmap.first_error(["/w/trees/runtime/fs/xfs/./xfs_trace.h:431:46: error: x",
                                "fs/a.c:1:1: error: y"]) == "fs/xfs/xfs_trace.h:431: error: x"
    assert lockmap.first_error(["make: *** Error 2"]) == "make: *** Error 2"
    assert lockmap.first_error([]) == "build failed"


def test_a_sleep_check_in_the_function_that_takes_the_semaphore_names_it():
    """console_lock()'s might_sleep() before its down(&console_sem): the report's
    first reliable frame is the taker itself, its file:line in the semaphore's file."""
    rep = report("sleep_in_atomic", frames=["xlog_write_iclog", "xlog_write"],
                 location="fs/xfs/xfs_log.c:1880")
    (att,) = lockmap.attributions(rep, INDEX)
    assert (att.id, att.by) == (IC, "call trace")
    assert "xlog_write_iclog(), where might_sleep() fired (fs/xfs/xfs_log.c:1880" in att.link


@pytest.mark.parametrize("kind,frames,location", [
    # a check inlined from a header (an allocation's might_sleep) in the taker
    ("sleep_in_atomic", ["xlog_write_iclog", "xlog_write"], "include/linux/sched/mm.h:274"),
    # the first frame only releases the semaphore, or holds ops on two of them
    ("sleep_in_atomic", ["xlog_ioend_work"], "fs/xfs/xfs_log.c:1400"),
    ("sleep_in_atomic", ["shared_fn"], "drivers/c/z.c:9"),
    # the taker is not the first frame: the check fired in a callee
    ("sleep_in_atomic", ["kmem_alloc", "xlog_write_iclog"], "fs/xfs/xfs_log.c:1880"),
    # no file:line, or a report that is not about sleeping
    ("sleep_in_atomic", ["xlog_write_iclog"], ""),
    ("warning", ["xlog_write_iclog"], "fs/xfs/xfs_log.c:1880"),
])
def test_a_sleep_check_elsewhere_names_nothing(kind, frames, location):
    assert lockmap.attributions(report(kind, frames=frames, location=location),
                                INDEX) == []
