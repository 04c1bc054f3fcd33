"""What the call graph knows about execution contexts: the ops-table fields and
the registration calls whose callbacks run in a known context.

Contexts: ``process`` (may sleep), ``softirq`` (timers, tasklets, RCU callbacks,
and code with bottom halves disabled), ``hardirq`` (interrupt handlers, IPIs).
``atomic`` in the tables below is process context that may not sleep (called
under a spinlock or RCU by the core): it gives ``process`` with an atomic path.
A field or registration that is not listed gives ``unknown``.
"""

from __future__ import annotations

PROCESS, SOFTIRQ, HARDIRQ, UNKNOWN, ATOMIC = "process", "softirq", "hardirq", "unknown", "atomic"

CONTEXTS = (PROCESS, SOFTIRQ, HARDIRQ, UNKNOWN)


def _all(ctx: str, *fields: str) -> dict[str, str]:
    return {f: ctx for f in fields}


_DRIVER = _all(PROCESS, "probe", "probe_new", "remove", "shutdown", "disconnect")

# struct type -> field -> context; "*" stands for every field of the type.
OPS_FIELDS: dict[str, dict[str, str]] = {
    # the VFS calls these from system calls, in the calling task
    "file_operations": _all(PROCESS, "open", "release", "read", "write", "read_iter",
                            "write_iter", "unlocked_ioctl", "compat_ioctl", "llseek",
                            "mmap", "poll", "fsync", "flush"),
    "proc_ops": _all(PROCESS, "proc_open", "proc_release", "proc_read", "proc_write",
                     "proc_ioctl", "proc_compat_ioctl", "proc_lseek", "proc_poll"),
    "v4l2_file_operations": _all(PROCESS, "open", "release", "read", "write", "poll",
                                 "unlocked_ioctl", "mmap"),
    "block_device_operations": _all(PROCESS, "open", "release", "ioctl", "compat_ioctl",
                                    "getgeo"),
    # the driver core probes and removes from a task (driver_register, deferred
    # probe work, sysfs bind/unbind, module unload)
    "pci_driver": {**_DRIVER, **_all(PROCESS, "sriov_configure", "suspend", "resume")},
    "platform_driver": _DRIVER,
    "i2c_driver": _DRIVER,
    "spi_driver": _DRIVER,
    "usb_driver": {**_DRIVER, **_all(PROCESS, "suspend", "resume", "reset_resume",
                                     "pre_reset", "post_reset")},
    "xenbus_driver": {**_DRIVER, **_all(PROCESS, "otherend_changed", "reclaim_memory",
                                        "resume")},
    # AER recovery runs in a kthread/workqueue, reset_prepare/done around
    # pci_reset_function() from sysfs or a driver's process context
    "pci_error_handlers": _all(PROCESS, "error_detected", "mmio_enabled", "slot_reset",
                               "resume", "reset_prepare", "reset_done"),
    # system sleep callbacks run in the PM task (runtime PM ones may be irq-safe)
    "dev_pm_ops": _all(PROCESS, "prepare", "complete", "suspend", "resume", "freeze",
                       "thaw", "poweroff", "restore"),
    # under RTNL, from ioctl/netlink; the transmit path runs with bottom halves
    # off, the watchdog from a timer, the stats and rx-mode under RCU/a spinlock
    "net_device_ops": {**_all(PROCESS, "ndo_open", "ndo_stop", "ndo_init", "ndo_uninit",
                              "ndo_do_ioctl", "ndo_eth_ioctl", "ndo_siocdevprivate",
                              "ndo_set_mac_address", "ndo_change_mtu", "ndo_set_features",
                              "ndo_vlan_rx_add_vid", "ndo_vlan_rx_kill_vid"),
                       **_all(SOFTIRQ, "ndo_start_xmit", "ndo_tx_timeout"),
                       **_all(ATOMIC, "ndo_get_stats64", "ndo_get_stats",
                              "ndo_set_rx_mode")},
    # ethtool ioctl/netlink, under RTNL
    "ethtool_ops": {"*": PROCESS},
    # reclaim: from kswapd or an allocating task
    "shrinker": _all(PROCESS, "count_objects", "scan_objects"),
    # the frontend kthread and the frontend ioctls
    "dvb_frontend_ops": _all(PROCESS, "init", "sleep", "i2c_gate_ctrl", "set_frontend",
                             "get_frontend", "tune", "read_status"),
    # sysfs read/write
    "device_attribute": _all(PROCESS, "show", "store"),
    "driver_attribute": _all(PROCESS, "show", "store"),
    "kobj_attribute": _all(PROCESS, "show", "store"),
    "bus_attribute": _all(PROCESS, "show", "store"),
    "class_attribute": _all(PROCESS, "show", "store"),
    # module parameters: set at load or through sysfs
    "kernel_param_ops": _all(PROCESS, "set", "get"),
    # sysctl writes and reads
    "ctl_table": _all(PROCESS, "proc_handler"),
    "bin_attribute": _all(PROCESS, "read", "write", "mmap"),
    # nl80211 and cfg80211's work items call these with the wiphy mutex held
    "cfg80211_ops": {"*": PROCESS},
    # the SCSI midlayer's ioctl path, scanning and error handler thread
    "scsi_host_template": _all(PROCESS, "ioctl", "compat_ioctl", "slave_alloc",
                               "slave_configure", "slave_destroy", "scan_start",
                               "scan_finished", "eh_abort_handler",
                               "eh_device_reset_handler", "eh_target_reset_handler",
                               "eh_bus_reset_handler", "eh_host_reset_handler"),
    # the iSCSI target's login and connection threads
    "iscsit_transport": {"*": PROCESS},
}

_IRQ, _THREAD = {1: HARDIRQ}, {1: HARDIRQ, 2: PROCESS}
_WORK, _FIRST = {1: PROCESS}, {0: PROCESS}

# function -> argument index -> the context the function passed there runs in.
# callbacks the core calls with a lock of its own held, and where it takes it:
# a lock every take of which is under it may protect nothing more (ksz884x's
# proc_sem, taken only in its ndo_eth_ioctl)
HELD_BY_CORE: dict[str, tuple[str, str]] = {
    **{f"net_device_ops.{f}": ("RTNL", "dev_ioctl() takes rtnl_lock() around dev_ifsioc()")
       for f in ("ndo_do_ioctl", "ndo_eth_ioctl", "ndo_siocdevprivate")},
    **{f"net_device_ops.{f}": ("RTNL", "the core asserts it with ASSERT_RTNL()")
       for f in ("ndo_open", "ndo_stop", "ndo_change_mtu", "ndo_set_features",
                 "ndo_vlan_rx_add_vid", "ndo_vlan_rx_kill_vid")},
}


REGISTRATIONS: dict[str, dict[int, str]] = {
    "request_irq": _IRQ, "request_any_context_irq": _IRQ, "request_percpu_irq": _IRQ,
    "request_threaded_irq": _THREAD,
    "devm_request_irq": {2: HARDIRQ}, "devm_request_any_context_irq": {2: HARDIRQ},
    "devm_request_threaded_irq": {2: HARDIRQ, 3: PROCESS},
    "pci_request_irq": {2: HARDIRQ, 3: PROCESS},
    "request_nmi": {1: HARDIRQ}, "request_percpu_nmi": {1: HARDIRQ},
    # an I2C slave's callback runs in the adapter's interrupt handler
    "i2c_slave_register": {1: HARDIRQ},
    "timer_setup": {1: SOFTIRQ}, "DEFINE_TIMER": {1: SOFTIRQ},
    "tasklet_setup": {1: SOFTIRQ}, "tasklet_init": {1: SOFTIRQ},
    "DECLARE_TASKLET": {1: SOFTIRQ}, "DECLARE_TASKLET_OLD": {1: SOFTIRQ},
    "call_rcu": {1: SOFTIRQ},
    # IPIs: the function runs in the interrupt of each CPU
    "on_each_cpu": {0: HARDIRQ}, "smp_call_function": {0: HARDIRQ},
    "smp_call_function_single": {1: HARDIRQ}, "smp_call_function_many": {1: HARDIRQ},
    "INIT_WORK": _WORK, "INIT_DELAYED_WORK": _WORK, "INIT_WORK_ONSTACK": _WORK,
    "INIT_DELAYED_WORK_ONSTACK": _WORK, "INIT_DEFERRABLE_WORK": _WORK,
    "DECLARE_WORK": _WORK, "DECLARE_DELAYED_WORK": _WORK,
    "DECLARE_DEFERRABLE_WORK": _WORK, "INIT_RCU_WORK": _WORK,
    "kthread_init_work": _WORK, "kthread_init_delayed_work": _WORK,
    "kthread_run": _FIRST, "kthread_create": _FIRST, "kthread_create_on_node": _FIRST,
    "kthread_create_on_cpu": _FIRST, "kthread_run_on_cpu": _FIRST,
    # module and built-in initcalls run from the loading task / kernel_init
    **{name: _FIRST for name in ("module_init", "module_exit", "late_initcall",
                                 "device_initcall", "subsys_initcall", "fs_initcall",
                                 "arch_initcall", "core_initcall", "postcore_initcall",
                                 "rootfs_initcall", "__initcall", "late_initcall_sync",
                                 "subsys_initcall_sync", "device_initcall_sync")},
    "DEVICE_ATTR": {2: PROCESS, 3: PROCESS},
    # the RDMA CM delivers events from its work queues (and the caller's task)
    "rdma_create_id": {1: PROCESS},
}


def field_context(struct: str, field: str) -> str:
    """The context of an ops-table field: PROCESS, SOFTIRQ, HARDIRQ, ATOMIC or UNKNOWN."""
    table = OPS_FIELDS.get(struct, {})
    return table.get(field) or table.get("*") or UNKNOWN


def registration_context(passer: str, index: int) -> str:
    """The context a function passed to passer at index runs in, "" when passer
    is not a registration (then it calls what it is given, synchronously)."""
    return REGISTRATIONS.get(passer, {}).get(index, "")


# Callbacks that the core calls in turn on one task: the first may take what the
# second gives back, as a lock held across the two.  (struct, first, second): why.
PAIRED_FIELDS: dict[tuple[str, str, str], str] = {
    ("pci_error_handlers", "reset_prepare", "reset_done"):
        "the PCI core calls reset_prepare() and then reset_done() on the task that "
        "resets the function (pci_dev_save_and_disable(), pci_dev_restore())",
    ("usb_driver", "pre_reset", "post_reset"):
        "usb_reset_device() calls pre_reset() and then post_reset() on its task",
}

# Callbacks with an on/off argument whose callers call them with 1 and then with 0
# on one task, around one transfer: field -> why.  The pairing proof checks the
# calls in the file that stores the callback (census.pairs.gate_left_open); the
# text says what it takes on trust for the callers elsewhere.  Not a rule of the
# kernel: in 6.1, 108 of the 198 i2c_gate_ctrl(fe, 1) calls leave their function
# with no (fe, 0) on some path; 77 never call (fe, 0) (gates that close themselves
# after one transfer), 31 miss it on an error path.
FLAG_FIELDS: dict[str, str] = {
    "i2c_gate_ctrl":
        "elsewhere (dvb_frontend.c, the tuner drivers attached to this frontend) it "
        "relies on the DVB drivers' convention, which dvb_frontend.h does not spell "
        "out: the I2C gate is opened with i2c_gate_ctrl(fe, 1) and closed with "
        "i2c_gate_ctrl(fe, 0) by the same task",
    "tuner_i2c_lock":
        "stv090x calls tuner_i2c_lock(fe, 1) when its I2C gate opens and (fe, 0) when it "
        "closes, where it otherwise holds its own tuner_lock mutex over the same window "
        "(stv090x.c), so the two calls pair as the gate's opening and closing do",
}

# Ops tables entered from a system call: a function there that returns holding a
# semaphore holds it across the return to user space, which a mutex may not.
SYSCALL_STRUCTS = frozenset((
    "file_operations", "proc_ops", "v4l2_file_operations", "block_device_operations",
    "device_attribute", "driver_attribute", "kobj_attribute", "bus_attribute",
    "class_attribute", "kernel_param_ops", "ctl_table"))
