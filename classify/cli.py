"""python3 -m classify {audit,census,patches,marking} --kernel PATH ...

Each stage is also a subcommand of its own: ``census`` prints the census as JSON.
The conversion commands (``patches``, ``marking``) live in classify.convert and are
imported only when asked for.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from pathlib import Path

from classify.paths import DEFAULT_CACHE, DEFAULT_KERNEL, PATCHES_DIR, default_out
from classify.convert.select import PatchError
from classify.inputs import USER_ERRORS, OneLineParser, fail, refuse_committed
from classify.tree import TreeError, check_kernel_tree, missing_dirs

log = logging.getLogger("sem2mutex.audit")


def _target(kernel: Path) -> tuple[Path, str]:
    """(path, version) of a kernel tree, or of a single C file."""
    if kernel.is_file():
        if kernel.suffix not in (".c", ".h"):
            raise TreeError(f"{kernel}: not a C source file or a kernel tree")
        return kernel.resolve(), "file-" + kernel.stem
    tree = check_kernel_tree(kernel)
    return tree.path, tree.version


def cmd_audit(args: argparse.Namespace) -> int:
    from classify.audit import run_audit
    from classify.report import load_patches, load_runtime, write_all
    path, version = _target(args.kernel)
    # reports/ holds the audits of the trees `make setup` unpacks, and only those
    out = refuse_committed(args.out or default_out(path, version), "--out",
                           allowed=default_out(path, version))
    refuse_committed(args.cache, "--cache")
    _warn_partial(path)
    audit = run_audit(path, args.cache, fresh=args.fresh, jobs=args.jobs,
                      timeout=args.timeout, nice=args.nice, version=version)
    # the patch status `make patches` recorded next to the report, if any
    # and the runtime records `make boot-test SCENARIOS=runtime` left there
    written = write_all(audit, Path(out), load_patches(Path(out) / "patches.json"),
                        load_runtime(Path(out) / "runtime.json"))
    counts = {}
    for r in audit.results:
        counts[r.verdict.cls] = counts.get(r.verdict.cls, 0) + 1
    if not audit.results:
        print(f"audit: no struct semaphore found in {path}")
    else:
        print("audit: %d semaphores: %s; %d file(s) not analysed" % (
            len(audit.results), ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
            len(audit.failures)))
    for fam in audit.allocated:
        print(f"audit: allocated at run time: {fam.id}: {fam.cls}")
    for p in written:
        print(f"audit: wrote {p}")
    print("audit: %(total_seconds).1f s (census %(census_seconds).1f s, spatch "
          "%(facts_seconds).1f s, call graph %(callgraph_seconds).1f s, cache %(cache_hits)d hits / %(cache_misses)d misses)"
          % dataclasses.asdict(audit.stats))
    return 0


def _warn_partial(path: Path) -> None:
    """One warning line for a tree that holds only a part of the kernel: its audit is
    of the files there are."""
    if path.is_file():
        return
    missing = missing_dirs(path)
    if missing:
        log.warning("warning: %s is a partial tree: %d top-level director%s its Kbuild "
                    "builds %s missing (%s): the audit covers only the files present",
                    path, len(missing), "y" if len(missing) == 1 else "ies",
                    "is" if len(missing) == 1 else "are",
                    ", ".join(d + "/" for d in missing))


def cmd_census(args: argparse.Namespace) -> int:
    from classify.census import candidate_files, take_census
    from classify.facts import Cache
    path, _ = _target(args.kernel)
    refuse_committed(args.cache, "--cache")
    cache = Cache(args.cache)
    if path.is_file():
        c = take_census(path.parent, [path.name], cache=cache)
    else:
        c = take_census(path, candidate_files(path, cache), cache=cache)
    json.dump({"files": len(c.files),
               "semaphores": [d.__dict__ for _, d in sorted(c.sems.items())],
               "pointers": [d.__dict__ for _, d in sorted(c.pointers.items())],
               "ops": [o.__dict__ for o in c.ops]}, sys.stdout, indent=1, sort_keys=True,
              default=list)
    print()
    return 0


def cmd_patches(args: argparse.Namespace) -> int:
    from classify.convert.cli import run_patches
    # work/: `make reports` copies the status into reports/ (--record)
    refuse_committed(args.out, "--out")
    if args.build_dir:
        refuse_committed(args.build_dir, "--build-dir")
    return run_patches(args)


def cmd_marking(args: argparse.Namespace) -> int:
    from classify.convert.marking import MARKING_NAME, run_marking
    from classify.inputs import load_audit
    from classify.versions import series_dir
    tree = check_kernel_tree(args.kernel)
    # the marking's job: the 0004 patch of the tree's own series, no other file there
    if args.out and not args.check_only:
        refuse_committed(args.out, "--out", allowed=series_dir(tree.path) / MARKING_NAME)
    if args.build_dir:
        refuse_committed(args.build_dir, "--build-dir")
    if args.audit and not args.check_only:
        load_audit(args.audit, "--audit")
    return run_marking(args)




def _common() -> argparse.ArgumentParser:
    common = OneLineParser(add_help=False)
    common.add_argument("--kernel", type=Path, default=DEFAULT_KERNEL,
                        help="kernel tree (or one .c/.h file) to audit "
                             f"(default: {DEFAULT_KERNEL})")
    common.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help=f"per-file cache of census scans and spatch facts "
                             f"(default: {DEFAULT_CACHE})")
    return common


def _add_audit(sub, common: argparse.ArgumentParser) -> None:
    audit = sub.add_parser("audit", parents=[common],
                           help="census -> facts -> classes -> audit.json/.md/.html")
    audit.add_argument("--fresh", action="store_true",
                       help="ignore the cache (and refill it)")
    audit.add_argument("--out", type=Path,
                       help="output directory (default: reports/linux-<version> for the "
                            "default tree, work/reports/<dir>-<version> for another)")
    audit.add_argument("--jobs", "-j", type=int, default=None,
                       help="parallel spatch processes (default: one per CPU)")
    audit.add_argument("--timeout", type=float, default=120.0,
                       help="seconds one file may take in spatch (default: 120)")
    audit.add_argument("--nice", type=int, default=10,
                       help="niceness of the spatch processes (default: 10, 0: none)")
    audit.set_defaults(func=cmd_audit)
    census = sub.add_parser("census", parents=[common],
                            help="print the census (declarations, calls) as JSON")
    census.set_defaults(func=cmd_census)


def _add_patches(sub, common: argparse.ArgumentParser) -> None:
    patches = sub.add_parser(
        "patches", parents=[common],
        help="conversion patches (one per mutex/completion semaphore, a series per "
             "MAINTAINERS entry) in work/patches/, then verify each one",
        description="Exit status: 0 when at least one patch was generated (or, with "
                    "--verify-only, verified), whatever was skipped or refused on the "
                    "way; 1 when nothing could be done (no audit, unknown ids only, no "
                    "convertible semaphore, every conversion refused); 2 for bad "
                    "arguments.")
    patches.add_argument("--subsys", metavar="PREFIX",
                         help="only the semaphores declared under this path prefix "
                              "(e.g. drivers/net/ethernet/huawei)")
    patches.add_argument("--id", action="append", default=[], metavar="ID",
                         help="only this semaphore (audit id); may be repeated")
    patches.add_argument("--audit", type=Path,
                         help="audit.json to read (default: the one `make audit` wrote "
                              "for KERNEL)")
    patches.add_argument("--out", type=Path, default=PATCHES_DIR,
                         help="where the series go, one directory per subsystem "
                              "(default: work/patches)")
    patches.add_argument("--build-dir", type=Path,
                         help="persistent O= directory of the x86_64 allmodconfig "
                              "builds (default: work/build/allmodconfig, "
                              "allmodconfig-<major.minor> for a tree of another "
                              "version than the default one)")
    patches.add_argument("--no-verify", action="store_true",
                         help="generate only: no git am / build / sparse / checkpatch")
    patches.add_argument("--verify-only", action="store_true",
                         help="verify the series already in --out, generate nothing")
    patches.add_argument("--no-signoff", action="store_true",
                         help="no Signed-off-by (without it, the patches are signed off "
                              "by git config user.name/user.email, or GIT_AUTHOR_NAME/"
                              "GIT_AUTHOR_EMAIL, and a placeholder identity is an error)")
    patches.add_argument("--record", action="store_true",
                         help="generate nothing: copy the status --out/patches.json holds "
                              "beside the audit (reports/ for the default tree) and "
                              "re-render the audit report (`make reports`)")
    patches.add_argument("--no-report", action="store_true",
                         help="with --record: do not re-render the audit report")
    patches.set_defaults(func=cmd_patches)


def _add_marking(sub, common: argparse.ArgumentParser) -> None:
    marking = sub.add_parser(
        "marking", parents=[common],
        help="the series' arch_semaphore marking of the counting pool, generated "
             "from the audit (kernel-patches/<major.minor>/0004-…)",
        description="Marks every semaphore the audit classes counting as struct "
                    "arch_semaphore (cocci/sem_to_arch.cocci) on top of the series "
                    "patches before the marking, and writes the result as that series "
                    "patch.  Exit status: 0 when written (and, with --check, every "
                    "file builds); 1 when nothing could be marked, or a file does not "
                    "build with DEBUG_MUTEX_FULL; 2 for bad arguments.")
    marking.add_argument("--audit", type=Path,
                         help="audit.json to read (default: reports/linux-<version>/)")
    marking.add_argument("--exclude", action="append", default=[], metavar="ID",
                         help="leave this counting semaphore unmarked (a challenge "
                              "boot); may be repeated")
    marking.add_argument("--out", type=Path,
                         help="the patch file (default: the own 0004-… of the "
                              "series of the tree's version, kernel-patches/<major.minor>/)")
    marking.add_argument("--check", action="store_true",
                         help="then compile the files it is about on allmodconfig + "
                              "DEBUG_MUTEX_FULL (x86_64, or the architecture that "
                              "builds them), without and with it")
    marking.add_argument("--check-only", action="store_true",
                         help="no new marking: check the patch and the files of the "
                              "last run (work/marking.json)")
    marking.add_argument("--build-dir", type=Path,
                         help="persistent O= directory of the check (default: "
                              "work/build/allmodconfig-full, allmodconfig-full-"
                              "<major.minor> for a tree of another version than the "
                              "default one)")
    marking.set_defaults(func=cmd_marking)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(
        prog="python3 -m classify",
        description="Sort every struct semaphore of a kernel tree into the mutex, "
                    "completion, counting or unknown pool.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="cmd", required=True)
    common = _common()
    _add_audit(sub, common)
    _add_patches(sub, common)
    _add_marking(sub, common)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(name)s: %(message)s")
    try:
        return args.func(args)
    except (*USER_ERRORS, PatchError) as err:
        # a user's input or a missing prerequisite: one line, exit 2
        return fail(err)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130

