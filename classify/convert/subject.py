"""The subject line of a conversion patch: the subsystem's prefix and the driver,
then what is converted.
"""

from __future__ import annotations

import os
from pathlib import Path


# the first directory under drivers/ (or the top) -> the label its maintainers use
_LABELS = {"infiniband": "RDMA", "net": "net", "gpu": "drm", "md": "md", "mmc": "mmc",
           "ata": "ata", "block": "block", "hid": "HID", "input": "Input",
           "media": "media", "mtd": "mtd", "scsi": "scsi", "target": "scsi: target",
           "tty": "tty", "usb": "usb", "xen": "xen", "staging": "staging",
           "platform": "platform", "sound": "ALSA", "fs": "fs"}


# directories that only gather unrelated drivers: the next directory is the subsystem
_GATHER = {"char", "misc"}


def _component(paths: list[str]) -> str:
    """The driver: the deepest common directory of several files; for one file,
    its directory when the file is named after it (hinic/hinic_hw_wq.c,
    esas2r/esas2r_ioctl.c: a driver of several files), else the file's own name
    (micrel/ksz884x.c, xen/pvcalls-back.c: one driver among others)."""
    if len(set(paths)) > 1:
        return Path(os.path.commonpath(paths)).name
    path = Path(paths[0])
    if path.parent.name and path.parent.name.replace("-", "_") in path.stem.replace("-", "_"):
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
        return f"RDMA/{comp}: " if comp != top else "RDMA: "
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
    return f"{label}: {comp}: "


def summary(sem: dict) -> str:
    name = sem["id"].rsplit(":", 1)[-1].split(".")[-1].split("@")[0]
    what = {"mutex": "a mutex", "completion": "a completion"}[sem["class"]]
    return f"convert {name} from a semaphore to {what}"


def common_prefix(prefixes: list[str], fallback: str) -> str:
    """The prefix every patch of a series shares ("net: hinic: " and "net: ksz884x: "
    share "net: "), else fallback: the subsystem's path."""
    split = [p.rstrip().rstrip(":").split(": ") for p in prefixes]
    shared: list[str] = []
    for words in zip(*split):
        if len(set(words)) != 1:
            break
        shared.append(words[0])
    return (": ".join(shared) if shared else fallback) + ": "
