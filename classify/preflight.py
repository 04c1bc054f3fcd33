"""Preflight checks run before every make target: is the tree there, is it a kernel
tree, are the tools installed, is there room on the disk.

Each failure is one line saying what is missing and how to get it, and exit status
2, so that no stage starts on something it cannot finish.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from classify.arches import ARCHES
from classify.inputs import OneLineParser, fail
from classify.tree import KernelTree, TreeError, check_kernel_tree, require_free_space

# The command each stage runs, and the Debian package that provides it.
TOOL_PACKAGES = {
    "spatch": "coccinelle",
    "sparse": "sparse",
    "qemu-system-x86_64": "qemu-system-x86",
    "busybox": "busybox-static",
    "ccache": "ccache",
    "gcc": "gcc",
    "make": "make",
    "flex": "flex",
    "bison": "bison",
    "bc": "bc",
    "cpio": "cpio",
    "git": "git",
    "perl": "perl",
    "size": "binutils",
    "qemu-system-aarch64": "qemu-system-arm",
    # the cross compilers, as classify/arches.py names them (aarch64-linux-gnu-gcc, ...)
    **{a.gcc: a.package for a in ARCHES.values() if a.cross},
}


def require_tools(tools: list[str], search_path: str | None = None) -> None:
    for tool in tools:
        if tool not in TOOL_PACKAGES:
            raise TreeError(f"{tool}: preflight does not know this tool (add it to "
                            "TOOL_PACKAGES in classify/preflight.py)")
        if shutil.which(tool, path=search_path) is None:
            raise TreeError(f"{tool}: not found: run `make setup` "
                            f"(Debian package {TOOL_PACKAGES[tool]})")


def preflight(kernel: Path, tools: list[str], free_bytes: int = 0) -> KernelTree:
    require_tools(tools)
    tree = check_kernel_tree(kernel)
    if free_bytes:
        require_free_space(Path.cwd(), free_bytes)
    return tree


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(
        prog="python3 -m classify.preflight",
        description="Check that a make target has its kernel tree, tools and disk.")
    parser.add_argument("--kernel", type=Path, required=True,
                        help="the kernel tree the target works on (make's KERNEL=)")
    parser.add_argument("--target", default="sem2mutex", help="name used in messages")
    parser.add_argument("--free-gib", type=int, default=0,
                        help="free space the target needs in the work area")
    parser.add_argument("tools", nargs="*", help="commands the target runs")
    args = parser.parse_args(argv)
    try:
        tree = preflight(args.kernel, args.tools, args.free_gib << 30)
    except TreeError as err:
        return fail(err, f"make {args.target}: error: ")
    print(f"make {args.target}: KERNEL={tree.path} (Linux {tree.version})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
