"""A few semaphores of an audit (audit.json's shape), for the lock mapper and the
runtime records' tests."""


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
