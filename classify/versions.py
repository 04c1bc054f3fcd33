"""Which series goes with which tree: kernel-patches/<major.minor>/, one per base
version, picked by the tree's version (what `make kernelversion` prints: VERSION,
PATCHLEVEL and SUBLEVEL of its top-level Makefile; the series is chosen by the
first two).  A tree of a version without a series gets one line naming the
versions there are.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from classify.paths import BUILD_ROOT, DEFAULT_KERNEL, SERIES_ROOT, SETUP_TREES
from classify.tree import TreeError, check_kernel_tree, kernel_version


def base_version(version: str) -> str:
    """"6.12" for "6.12.118" (or "6.12", "6.12.0-rc1")."""
    parts = version.split("-", 1)[0].split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise TreeError(f"{version!r}: not a kernel version (want major.minor[.sublevel])")
    return ".".join(parts[:2])


def build_dir_for(name: str, version: str) -> Path:
    """The persistent O= directory `name` (allmodconfig, allmodconfig-full) for a
    tree of version: work/build/<name> for the default tree's base version,
    work/build/<name>-<major.minor> for another, so that going from TREE=6.12 to
    the default and back does not configure one directory again each time."""
    base = base_version(version)
    default = DEFAULT_KERNEL.name.removeprefix("linux-")
    return BUILD_ROOT / (name if base == default else f"{name}-{base}")


def series_versions(root: Path = SERIES_ROOT) -> list[str]:
    """The base versions with a series (a <version>/series file), in version order."""
    found = [d.name for d in Path(root).iterdir()
             if d.is_dir() and (d / "series").is_file()] if Path(root).is_dir() else []
    return sorted(found, key=lambda v: tuple(int(x) if x.isdigit() else 0
                                             for x in v.split(".")))


def series_dir_for_version(version: str, root: Path = SERIES_ROOT) -> Path:
    """kernel-patches/<major.minor>/ of version, or a one-line TreeError."""
    base = base_version(version)
    if base not in series_versions(root):
        have = ", ".join(series_versions(root)) or "none"
        raise TreeError(f"Linux {version}: kernel-patches/ has no series for {base} "
                        f"(series there: {have})")
    return Path(root) / base


def series_dir(kernel: Path, root: Path = SERIES_ROOT) -> Path:
    """The series directory of a kernel tree, by its version."""
    return series_dir_for_version(kernel_version(Path(kernel)), root)


def series_file(kernel: Path, root: Path = SERIES_ROOT) -> Path:
    return series_dir(kernel, root) / "series"


def tree_for(name: str) -> Path:
    """TREE=6.12: the tree `make setup` unpacks for that base version."""
    if name not in SETUP_TREES:
        raise TreeError(f"TREE={name}: make setup unpacks no such tree "
                        f"(trees: {', '.join(SETUP_TREES)})")
    return SETUP_TREES[name]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m classify.versions",
        description="Name the series (kernel-patches/<major.minor>/) of a kernel tree, "
                    "or the tree make setup unpacks for a base version (TREE=).")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("series", help="print the series directory of a tree")
    sp.add_argument("kernel", type=Path)
    tp = sub.add_parser("tree", help="print the tree make setup unpacks for a version")
    tp.add_argument("version")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "series":
            print(series_dir(check_kernel_tree(args.kernel).path))
        else:
            print(tree_for(args.version))
    except TreeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
