"""The inputs of the boot side's commands, checked before any stage starts: the one
error path of classify.inputs (one line naming the input, exit status 2).

    check_command      every subcommand: a kernel tree that is one, files to read that
                       are files, nothing written under reports/ or kernel-patches/
    check_triage       LOG= a console log or dmesg, its audit (AUDIT=, or the one of
                       KERNEL=/TREE=, or the committed one of the log's version) of the
                       log's version, OUT= a file outside reports/ and kernel-patches/
    check_full_kernel  CONFIG= a file to read, --build-dir outside the committed folders
    check_boot         the scenarios named, --out, and --record (the runtime record of
                       a tree `make setup` unpacks, or a file in the work area)
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from classify.inputs import (InputError, input_file, load_audit, load_runtime,
                             output_file, refuse_committed, shown)
from classify.paths import REPORTS_DIR, default_out
from classify.tree import check_kernel_tree
from qemu import logstream, parse, runtime
from qemu.scenarios import list_scenarios

_VERSION = re.compile(r"Linux version (\d+\.\d+\.\d+)")
# A line only a kernel's console, dmesg (-T, --color) or journalctl -k prints.
_KERNEL_LINE = re.compile(r"^(?:\x1b\[[\d;]*m)*\s*(?:<\d+>)?\[\s*\d+\.\d+\]"
                          r"|^\[\w{3} \w{3} +\d+ [\d:]+ \d{4}\]"
                          r"|Linux version \d|\bkernel: ", re.M)


def kernel_log(text: str) -> bool:
    """True when text reads as a console log or dmesg output (a kernel line, or a
    report the parser knows)."""
    return bool(_KERNEL_LINE.search(text)) or bool(parse.parse_log(text).reports)


def log_version(text: str) -> str:
    m = _VERSION.search(text)
    return m[1] if m else ""


def triage_audit(args: argparse.Namespace, version: str) -> Path:
    """The audit triage reads: AUDIT=, else the one `make audit` wrote for KERNEL=
    (TREE=), else the committed one of the log's version."""
    if args.kernel is not None:
        tree = check_kernel_tree(args.kernel)
        if version and version != tree.version:
            raise InputError(f"log {args.log}: a log of Linux {version}, but KERNEL= "
                             f"{args.kernel} is Linux {tree.version}: name the tree the "
                             "kernel was built from")
        return args.audit or default_out(tree.path, tree.version) / "audit.json"
    if args.audit is not None:
        return args.audit
    committed = REPORTS_DIR / f"linux-{version}" / "audit.json"
    if version and committed.is_file():
        return committed
    found = sorted(REPORTS_DIR.glob("linux-*/audit.json"))
    if not version and len(found) == 1:
        return found[0]
    raise InputError(f"log {args.log}: no committed audit of "
                     + (f"Linux {version}" if version else "its kernel (no \"Linux "
                        "version\" line)") + ": give AUDIT= (--audit) or KERNEL=")


def read_triage_log(path: Path) -> logstream.Log:
    """The log triage reads (qemu.logstream: any size, in bounded memory); InputError
    when it is not a text file of a reasonable size."""
    try:
        return logstream.read_log(path)
    except logstream.LogError as err:
        raise InputError(str(err)) from None
    except OSError as err:
        raise InputError(f"log {path}: cannot read it: {err.strerror or err}") from None


def check_triage(args: argparse.Namespace) -> None:
    args.log_data = read_triage_log(args.log)
    text = args.log_data.text
    if not kernel_log(text) and not kernel_log(args.log_data.head):
        raise InputError(f"log {args.log}: no kernel line in it: not a console log or "
                         "dmesg output")
    version = log_version(text)
    args.audit = triage_audit(args, version)
    audit = load_audit(args.audit, "audit")
    if version and audit["kernel_version"] != version:
        raise InputError(f"audit {args.audit}: an audit of Linux "
                         f"{audit['kernel_version']}, but the log is of Linux {version}")
    beside = Path(args.audit).parent / "runtime.json"
    if beside.is_file():
        load_runtime(beside, "runtime record")
    if args.record is not None:
        output_file(args.record, "--record")
    if args.built is not None and not args.built.exists():
        raise InputError(f"--built {args.built}: no such file or directory")


def check_full_kernel(args: argparse.Namespace) -> None:
    input_file(args.config, "config")
    if args.build_dir is not None:
        refuse_committed(args.build_dir, "--build-dir")


def check_boot(args: argparse.Namespace) -> None:
    known = list_scenarios()
    for name in args.scenario or []:
        if name not in known:
            raise InputError(f"--scenario {name}: no such scenario (known: "
                             f"{', '.join(known)})")
    if args.out is not None:
        refuse_committed(args.out, "--out")
    if args.record is not None:
        tree = check_kernel_tree(args.kernel)
        own = runtime.record_path(tree.path, tree.version, runtime.audit_path(tree.version))
        refuse_committed(args.record, "--record", allowed=own)
        if Path(args.record).resolve() != own.resolve():
            output_file(args.record, "--record")
        elif not runtime.audit_path(tree.version).is_file():
            raise InputError(f"{shown(runtime.audit_path(tree.version))}: no audit of "
                             f"Linux {tree.version}: run `make audit` first")


def add_triage_kernel(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--kernel", type=Path, default=None, help="the tree the kernel was "
                    "built from (make's KERNEL=, TREE=): its audit (the one `make audit` "
                    "wrote for it) unless --audit; the log must be of its version "
                    "(default: the committed audit of the log's version)")


def check_command(args: argparse.Namespace) -> None:
    """The paths a command line names, before any stage starts: a kernel tree that
    is one, files to read that are files, nothing to write under reports/ or
    kernel-patches/ but the runtime record of a tree `make setup` unpacks."""
    if args.cmd == "triage":
        check_triage(args)
        return
    if args.cmd == "full-kernel":
        check_full_kernel(args)
    if getattr(args, "kernel", None) is not None:
        check_kernel_tree(args.kernel)
    if args.cmd in ("parse", "fixture"):
        input_file(args.log, "log")
    if args.cmd == "fixture":
        output_file(args.dest, "fixture")
    if args.cmd == "run":
        output_file(args.log, "--log")
        for path, what in ((args.image, "--image"), (args.initrd, "--initrd")):
            if path is not None and not path.is_file():
                raise InputError(f"{what} {path}: no such file")
    if args.cmd in ("boot", "boot-test"):
        check_boot(args)
