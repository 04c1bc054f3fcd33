"""Triage names the semaphore a report is about, with its link, and never a wrong one
(issues 28 and 34).  The logs are small ones written for the tests in the kernel's own
form (x86_64, 6.1 and later): each a case that must name its semaphore, or a look-alike
that must name none."""

import json
from pathlib import Path

import pytest

from qemu import triage

REPO = Path(__file__).resolve().parents[2]
AUDIT = json.loads((REPO / "reports" / "linux-6.1.192" / "audit.json").read_text())

HUNG = """\
[  369.120001] INFO: task {comm}:123 blocked for more than 122 seconds.
[  369.120002]       Not tainted 6.1.192 #1
[  369.120003] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.
[  369.120004] task:{comm}    state:D stack:0     pid:123   ppid:2      flags:0x00004000
[  369.120005] Call Trace:
[  369.120006]  <TASK>
[  369.120007]  __schedule+0x2f1/0x8d0
[  369.120008]  schedule+0x5d/0xd0
[  369.120009]  schedule_timeout+0x1d8/0x290
[  369.120010]  ? lock_release+0x1b0/0x2c0
[  369.120011]  __down_common+0x11e/0x1f0
[  369.120012]  ? {helper}+0x2a/0x120
[  369.120013]  {take}+0x43/0x60
[  369.120014]  {helper}+0x35/0x110{module}
[  369.120015]  {caller}+0x1c4/0x3a0
[  369.120016]  process_one_work+0x1e2/0x3b0
[  369.120017]  worker_thread+0x50/0x3a0
[  369.120018]  kthread+0xe9/0x110
[  369.120019]  ret_from_fork+0x22/0x30
[  369.120020]  </TASK>
{after}"""

BLOCKER = """\
[  369.120021] INFO: task kworker/u8:2:123 {what} likely {held} by task s2m-wl:114
[  369.120022] task:s2m-wl          state:S stack:0     pid:114   ppid:1      flags:0x00000000
[  369.120023] Call Trace:
[  369.120024]  <TASK>
[  369.120025]  __schedule+0x2f1/0x8d0
[  369.120026]  schedule+0x5d/0xd0
[  369.120027]  msleep_interruptible+0x3c/0x60
[  369.120028]  xfs_buf_delwri_submit_buffers+0x10e/0x2a0
[  369.120029]  </TASK>
"""


def hung(helper, take="down", caller="xfs_buf_get_map", module="", after="",
         comm="kworker/u8:2"):
    return HUNG.format(helper=helper, take=take, caller=caller, comm=comm, after=after,
                       module=f" [{module}]" if module else "")


def named(text: str) -> list[tuple[str | None, str, str]]:
    """(id, by, link) of every semaphore the log's reports name or refuse."""
    res = triage.triage(text, AUDIT, "t", "series", frozenset(), [], None)
    return [(lk["id"], lk["by"], lk["link"]) for r in res["reports"] for lk in r["locks"]
            if lk["id"] or lk["link"]]


B_SEMA = "fs/xfs/xfs_buf.h:xfs_buf.b_sema"


@pytest.mark.parametrize("helper,take,sid", [
    ("xfs_buf_lock", "down", B_SEMA),
    ("isert_accept_np", "down_interruptible", "drivers/infiniband/ulp/isert/ib_isert.h:"
     "isert_np.sem"),
    ("dlfb_get_urb", "down_timeout", "include/video/udlfb.h:urb_list.limit_sem"),
    # a semaphore allocated at run time, reached through its helper's pointer parameter
    ("acpi_os_wait_semaphore", "down_timeout", "drivers/acpi/osl.c:*sem@"
     "acpi_os_create_semaphore"),
])
def test_a_task_hung_in_down_under_a_helper_of_one_semaphore(helper, take, sid):
    ((got, by, link),) = named(hung(helper, take))
    assert (got, by) == (sid, "call trace")
    assert link.startswith(f"frame {helper}(), the caller of {take}()")


def test_the_blocker_line_ties_the_semaphore_to_its_last_holder():
    text = hung("xfs_buf_lock", after=BLOCKER.format(
        what="blocked on a semaphore", held="last held"))
    res = triage.triage(text, AUDIT, "t", "series", frozenset(), [], None)
    (rep,) = res["reports"]
    assert rep["blocker"] == "semaphore, last held by task s2m-wl/114"
    assert rep["task"] == "kworker/u8:2/123"
    ((sid, _, link),) = named(text)
    assert sid == B_SEMA and "last held by task s2m-wl/114" in link
    out = triage.render(res, Path("t.log"), Path("audit.json"))
    assert "blocked on a semaphore, last held by task s2m-wl/114" in out
    assert "link: frame xfs_buf_lock(), the caller of down()" in out


@pytest.mark.parametrize("what,held", [("is blocked on a mutex", "owned"),
                                       ("reader blocked on an rw-semaphore", "owned")])
def test_a_blocker_line_about_another_lock_names_nothing(what, held):
    assert named(hung("xfs_buf_lock", after=BLOCKER.format(what=what, held=held))) == []


def test_an_out_of_tree_module_frame_names_nothing():
    got = named(hung("dlfb_get_urb", "down_timeout", module="udlfb_ng"))
    assert [(sid, "out of tree" in link) for sid, _, link in got] == [(None, True)]
    # the module the semaphore's own file builds
    assert named(hung("dlfb_get_urb", "down_timeout", module="udlfb"))[0][0] == \
        "include/video/udlfb.h:urb_list.limit_sem"


def test_an_rw_semaphore_down_read_names_nothing():
    text = hung("xfs_buf_lock").replace("__down_common+0x11e/0x1f0",
                                        "rwsem_down_read_slowpath+0x2a0/0x4d0").replace(
        " down+0x43/0x60", " down_read+0x43/0x60")
    assert named(text) == []


PAGE_FAULT = """\
[   88.301001] BUG: unable to handle page fault for address: ffffed1003a5e000
[   88.301002] #PF: supervisor read access in kernel mode
[   88.301003] #PF: error_code(0x0000) - not-present page
[   88.301004] Oops: 0000 [#1] PREEMPT SMP KASAN
[   88.301005] CPU: 1 PID: 3421 Comm: kworker/1:3 Not tainted 6.1.192 #1
[   88.301006] RIP: 0010:kobject_put+0x2c/0x250
[   88.301007] Call Trace:
[   88.301008]  <TASK>
[   88.301009]  put_device+0x1b/0x30
[   88.301010]  hid_device_remove+0x10c/0x210
[   88.301011]  device_release_driver_internal+0x3d6/0x600
[   88.301012]  bus_remove_device+0x2e8/0x540
[   88.301013]  </TASK>
"""

ABBA = """\
[   12.000001] ======================================================
[   12.000002] WARNING: possible circular locking dependency detected
[   12.000003] 6.1.192 #1 Not tainted
[   12.000004] ------------------------------------------------------
[   12.000005] ip/311 is trying to acquire lock:
[   12.000006] ffff88800a1b2c30 (&dev->addr_list_lock){+...}-{2:2}, at: dev_uc_add+0x1e/0x60
[   12.000007]
[   12.000008] but task is already holding lock:
[   12.000009] ffffffff8a2f1e48 (rtnl_mutex){+.+.}-{3:3}, at: rtnl_lock+0x15/0x20
[   12.000010]
[   12.000011] which lock already depends on the new lock.
[   12.000012]
[   12.000013] other info that might help us debug this:
[   12.000014] stack backtrace:
[   12.000015] CPU: 0 PID: 311 Comm: ip Not tainted 6.1.192 #1
[   12.000016] Call Trace:
[   12.000017]  <TASK>
[   12.000018]  dump_stack_lvl+0x45/0x5d
[   12.000019]  check_noncircular+0x10a/0x120
[   12.000020]  __lock_acquire+0x11e6/0x1e00
[   12.000021]  lock_acquire+0xd3/0x2f0
[   12.000022]  _raw_spin_lock_bh+0x34/0x40
[   12.000023]  dev_uc_add+0x1e/0x60
[   12.000024]  hinic_open+0x1a4/0x6e0
[   12.000025]  __dev_open+0xe8/0x190
[   12.000026]  </TASK>
"""


LOOK_ALIKES = {
    "page-fault": PAGE_FAULT,
    "abba": ABBA,
    # the same with the lock API right above the semaphore's function
    "page-fault-under-down": PAGE_FAULT.replace("put_device+0x1b/0x30", "down+0x1b/0x30"),
    "abba-under-up": ABBA.replace("]  dev_uc_add+0x1e/0x60", "]  up+0x1e/0x60"),
}


@pytest.mark.parametrize("text", LOOK_ALIKES.values(), ids=LOOK_ALIKES.keys())
def test_look_alikes_whose_trace_passes_a_semaphores_function_name_nothing(text):
    """A page fault in kobject_put() with hid_device_remove() (a down() and up() of
    driver_input_lock) in its trace; an ABBA between two ordinary locks through
    hinic_open() (which holds mgmt_lock): not about a semaphore."""
    res = triage.triage(text, AUDIT, "t", "series", frozenset(), [], None)
    assert [r["kind"] for r in res["reports"]] in (["oops"], ["circular_locking"])
    assert named(text) == []


def test_every_named_semaphore_says_its_link():
    res = triage.triage(hung("xfs_buf_lock"), AUDIT, "t", "series", frozenset(), [], None)
    items = [lk for r in res["reports"] for lk in r["locks"]] + res["exercised"] + \
        res["allocated"]
    assert items and all(lk["link"] for lk in items if lk["id"])


def test_a_log_of_another_version_is_refused_or_read_and_said(tmp_path, capsys):
    from qemu import cli
    log = tmp_path / "old.log"
    log.write_text(PAGE_FAULT.replace("6.1.192 #1", "5.10.0-rc3+ #1"))
    audit = str(REPO / "reports" / "linux-6.1.192" / "audit.json")
    assert cli.main(["triage", str(log), "--audit", audit]) == 2
    err = capsys.readouterr().err
    assert "the log is of Linux 5.10.0, the audit of 6.1.192" in err and \
        "--other-version" in err
    assert cli.main(["triage", str(log), "--audit", audit, "--other-version"]) == 0
    assert "note: the log is of Linux 5.10.0, the audit of 6.1.192: read against it" in \
        capsys.readouterr().out
    assert cli.main(["triage", str(log), "--audit", audit, "--other-version",
                     "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["version"].startswith("the log is of Linux")
    # the audit's own version (with the tree's "+") reads without a word
    log.write_text(PAGE_FAULT.replace("6.1.192 #1", "6.1.192+ #1"))
    assert cli.main(["triage", str(log), "--audit", audit]) == 0
    assert "note:" not in capsys.readouterr().out


# printk.c of 6.1 as far as it ties console_sem to its lockdep map and its helper
PRINTK = """\
static DEFINE_SEMAPHORE(console_sem);
#ifdef CONFIG_LOCKDEP
static struct lockdep_map console_lock_dep_map = {
	.name = "console_lock"
};
#endif
#define down_console_sem() do { \\
	down(&console_sem);\\
	mutex_acquire(&console_lock_dep_map, 0, 0, _RET_IP_);\\
} while (0)
{filler}
void console_lock(void)
{
	might_sleep();
	down_console_sem();
	console_locked = 1;
}
"""
CONSOLE_SEM = "kernel/printk/printk.c:console_sem"

CONSOLE_ABBA = ABBA.replace("(&dev->addr_list_lock){+...}-{2:2}, at: dev_uc_add",
                            "(console_lock){+.+.}-{0:0}, at: vprintk_emit")


def printk_links(tmp_path, text: str):
    from classify import lockdepmaps
    (tmp_path / "kernel" / "printk").mkdir(parents=True)
    (tmp_path / "kernel" / "printk" / "printk.c").write_text(text)
    return lockdepmaps.scan(tmp_path, [("kernel/printk/printk.c", 8, CONSOLE_SEM)])


def test_a_lockdep_map_and_a_macro_helper_of_the_tree_name_console_sem(tmp_path):
    links = printk_links(tmp_path, PRINTK.replace("{filler}", ""))
    assert links.maps == {"console_lock": (CONSOLE_SEM, "kernel/printk/printk.c:9")}
    assert links.helpers["console_lock"][0] == CONSOLE_SEM
    res = triage.triage(CONSOLE_ABBA, AUDIT, "t", "series", frozenset(), [], None, "", links)
    (lk,) = [lk for lk in res["reports"][0]["locks"] if lk["id"]]
    assert lk["id"] == CONSOLE_SEM and lk["lock_class"] == "console_lock"
    assert "lockdep map acquired beside the semaphore's take at kernel/printk/printk.c:9" \
        in lk["link"]
    hung_text = hung("console_lock", caller="console_device", comm="init")
    res = triage.triage(hung_text, AUDIT, "t", "series", frozenset(), [], None, "", links)
    (lk,) = res["reports"][0]["locks"]
    assert lk["id"] == CONSOLE_SEM and "through down_console_sem()" in lk["link"]
    # without the tree neither is known: nothing named
    assert named(CONSOLE_ABBA) == [] and named(hung_text) == []


def test_a_map_acquired_in_another_function_is_not_the_semaphores(tmp_path):
    other = PRINTK.replace("	mutex_acquire(&console_lock_dep_map, 0, 0, _RET_IP_);\\\n", "")
    other = other.replace("{filler}", "void other(void)\n{\n\tmutex_acquire(&console_lock_dep_map"
                          ", 0, 0, _RET_IP_);\n}")
    assert printk_links(tmp_path, other).maps == {}
