"""python3 -m qemu.bench: the seed's figures measured again, and the toolkit's cost.

Nothing imports the benchmark: it is a leaf that uses the analysis and the boot
harness, and writes reports/bench.{json,md,svg} (the Makefile's `make bench`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from classify.paths import DEFAULT_CACHE, DEFAULT_KERNEL, PATCHES_DIR
from classify.tree import TreeError, check_kernel_tree
from qemu.bench.figures import PARTS, BenchError
from qemu.bench.parts import main as bench_main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
                           prog="python3 -m qemu.bench",
                           description="Parts: boots (sem_bench in QEMU: struct sizes, "
                                       "contention), audit (make audit cold and warm), "
                                       "spatch (one whole-tree spatch run), kernel (the "
                                       "boot-test kernel's configure/build/boot, cold and "
                                       "warm), text (the .text* of every object the "
                                       "conversion patches of work/patches touch, before "
                                       "and after each patch, x86_64 allmodconfig without "
                                       "sanitizers, coverage or lock debugging; needs "
                                       "`make patches` first), boottest (make "
                                       "boot-test warm: the standard set, wall time), "
                                       "verify (the verification of those patches "
                                       "with an empty ccache, here and through a "
                                       "distccd started on 127.0.0.1: its overhead, "
                                       "not a speed-up), triage (make triage on a "
                                       "200 MiB log: wall time, peak memory; "
                                       "/dev/zero and /dev/urandom refused).")
    parser.add_argument("--runs", type=int, default=5,
                       help="runs of each measurement (default: 5)")
    parser.add_argument("--parts", default=",".join(PARTS),
                       help="comma-separated parts (default: %(default)s)")
    parser.add_argument("--patches", type=Path, default=PATCHES_DIR,
                       help="the conversion series the text part measures "
                            "(default: work/patches, written by `make patches`)")
    parser.add_argument("--ms", type=int, default=1000,
                       help="milliseconds per sem_bench measurement (default: 1000)")
    parser.add_argument("--kernel-runs", type=int, default=None,
                       help="cold and warm kernel configure/build/boot runs "
                            "(default: --runs)")
    parser.add_argument("--spatch-runs", type=int, default=1,
                       help="whole-tree spatch runs (default: 1, it takes minutes)")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--svg", type=Path, help="the throughput plot (SVG)")
    parser.add_argument("--md", type=Path, help="the README table (Markdown)")
    parser.add_argument("--note", default="",
                       help="a remark stored with the figures (e.g. a loaded machine)")
    parser.add_argument("--kernel", type=Path, default=DEFAULT_KERNEL,
                        help=f"kernel tree (default: {DEFAULT_KERNEL})")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help=f"the audit's per-file cache (default: {DEFAULT_CACHE})")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    try:
        tree = check_kernel_tree(args.kernel)
        return bench_main(tree.path, args.cache, args.runs, args.out,
                          tuple(p for p in args.parts.split(",") if p), args.ms,
                          args.kernel_runs, args.spatch_runs, args.svg, args.md, args.note,
                          args.patches)
    except (TreeError, BenchError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
