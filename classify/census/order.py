"""Lock order against the locks a framework holds around its callbacks.

The networking core calls ethtool_ops and most net_device_ops with RTNL held;
cfg80211 calls cfg80211_ops with the wiphy mutex held.  A driver that takes its
lock in such a callback and, elsewhere, calls rtnl_lock() or wiphy_lock() while
holding the same lock has the two orders of an ABBA deadlock (ath6kl:
ath6kl_stop_txrx() holds ar->sem around rtnl_lock() and wiphy_lock(), while
ethtool's get_ethtool_stats and nl80211's connect take ar->sem under them).
The deadlock is there with the semaphore too; a semaphore has no lockdep class,
a mutex has, and lockdep then reports the inversion once both sides have run.
The patch must say so.

``order_inversions(sem, source, graph)`` takes one semaphore record of the
audit: the framework locks taken holding it (waits._Sem.held_sites: in the
holder or, MAX_DEPTH levels, the functions it calls) against the blocking takes
whose call paths (the audit's ``callers`` of each op) start at a callback of a
table that runs under that framework lock.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass

from classify.census.callgraph import CallGraph
from classify.census.waits import BLOCKING, _Sem
from classify.records.audit import AuditSem

# a call taking a framework lock -> how a sentence names that lock
OUTER = {"rtnl_lock": "RTNL", "rtnl_lock_killable": "RTNL", "wiphy_lock": "the wiphy mutex"}

# ops table -> (the framework lock its callbacks run under, the fields that do;
# empty: every field)
RUN_UNDER: dict[str, tuple[str, frozenset[str]]] = {
    "ethtool_ops": ("rtnl_lock", frozenset()),
    "net_device_ops": ("rtnl_lock", frozenset({
        "ndo_open", "ndo_stop", "ndo_init", "ndo_uninit", "ndo_do_ioctl", "ndo_eth_ioctl",
        "ndo_siocdevprivate", "ndo_set_mac_address", "ndo_change_mtu", "ndo_set_features",
        "ndo_vlan_rx_add_vid", "ndo_vlan_rx_kill_vid"})),
    "cfg80211_ops": ("wiphy_lock", frozenset()),
}
_SAME = {"rtnl_lock_killable": "rtnl_lock"}

# "drivers/x.c:3780 ath6kl_get_stats() is ethtool_ops.get_ethtool_stats (process)"
_ROOT = re.compile(r"(\w+)\(\) is (\w+)\.(\w+) \(")


@dataclass(frozen=True)
class OrderFinding:
    """The lock held while a framework lock is taken, and taken in a callback
    that runs under that framework lock.  Places are "path:line"."""
    sem: str
    lock: str
    holder: str              # the function holding the lock
    take: str
    outer: str               # rtnl_lock, wiphy_lock
    outer_at: str
    via: tuple[str, ...]     # the calls from the holder to the one taking outer
    callback: str            # the callback run under outer
    table: str               # ethtool_ops.get_ethtool_stats
    taken_in: str            # the function taking the lock on that path
    taken_at: str
    kind: str = "order"

    def sentence(self) -> str:
        """One sentence for a patch message."""
        name = OUTER[self.outer]
        caller = f"{self.via[-1]}() calls" if self.via else "it calls"
        taken = (f" in {self.taken_in}()" if self.taken_in != self.callback else "")
        return (f"{self.holder}() holds {self.lock} ({self.take}) while {caller} "
                f"{self.outer}() ({self.outer_at}); {self.callback}() "
                f"({self.table}) runs under {name} and takes {self.lock}{taken} "
                f"({self.taken_at}): the two orders can deadlock with the semaphore "
                "too, and lockdep reports the inversion once the lock is a mutex.")

    def to_json(self) -> dict:
        return {**asdict(self), "via": list(self.via), "sentence": self.sentence()}


def _under(table: str, field: str) -> str:
    """The framework lock a callback of table.field runs under, "" for none known."""
    outer, fields = RUN_UNDER.get(table, ("", frozenset()))
    return outer if outer and (not fields or field in fields) else ""


def order_inversions(sem: AuditSem, source: Callable[[str], str],
                     graph: CallGraph | None = None) -> list[OrderFinding]:
    """One finding per framework lock that the lock is held across and that
    runs a callback taking it (see the module doc)."""
    s = _Sem(sem, source, graph)
    held: dict[str, tuple] = {}
    for path, func in s.holders():
        for site in s.held_sites(path, func):
            outer = _SAME.get(site.call.name, site.call.name)
            if site.call.name in OUTER and outer not in held:
                held[outer] = (site, s.file(site.path).at(site.call.line))
    out: list[OrderFinding] = []
    for outer, (site, at) in held.items():
        hit = next(((o, m) for o in sorted(sem.get("ops", ()), key=lambda o: (o["path"],
                                                                               o["line"]))
                    if o["op"] in BLOCKING
                    for m in (_ROOT.search(c.split(" -> ")[0]) for c in o.get("callers", ()))
                    if m and _under(m.group(2), m.group(3)) == outer), None)
        if hit is None:
            continue
        o, m = hit
        out.append(OrderFinding(
            s.id, s.lock, site.holder[1], f"{site.holder[0]}:{site.take.line}",
            site.call.name, at, site.via, m.group(1), f"{m.group(2)}.{m.group(3)}",
            o["function"], f"{o['path']}:{o['line']}"))
    return out
