"""spatch's results kept for the next test run: a small file analysed
by the same script, with the same arguments, environment and spatch, gives the
same output, so a test run reads it from work/test-cache/spatch/ instead of
starting spatch again (about 2 s of CPU each for a dozen-line file).

The key is everything spatch's output can depend on: the spatch binary and its
version, the arguments as given (paths too, since spatch prints them back), the
content of every file an argument names (the semantic patch, the macro hints, a
--file-groups list and the files it names), the content of every file of the
tree spatch runs in (its headers, for --all-includes), and the variables our
scripts read.  What a run writes (--in-place in the tree, -o FILE) is kept with
its output and written again on a hit.  Only runs that ended (ok or error) are
kept, never a timeout, and a kept run is used only when it finished within the
caller's timeout: a test that asks for a timeout still gets it.  A tree of more
than MAX_TREE_FILES files (a kernel tree: the slow tests) is never cached.

SEM2MUTEX_TEST_SPATCH_CACHE=0 turns the cache off (every run is spatch's own).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE_DIR = REPO / "work" / "test-cache" / "spatch"
MAX_TREE_FILES = 2000
# the options whose value is a file spatch reads but never names in its output
READ_ONLY_FILE_OPTIONS = ("--sp-file", "--macro-file-builtins", "--macro-file")
SCRIPT_ENV = ("SEM2MUTEX_SEM", "SEM2MUTEX_NAMES")
# the options that make spatch read files it is not given (headers of the tree)
INCLUDE_OPTIONS = ("--all-includes", "--local-includes", "--recursive-includes",
                   "-I", "--include", "--include-headers-for-types")


def enabled() -> bool:
    return os.environ.get("SEM2MUTEX_TEST_SPATCH_CACHE", "1") != "0"


@lru_cache(maxsize=None)
def _spatch_identity() -> str:
    exe = shutil.which("spatch") or "spatch-missing"
    try:
        st = os.stat(os.path.realpath(exe))
        stamp = f"{os.path.realpath(exe)}:{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        stamp = exe
    try:
        version = subprocess.run(["spatch", "--version"], capture_output=True, text=True,
                                 timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        version = ""
    return stamp + "\n" + version


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tree_files(cwd: Path) -> dict[str, str] | None:
    """{relative path: content digest} of the tree, .git left out; None if it has
    more than MAX_TREE_FILES files."""
    out: dict[str, str] = {}
    for root, dirs, files in os.walk(cwd):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in files:
            path = Path(root) / name
            if not path.is_file():
                continue
            out[os.path.relpath(path, cwd)] = _digest(path)
            if len(out) > MAX_TREE_FILES:
                return None
    return out


def _file_of(arg: str, cwd: Path) -> Path | None:
    if not arg or arg.startswith("-"):
        return None
    path = Path(arg) if os.path.isabs(arg) else cwd / arg
    return path if path.is_file() else None


def key_of(args: list[str], cwd: Path, env: dict[str, str],
           tree: dict[str, str]) -> tuple[str, str | None]:
    """The key of a run, and the -o file it writes (None if none)."""
    # with --no-includes spatch reads only the files it is given: the rest of the
    # tree is no part of the key (a new fixture beside them keeps theirs)
    reads_tree = "--no-includes" not in args or any(a in INCLUDE_OPTIONS for a in args)
    parts: list[object] = [_spatch_identity(), sorted(tree.items()) if reads_tree else None,
                           sorted((k, v) for k, v in env.items() if k in SCRIPT_ENV)]
    out_file = None
    i = 0
    while i < len(args):
        arg = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else ""
        if arg in READ_ONLY_FILE_OPTIONS and _file_of(nxt, cwd):
            parts.append([arg, _digest(_file_of(nxt, cwd))])
            i += 2
            continue
        if arg == "--file-groups" and _file_of(nxt, cwd):
            listed = _file_of(nxt, cwd).read_text()
            parts.append([arg, listed, [_digest(f) if f else None for f in
                                        (_file_of(ln.strip(), cwd)
                                         for ln in listed.splitlines())]])
            i += 2
            continue
        if arg == "-o" and nxt:
            out_file = nxt
            parts.append([arg, "<output>"])
            i += 2
            continue
        f = _file_of(arg, cwd)
        parts.append([arg, _digest(f) if f else None])
        i += 1
    blob = json.dumps(parts, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest(), out_file


def _read_only_files(args: list[str], cwd: Path) -> list[str | None]:
    """The digests of the scripts and macro files a run reads (None: missing)."""
    out: list[str | None] = []
    for opt, val in zip(args, args[1:]):
        if opt in READ_ONLY_FILE_OPTIONS:
            f = _file_of(val, cwd)
            out.append(_digest(f) if f else None)
    return out


def _load(key: str) -> dict | None:
    try:
        return json.loads((CACHE_DIR / key[:2] / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None


def _store(key: str, value: dict) -> None:
    path = CACHE_DIR / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w") as fh:
        json.dump(value, fh)
    os.replace(tmp, path)


def cached(args: list[str], cwd: Path, timeout: float, env: dict[str, str], run):
    """run() -> {"status", "returncode", "seconds", ...} for spatch ARGS in cwd, or
    the kept result of the same run.  Returns (result, hit)."""
    cwd = Path(cwd)
    tree = _tree_files(cwd) if enabled() else None
    if tree is None:
        return run(), False
    key, out_file = key_of(args, cwd, env, tree)
    kept = _load(key)
    if kept is not None and kept["seconds"] <= timeout:
        for rel, text in kept["written"].items():
            (cwd / rel).write_text(text, errors="surrogateescape")
        if out_file is not None and kept["out"] is not None:
            out = Path(out_file) if os.path.isabs(out_file) else cwd / out_file
            out.write_text(kept["out"], errors="surrogateescape")
        return kept["result"], True
    read_only = _read_only_files(args, cwd)
    result = run()
    seconds = result["seconds"]
    if result["status"] in ("ok", "error") and result["returncode"] >= 0:
        # a run that failed to start (returncode -1) or was killed is not kept
        after = _tree_files(cwd) or {}
        written = {rel: (cwd / rel).read_text(errors="surrogateescape")
                   for rel, digest in after.items() if tree.get(rel) != digest}
        out = None
        if out_file is not None:
            path = Path(out_file) if os.path.isabs(out_file) else cwd / out_file
            out = path.read_text(errors="surrogateescape") if path.is_file() else None
        # kept only if nothing was deleted, and the scripts it read are still there as
        # they were (another process may remove a directory under a run)
        if not [rel for rel in tree if rel not in after] and \
                _read_only_files(args, cwd) == read_only:
            _store(key, {"result": result, "written": written, "out": out,
                         "seconds": seconds})
    return result, False
