"""`python3 -m qemu full-kernel CONFIG` (`make full-kernel CONFIG=...`): the command
line of qemu/fullkernel.py, and the optional boot of its image to our initramfs.

Exit status: 0 when the kernel was configured (BUILD=0) or built (and booted, with
--boot), 1 when a requested option did not survive, the build or the boot failed,
2 for bad arguments.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from classify.inputs import fail
from classify.kbuild import config_values, parse_config_text
from classify.records.selftest import TREE
from qemu import control, parse
from qemu.arch import ARCHES
from qemu.common import DEFAULT_KERNEL, WORK_DIR
from qemu.config import load_fragment, merge_fragments
from qemu.fullkernel import (FRAGMENTS, FullKernelRequest, FullKernelResult, FullStatus,
                             full_kernel)
from qemu.rootfs import InitramfsStatus, make_initramfs, request_for
from qemu.run import RunRequest, RunStatus, base_cmdline, run_qemu
from qemu.selftests import read_selftests
from qemu.userconfig import check_lines, unknown_line, unknown_options

BOOT_SCENARIO = "full-kernel"


def add_parser(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("full-kernel", help="a DEBUG_MUTEX_FULL + lockdep kernel of your "
                        "own .config: series and marking applied, merged, checked, built",
                        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sp.add_argument("config", type=Path, help="your .config (a distro config, a "
                    "defconfig's output); only read")
    sp.add_argument("--kernel", type=Path, default=DEFAULT_KERNEL,
                    help="kernel tree (only read), default %(default)s")
    sp.add_argument("--arch", default="", choices=["", *sorted(ARCHES)],
                    help="default: the one the config was made for (CONFIG_X86_64, "
                    "CONFIG_ARM64)")
    sp.add_argument("--no-build", action="store_true",
                    help="stop after the configuration and its check (BUILD=0)")
    sp.add_argument("--modules", action="store_true", help="build the modules too")
    sp.add_argument("--build-dir", type=Path, default=None,
                    help="O= directory (default: work/build/full-<arch>[-<tree key>])")
    sp.add_argument("--boot", action="store_true", help="then boot the image in QEMU "
                    "(TCG) to the sem2mutex initramfs and read the console")
    sp.add_argument("--timeout", type=float, default=900.0, help="boot timeout, s")
    sp.add_argument("--memory", type=int, default=1024, help="boot memory, MiB")


def run(args: argparse.Namespace) -> int:
    res = full_kernel(FullKernelRequest(args.config, args.kernel, args.arch,
                                        not args.no_build, args.modules, args.build_dir))
    if res.status is FullStatus.REFUSED:
        # the input (CONFIG=, ARCH=): one line, classify.inputs' error path
        return fail("; ".join(res.errors), "full-kernel: error: ")
    for line in result_lines(res):
        print(line)
    if warning := unknown_warning(args.config, res):
        print(f"full-kernel: warning: {warning}", file=sys.stderr)
    if res.status is FullStatus.FAILURE or res.status is FullStatus.DROPPED:
        return 1
    if args.boot and res.image is not None:
        return boot(res, args.timeout, args.memory, args.kernel)
    return 0


def unknown_warning(config: Path, res: FullKernelResult) -> str:
    """The options of the user's config that this tree does not know (olddefconfig
    drops them without a word), in one line; "" when there are none."""
    if res.build_dir is None or not (res.build_dir / ".config").is_file():
        return ""
    options = parse_config_text(config.read_text(errors="replace"))
    requested = merge_fragments([load_fragment(f, arch=res.arch) for f in FRAGMENTS])
    unknown = unknown_options(options, config_values(res.build_dir / ".config"), requested)
    return unknown_line(unknown, options, str(config))


def result_lines(res: FullKernelResult) -> list[str]:
    """What a person needs: the check, where the results are, how to boot them."""
    lines = [f"full-kernel: error: {e}" if i == 0 else f"  {e}"
             for i, e in enumerate(res.errors)]
    if res.check is not None:
        lines += [f"full-kernel: {ln}" for ln in check_lines(res.check)]
    if res.build_dir is not None and res.status not in (FullStatus.FAILURE,
                                                         FullStatus.REFUSED):
        lines.append(f"full-kernel: .config: {res.build_dir / '.config'} ({res.arch})")
    if res.image is not None:
        lines += [f"full-kernel: image: {res.image}"] + boot_hint(res)
    elif res.status is FullStatus.CONFIGURED:
        lines.append("full-kernel: BUILD=0: not built")
    times = ", ".join(f"{k} {v:.1f} s" for k, v in res.seconds.items())
    lines.append(f"full-kernel: {res.status.value}" + (f" ({times})" if times else ""))
    return lines


def boot_hint(res: FullKernelResult) -> list[str]:
    assert res.image is not None and res.build_dir is not None
    initrd = request_for(res.arch).out_dir / "initramfs.cpio"
    return [
        "full-kernel: boot it in QEMU (TCG) with the sem2mutex initramfs:",
        f"  python3 -m qemu initramfs --arch {res.arch}",
        f"  python3 -m qemu run --arch {res.arch} --image {res.image} --initrd {initrd} "
        f"--memory 1024 --timeout 900 --log work/boots/{BOOT_SCENARIO}-{res.arch}.log",
        "  (or `make full-kernel ... BOOT=1`); on your own machine: "
        f"make -C {res.tree} O={res.build_dir} ARCH={res.arch} modules_install install "
        "(MODULES=1 builds the modules)",
        "  then read its log or dmesg: make triage LOG=<file>",
    ]


def boot(res: FullKernelResult, timeout: float, memory: int,
         kernel: Path = DEFAULT_KERNEL) -> int:
    """Boot the image to the initramfs; 0 when /init finished and no report appeared
    that the pristine control boot of the tree's version does not show too."""
    assert res.image is not None
    ramfs = make_initramfs(request_for(res.arch))
    if ramfs.status is not InitramfsStatus.SUCCESS or ramfs.image is None:
        print(f"full-kernel: error: initramfs: {'; '.join(ramfs.errors)}")
        return 1
    log_path = WORK_DIR / "boots" / f"{BOOT_SCENARIO}-{res.arch}.log"
    run = run_qemu(RunRequest(res.image, ramfs.image, log_path,
                              f"s2m.scenario={BOOT_SCENARIO}", timeout, memory_mb=memory,
                              arch=res.arch))
    text = log_path.read_text(errors="replace")
    parsed = parse.parse_log(text)
    done = "s2m-init: done" in text
    print(f"full-kernel: boot: {run.status.value} after {run.elapsed:.1f} s "
          f"({base_cmdline(res.arch)} s2m.scenario={BOOT_SCENARIO}), verdict "
          f"{parsed.verdict}, /init {'finished' if done else 'did not finish'}, "
          f"{len(parsed.reports)} report(s); log {log_path}")
    ours = the_series_reports(text, parsed, kernel)
    if parsed.reports:
        print(f"full-kernel: read them against the audit: make triage LOG={log_path}")
    return 0 if run.status is RunStatus.EXITED and done and not ours else 1


def the_series_reports(text: str, parsed: parse.ParsedLog, kernel: Path) -> list[str]:
    """Print the kernel's own locking tests, if the config enables them, and each
    report with what the pristine control boot of the tree's version (make
    selftest-control) says of it; the reports that are not the tree's."""
    tests = read_selftests(text)
    if tests.locking_api or tests.ww_mutex or tests.torture:
        print(f"full-kernel: the kernel's own locking tests: {control.tests_line(tests)}")
    version = parse.kernel_version(text)
    path = control.control_log(kernel, version, "selftest") if version else None
    attributed = control.attribute(parsed.reports, None if path is None else
                                   parse.parse_log(path.read_text(errors="replace")))
    for rep, att in zip(parsed.reports, attributed):
        print(f"  {rep.kind}: {rep.title} (line {rep.line}): {control.ORIGIN_WORDS[att.origin]}")
    if path is not None and parsed.reports:
        print(f"full-kernel: compared with the pristine control boot of {version}, {path} "
              "(sem2mutex's tinyconfig control kernel, not your configuration)")
    return [a.title for a in attributed if a.origin != TREE]
