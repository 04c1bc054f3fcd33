"""python3 -m qemu SUBCOMMAND: each stage on its own, `boot` and `boot-test` chain them."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from classify.inputs import USER_ERRORS, OneLineParser, fail
from qemu import bitcheck, fullcli, inputs, parse, triage, triageeval
from qemu.boot import BOOTS_DIR, boot_test, build_kernel, summary
from qemu.build import build_dir_for
from qemu.common import DEFAULT_KERNEL, dumps
from qemu.config import ConfigRequest, ConfigStatus, configure
from qemu.arch import ARCHES
from qemu.rootfs import InitramfsStatus, make_initramfs, request_for
from qemu.run import RunRequest, RunStatus, run_qemu
from qemu.scenarios import list_scenarios, load_scenario, named_set, standard_set
from qemu.source import kernel_key, prepare_source

STANDARD = "standard set: every scenario in qemu/scenarios/ not marked standard = false"
CONTROL = ("build the control kernel (the tree without the series, the same configuration "
           "otherwise) and boot the control scenarios on it: reports/linux-<version>/"
           "selftest/pristine/ for the trees make setup unpacks")


def _fragments(text: str) -> tuple[str, ...]:
    return tuple(f for f in text.split(",") if f)


def fixture_header(parsed: parse.ParsedLog, source: str) -> str:
    """syzkaller-style header; the first report is the one the fixture is about."""
    if not parsed.reports:
        return f"KIND: none\nSOURCE: {source}\n"
    first = parsed.reports[0]
    also = sorted({r.kind for r in parsed.reports[1:]} - {first.kind})
    lines = [f"TITLE: {first.title}", f"KIND: {first.kind}"]
    if also:
        lines.append("ALSO: " + ", ".join(also))
    if first.locks:
        lines.append("LOCKS: " + ", ".join(lk.lock_class for lk in first.locks))
    if first.task:
        lines.append(f"TASK: {first.task}")
    lines.append(f"SOURCE: {source}")
    return "\n".join(lines) + "\n"


def kernel_arg(sp: argparse.ArgumentParser, arch: bool = True) -> None:
    sp.add_argument("--kernel", type=Path, default=DEFAULT_KERNEL,
                    help="kernel tree (read only; built from a worktree with the "
                    "series applied), default %(default)s")
    if arch:
        arch_arg(sp)


def arch_arg(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--arch", default="x86_64", choices=sorted(ARCHES),
                    help="kbuild ARCH and QEMU machine (default: %(default)s; arm64: "
                    "-M virt -cpu cortex-a57, aarch64-linux-gnu-gcc)")


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python3 -m qemu", description=__doc__)
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="cmd", required=True)

    sp = sub.add_parser("config", help="tinyconfig + fragments + olddefconfig, check Missing")
    kernel_arg(sp)
    sp.add_argument("--fragments", default="base", type=_fragments,
                    help="comma-separated fragments of qemu/configs/ (default: base)")
    sp = sub.add_parser("build", help="configure and build a bzImage (ccache, incremental)")
    kernel_arg(sp)
    sp.add_argument("--fragments", default="base", type=_fragments)
    arch_arg(sub.add_parser("initramfs", help="build work/initramfs[-ARCH]/initramfs.cpio"))
    sp = sub.add_parser("run", help="boot an image in QEMU, console teed to --log")
    arch_arg(sp)
    sp.add_argument("--image", type=Path, required=True, help="bzImage (arm64: Image)")
    sp.add_argument("--initrd", type=Path, default=None,
                    help="default: work/initramfs[-ARCH]/initramfs.cpio")
    sp.add_argument("--memory", type=int, default=256, help="MiB (default: 256)")
    sp.add_argument("--append", default="", help="kernel command line additions")
    sp.add_argument("--timeout", type=float, default=120.0)
    sp.add_argument("--smp", type=int, default=1, help="vCPUs (default: 1)")
    sp.add_argument("--accel", default="tcg", choices=["tcg", "kvm"])
    sp.add_argument("--log", type=Path, default=Path("work/boots/run.log"))
    sp = sub.add_parser("parse", help="parse a saved console log, print JSON")
    sp.add_argument("log", type=Path)
    sp.add_argument("--body", action="store_true", help="keep each report's raw lines")
    triage.add_parser(sub)
    inputs.add_triage_kernel(sub.choices["triage"])
    triageeval.add_parser(sub)
    fullcli.add_parser(sub)
    sp = sub.add_parser("fixture", help="save a boot log as a parser test fixture: header "
                        "(TITLE/KIND/ALSO/LOCKS/TASK from the parse, review it!) + raw log")
    sp.add_argument("log", type=Path)
    sp.add_argument("dest", type=Path)
    sp.add_argument("--source", required=True, help="which boot produced the log")
    sp = sub.add_parser("bitcheck", help="build a tinyconfig vmlinux with and without the "
                        "series (DEBUG_MUTEX_NONE) and compare .text; exit 1 if it differs")
    kernel_arg(sp, arch=False)
    kernel_arg(sub.add_parser("selftest-control", help=CONTROL), arch=False)
    sub.add_parser("scenarios", help="list the scenarios")
    for name, hlp in (("boot", "boot one or more scenarios"),
                      ("boot-test", "boot the " + STANDARD + " (or --scenario ...)")):
        sp = sub.add_parser(name, help=hlp)
        kernel_arg(sp)
        sp.add_argument("--scenario", nargs="+", default=None, metavar="NAME")
        sp.add_argument("--set", default=None, metavar="SET",
                        help="boot a named set instead of the standard one: runtime (the "
                        "exercised subsystems, trust and challenge kernels, writes "
                        "reports/linux-<version>/runtime.json)")
        sp.add_argument("--accel", default="tcg", choices=["tcg", "kvm"],
                        help="kvm only after a probe boot proves it works")
        sp.add_argument("--out", type=Path, default=None,
                        help=f"boot logs and records (default: {BOOTS_DIR}[/ARCH])")
        sp.add_argument("--record-selftests", action="store_true",
                        help="write the locking tests' records and logs beside the "
                        "tree's audit (reports/linux-<version>/selftest/ for the trees "
                        "`make setup` unpacks) instead of OUT/selftest")
        sp.add_argument("--record", type=Path, default=None, metavar="RUNTIME_JSON",
                        help="runtime scenarios: where runtime.json and its artifacts "
                        "directory go (default: beside the committed audit of the default "
                        "tree, work/reports/ for another); a trial of a few scenarios "
                        "leaves the committed record alone this way")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="qemu: %(message)s", stream=sys.stderr)
    try:
        inputs.check_command(args)
        return _dispatch(args)
    except USER_ERRORS as err:
        return fail(err, f"{args.cmd}: error: ")
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


def _dispatch(args: argparse.Namespace) -> int:
    if args.cmd == "parse":
        parsed = parse.parse_log(args.log.read_text(errors="replace"))
        if not args.body:
            for r in parsed.reports:
                r.body = []
        sys.stdout.write(dumps(parsed))
        return 0
    if args.cmd == "triage":
        return triage.run(args)
    if args.cmd == "triage-eval":
        return triageeval.run(args)
    if args.cmd == "full-kernel":
        return fullcli.run(args)
    if args.cmd == "fixture":
        raw = args.log.read_text(errors="replace")
        args.dest.write_text(fixture_header(parse.parse_log(raw), args.source) + "\n" + raw)
        print(fixture_header(parse.parse_log(raw), args.source), end="")
        return 0
    if args.cmd == "bitcheck":
        identical, lines = bitcheck.verdict(bitcheck.bitcheck(args.kernel))
        print("\n".join(lines))
        return 0 if identical else 1
    if args.cmd == "selftest-control":
        from qemu.pristine import selftest_control
        ok, lines = selftest_control(args.kernel)
        print("\n".join(lines))
        return 0 if ok else 1
    if args.cmd == "scenarios":
        for name in list_scenarios():
            sc = load_scenario(name)
            print(f"{name:16} {'+'.join(sc.fragments):40} {sc.description}")
        return 0
    if args.cmd == "initramfs":
        res = make_initramfs(request_for(args.arch))
        sys.stdout.write(dumps(res))
        return 0 if res.status is InitramfsStatus.SUCCESS else 1
    if args.cmd == "run":
        initrd = args.initrd or request_for(args.arch).out_dir / "initramfs.cpio"
        res = run_qemu(RunRequest(args.image, initrd, args.log, args.append,
                                  args.timeout, accel=args.accel, smp=args.smp,
                                  memory_mb=args.memory, arch=args.arch))
        for e in res.errors:
            print(e, file=sys.stderr)
        if res.status is RunStatus.TIMEOUT:
            print("\n".join(res.tail), file=sys.stderr)
        print(f"run: {res.status.value} after {res.elapsed:.1f} s, log {args.log}")
        return 0 if res.status is RunStatus.EXITED else 1
    if args.cmd == "config":
        src = prepare_source(args.kernel)
        bdir = build_dir_for(args.fragments, kernel_key(src.kernel), arch=args.arch)
        res = configure(ConfigRequest(src.tree, bdir, args.fragments, arch=args.arch))
        for e in res.errors:
            print(e, file=sys.stderr)
        print(f"config: {res.status.value} in {res.elapsed:.1f} s ({bdir}/.config)")
        return 0 if res.status is ConfigStatus.SUCCESS else 1
    if args.cmd == "build":
        src = prepare_source(args.kernel)
        k = build_kernel(src, args.fragments, args.arch)
        for e in k.problems:
            print(e, file=sys.stderr)
        if k.build is not None:
            print(f"build: {k.build.status.value} in {k.build.elapsed:.1f} s "
                  f"({k.build.image or k.build.log})")
        return 0 if k.ok else 1
    names = args.scenario or (named_set(args.set) if args.set else standard_set())
    if args.set and not names:
        print(f"error: no scenario has set = {args.set!r}", file=sys.stderr)
        return 2
    scenarios = [load_scenario(n) for n in names]
    sets = {sc.set for sc in scenarios}
    out = args.out or (BOOTS_DIR if args.arch == "x86_64" else BOOTS_DIR / args.arch)
    if "runtime" in sets:
        return _runtime_set(args, scenarios, sets, out)
    results = boot_test(scenarios, args.kernel, args.accel, out, arch=args.arch,
                        record=args.record_selftests)
    print(summary(results))
    return 0 if all(r.passed for r in results) else 1


def _runtime_set(args: argparse.Namespace, scenarios: list, sets: set[str], out: Path) -> int:
    """The runtime scenarios: their variants built and booted, runtime.json derived."""
    if args.arch != "x86_64":
        print("error: the runtime set boots x86_64 only", file=sys.stderr)
        return 2
    if sets != {"runtime"}:
        print("error: runtime scenarios boot apart from the others", file=sys.stderr)
        return 2
    from qemu import runtime
    rresults, data = runtime.runtime_test(scenarios, args.kernel, out,
                                          record=args.record and args.record.resolve(),
                                          accel=args.accel)
    print(runtime.summary(rresults, data, {sc.name: list(sc.about) for sc in scenarios}))
    return 0 if all(r.passed for r in rresults) else 1


