"""Lock order against a framework's lock (classify.census.order): the ath6kl
shape, which must be found, and its look-alikes, which must not."""

from classify.census.order import order_inversions

DRIVER = """\
static void stop(struct ar *ar)
{
	down(&ar->sem);
	rtnl_lock();
	cleanup(ar);
	rtnl_unlock();
	up(&ar->sem);
}

static void get_stats(struct net_device *dev, u64 *data)
{
	struct ar *ar = netdev_priv(dev);

	if (down_interruptible(&ar->sem))
		return;
	read_stats(ar, data);
	up(&ar->sem);
}
"""


def _sem(callers: list[str], text: str = DRIVER) -> dict:
    lines = text.split("\n")
    ops = []
    for n, line in enumerate(lines, 1):
        for op in ("down_interruptible", "down", "up"):
            if f"{op}(&ar->sem)" in line:
                func = "stop" if n < 9 else "get_stats"
                ops.append({"path": "drivers/x/a.c", "line": n, "op": op, "function": func,
                            "balanced": True,
                            **({"callers": callers} if func == "get_stats" and op != "up"
                               else {})})
                break
    return {"id": "drivers/x/a.h:ar.sem", "class": "mutex", "ops": ops}


ETHTOOL = ["drivers/x/a.c:40 get_stats() is ethtool_ops.get_ethtool_stats (process)"]


def test_a_lock_held_around_rtnl_and_taken_under_it_is_found():
    (f,) = order_inversions(_sem(ETHTOOL), lambda p: DRIVER)
    assert (f.holder, f.outer, f.callback, f.table) == (
        "stop", "rtnl_lock", "get_stats", "ethtool_ops.get_ethtool_stats")
    assert f.take == "drivers/x/a.c:3" and f.outer_at == "drivers/x/a.c:4"
    assert "runs under RTNL and takes sem (drivers/x/a.c:14)" in f.sentence()


def test_look_alikes_are_not_found():
    # the take's callers run under no framework lock (a debugfs read)
    debugfs = ["drivers/x/a.c:50 get_stats() is file_operations.read (process)"]
    assert order_inversions(_sem(debugfs), lambda p: DRIVER) == []
    # a transmit callback runs in softirq context, not under RTNL
    xmit = ["drivers/x/a.c:50 get_stats() is net_device_ops.ndo_start_xmit (softirq)"]
    assert order_inversions(_sem(xmit), lambda p: DRIVER) == []
    # RTNL taken after the lock is released: one order only
    after = DRIVER.replace("\tdown(&ar->sem);\n\trtnl_lock();\n\tcleanup(ar);\n"
                           "\trtnl_unlock();\n\tup(&ar->sem);",
                           "\tdown(&ar->sem);\n\tcleanup(ar);\n\tup(&ar->sem);\n"
                           "\trtnl_lock();\n\trtnl_unlock();")
    assert order_inversions(_sem(ETHTOOL, after), lambda p: after) == []


def test_the_wiphy_mutex_through_a_callee():
    text = DRIVER.replace("\trtnl_lock();\n\tcleanup(ar);\n\trtnl_unlock();",
                          "\tcleanup(ar);").replace(
        "static void get_stats", "static void cleanup(struct ar *ar)\n{\n"
        "\twiphy_lock(ar->wiphy);\n\twiphy_unlock(ar->wiphy);\n}\n\nstatic void get_stats")
    connect = ["drivers/x/a.c:60 get_stats() is cfg80211_ops.connect (process)"]
    (f,) = order_inversions(_sem(connect, text), lambda p: text)
    assert f.outer == "wiphy_lock" and f.via == ("cleanup",)
    assert "cleanup() calls wiphy_lock()" in f.sentence()
