"""The subject line of a conversion patch: the prefix, then what is converted,
capitalised after the prefix (``RDMA/hns: Convert poll_sem to a mutex``).

The prefix is the one the files' own history uses where the tree has one (a
user's tree: ``history_prefix``, the last commits to those files); the pristine
tree has no history, and there ``subject_prefix`` derives it from the path.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter
from pathlib import Path


# the first directory under drivers/ (or the top) -> the label its maintainers use
_LABELS = {"infiniband": "RDMA", "net": "net", "gpu": "drm", "md": "md", "mmc": "mmc",
           "ata": "ata", "block": "block", "hid": "HID", "input": "Input",
           "media": "media", "mtd": "mtd", "scsi": "scsi", "target": "scsi: target",
           "tty": "tty", "usb": "usb", "xen": "xen", "staging": "staging",
           "platform": "platform", "sound": "ALSA", "fs": "fs"}


# directories that only gather unrelated drivers: the next directory is the subsystem
_GATHER = {"char", "misc"}


def _named_after(directory: str, stem: str) -> bool:
    """hinic/hinic_hw_wq.c, vmw_pvrdma/pvrdma_cmd.c: the file belongs to a driver
    named after its directory."""
    d, f = directory.replace("-", "_"), stem.replace("-", "_")
    return bool(d) and (d in f or f.split("_")[0] in d)


def _stem_words(paths: list[str]) -> str:
    """The words (split at "_") that the files' names all start with:
    "iwpm" for iwpm_msg.c and iwpm_util.c."""
    words = [Path(p).stem.split("_") for p in paths]
    shared = []
    for column in zip(*words):
        if len(set(column)) != 1:
            break
        shared.append(column[0])
    return "_".join(shared)


def _component(paths: list[str]) -> str:
    """The driver.  For several files, the deepest common directory, or, when
    they sit in one directory that gathers components (infiniband/core), the
    component their names share (iwpm_msg.c, iwpm_util.c: iwpm).  For one file,
    its directory when the file is named after it (hinic/hinic_hw_wq.c,
    esas2r/esas2r_ioctl.c: a driver of several files), else the file's own name
    (micrel/ksz884x.c, xen/pvcalls-back.c: one driver among others)."""
    if len(set(paths)) > 1:
        common = Path(os.path.commonpath(paths))
        stem = _stem_words(paths)
        if len({Path(p).parent for p in paths}) == 1 and stem \
                and not _named_after(common.name, stem):
            return stem
        return common.name
    path = Path(paths[0])
    if _named_after(path.parent.name, path.stem):
        return path.parent.name
    return path.stem


def subject_prefix(paths: list[str]) -> str:
    """"net: ksz884x: " for drivers/net/ethernet/micrel/ksz884x.c, and so on.

    paths: the .c files a patch touches (or all its files when it touches none).
    """
    paths = sorted(set(paths))
    common = os.path.commonpath(paths) if len(paths) > 1 else str(Path(paths[0]).parent)
    parts = common.split("/")
    if parts[0] == "drivers" and len(parts) > 1:
        parts = parts[1:]
    elif parts[0] in ("include", "arch") and len(parts) > 2:
        parts = parts[1:]
    top, rest = parts[0], parts[1:]
    comp = _component(paths)
    if top in _GATHER and rest:
        top, rest = rest[0], rest[1:]
    if top == "infiniband":
        # RDMA/<driver>, except the upper-layer protocols: IB/isert, IB/srp
        label = "IB" if rest[:1] == ["ulp"] else "RDMA"
        return f"{label}/{comp}: " if comp != top else "RDMA: "
    if top == "xen":
        return f"xen/{comp}: " if comp != top else "xen: "     # xen/xenbus, xen/gntdev
    if top == "gpu" and rest[:1] == ["drm"]:
        # the DRM tree's slash form, drm/<driver>: drm/amdkfd, drm/i915; amd/ only
        # gathers AMD's drivers (amdgpu, amdkfd, display)
        driver = rest[1:]
        if driver[:1] == ["amd"] and len(driver) > 1:
            driver = driver[1:]
        return f"drm/{driver[0]}: " if driver else "drm: "
    if top == "platform":
        return "platform/" + "/".join(rest + ([comp] if comp not in rest else [])) + ": "
    if top == "net" and rest[:1] == ["wireless"]:
        label = "wifi"
    else:
        label = _LABELS.get(top, top)
    if top == "usb" and rest[:1] == ["gadget"]:
        label = "usb: gadget"
    if comp in (top, *label.split(": ")) and len(paths) == 1:
        comp = Path(paths[0]).stem     # a driver named after its subsystem's directory
    if comp in (top, *label.split(": ")):
        return f"{label}: "
    # ipmi/ipmi_ssif.c is "ipmi: ssif:": the subsystem's name is not said twice
    comp = comp.removeprefix(label + "_") or comp
    return f"{label}: {comp}: "


# member names that say nothing of what they guard: the subject names the struct
_VAGUE = re.compile(r"^(sem|sema|semaphore|lock|mutex|irq|wait|done|.{1,2})$")
# what a name says of the type, which the subject need not repeat
_TYPE_WORD = re.compile(r"(?:^|_)(?:semaphore|sema|sem|mutex|lock)$")


def lock_stem(sem: dict) -> str:
    """What the lock is called without the word for its type: "poll" for
    poll_sem, "pll" for pll_mutex, the struct for a member named sem
    ("hisi_hba"), the struct and member for a vague one ("ieee1284_info.irq")."""
    name = sem["id"].rsplit(":", 1)[-1].split("@")[0]
    struct, _, member = name.rpartition(".")
    stem = _TYPE_WORD.sub("", member)
    if stem and not _VAGUE.match(stem):
        return stem
    if stem:
        return name
    return struct or name


# the subject line, prefix included, at most (submitting-patches.rst: 70-75)
SUBJECT_LIMIT = 75


def summary(sems: list[dict], limit: int = 64) -> str:
    """"Convert the poll semaphore to a mutex": what the patch converts, by the
    locks' names without the word for their type (a subject that says "Convert
    pll_mutex to a mutex" says nothing); several: "the a and b semaphores", or
    "the driver's semaphores" when that would be long.  limit: what the prefix
    leaves of the subject line ("Make the raw_event_queue semaphore a
    completion" when the first form is longer)."""
    classes = sorted({s["class"] for s in sems}, reverse=True)
    many = len(sems) > 1
    names = {"mutex": ("a mutex", "mutexes"), "completion": ("a completion", "completions")}
    what = " and ".join(names[c][many] for c in classes)
    if not many:
        text = f"Convert the {lock_stem(sems[0])} semaphore to {what}"
        return text if len(text) <= limit else f"Make the {lock_stem(sems[0])} semaphore {what}"
    text = f"Convert the {' and '.join(lock_stem(s) for s in sems)} semaphores to {what}" \
        if len(sems) == 2 else ""
    if not text or len(text) > limit:
        text = f"Convert the driver's semaphores to {what}"
    return text


# subjects that say nothing of the files' own prefix
_NOT_A_PREFIX = re.compile(r"^(Merge|Revert|treewide|Linux \d)", re.I)


def prefix_of_subjects(subjects: list[str], least: int = 2) -> str:
    """The longest "xxx: yyy: " prefix that more than half of subjects start with
    (and at least `least` of them); "" when there is none.  Merges, reverts and
    tree-wide changes do not count."""
    subjects = [s.strip() for s in subjects if s.strip() and not _NOT_A_PREFIX.match(s)]
    counts: Counter[str] = Counter()
    for s in subjects:
        parts = s.split(": ")[:-1]          # the last part is the summary itself
        for n in range(1, len(parts) + 1):
            counts[": ".join(parts[:n]) + ": "] += 1
    good = [p for p, n in counts.items() if n >= least and 2 * n > len(subjects)
            and " " not in p.rstrip(": ").replace(": ", "")]
    return max(good, key=lambda p: (p.count(": "), counts[p], p), default="")


def has_history(tree: Path) -> bool:
    """tree is a git repository whose HEAD is a commit of a real history: not the
    pristine import (tagged `pristine`) nor a copy sem2mutex committed itself."""
    def rev(ref: str) -> str:
        res = subprocess.run(["git", "-C", str(tree), "rev-parse", "-q", "--verify",
                              f"{ref}^{{commit}}"], capture_output=True, text=True)
        return res.stdout.strip() if res.returncode == 0 else ""
    if not (Path(tree) / ".git").exists():
        return False
    head = rev("HEAD")
    if not head or head == rev("refs/tags/pristine"):
        return False
    res = subprocess.run(["git", "-C", str(tree), "log", "-1", "--format=%ce", head],
                         capture_output=True, text=True)
    return res.stdout.strip() != "sem2mutex@localhost"


def history_prefix(tree: Path, paths: list[str], n: int = 20) -> str:
    """The prefix the last n commits to paths use (``git log --format=%s``), ""
    when the tree has no history or they agree on none."""
    if not paths or not has_history(tree):
        return ""
    res = subprocess.run(["git", "-C", str(tree), "log", "--no-merges", "--format=%s",
                          "-n", str(n), "--", *paths], capture_output=True, text=True)
    return prefix_of_subjects(res.stdout.splitlines()) if res.returncode == 0 else ""


def patch_prefix(tree: Path, paths: list[str]) -> str:
    """The history's prefix where there is one, else the rules of subject_prefix."""
    return history_prefix(tree, paths) or subject_prefix(paths)


def common_prefix(prefixes: list[str], fallback: str) -> str:
    """The prefix every patch of a series shares ("net: hinic: " and "net: ksz884x: "
    share "net: "), else fallback (the series' name)."""
    # IB/ and RDMA/ name one subsystem: a series of both is RDMA's
    split = [re.sub(r"^IB/", "RDMA/", p.rstrip().rstrip(":")).split(": ") for p in prefixes]
    shared: list[str] = []
    for words in zip(*split):
        if len(set(words)) != 1:
            break
        shared.append(words[0])
    if not shared and split:
        # "RDMA/hns" and "RDMA/isert" share "RDMA"
        heads = [w[0].split("/") for w in split]
        for parts in zip(*heads):
            if len(set(parts)) != 1:
                break
            shared.append(parts[0])
        shared = ["/".join(shared)] if shared else []
    return (": ".join(shared) if shared else fallback) + ": "
