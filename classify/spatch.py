"""spatch, run once for every stage that needs it: the facts of the audit, the
conversion patches and the marking.

One process per call, in its own session, so that a timeout kills spatch and its
workers; the environment variables the project's scripts read are set only when
asked for, never inherited from the caller.

Every run gets the macro hints of cocci/macros.h (kernel macros that define
functions or declare variables) after Coccinelle's own standard.h, as one builtin
macro file (--macro-file-builtins, written once under work/): with --macro-file
alone, spatch takes `static CLOSURE_CALLBACK(fn) {` for a declaration macro before
it tries the definition, and loses the function.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from classify.paths import COCCI_DIR, WORK_DIR

MACRO_FILE = COCCI_DIR / "macros.h"
# where Debian's coccinelle keeps its standard.h (COCCINELLE_HOME overrides)
COCCINELLE_HOME = Path(os.environ.get("COCCINELLE_HOME", "/usr/lib/coccinelle"))

# The variables our semantic patches read (the semaphore a script is about, the
# census' semaphore names): a caller's own values must not leak into a run.
SCRIPT_ENV = ("SEM2MUTEX_SEM", "SEM2MUTEX_NAMES")


@dataclass
class SpatchRun:
    status: str                # ok | error | timeout
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    error: str = ""            # for error and timeout: one line saying why


def script_path(name: str) -> Path:
    """cocci/<name>.cocci."""
    return COCCI_DIR / f"{name}.cocci"


def macro_text(macro_file: Path | None = None) -> str:
    """Coccinelle's standard.h followed by our hints: the builtin macro file."""
    try:
        standard = (COCCINELLE_HOME / "standard.h").read_text(errors="replace")
    except OSError:
        standard = ""
    return standard + "\n" + Path(macro_file or MACRO_FILE).read_text()


def macro_args(dest_dir: Path = WORK_DIR / "spatch") -> list[str]:
    """["--macro-file-builtins", <standard.h + cocci/macros.h>], the file written
    once per content under dest_dir."""
    text = macro_text()
    path = Path(dest_dir) / f"macros-{hashlib.sha256(text.encode()).hexdigest()[:16]}.h"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return ["--macro-file-builtins", str(path)]


def run(args: list[str], cwd: Path, timeout: float, nice: int = 0,
        env: dict[str, str] | None = None) -> SpatchRun:
    """spatch ARGS in cwd (with the macro hints), killed after timeout seconds."""
    cmd = ["spatch", *macro_args(), *args]
    if nice:
        cmd = ["nice", "-n", str(nice), *cmd]
    environ = {k: v for k, v in os.environ.items() if k not in SCRIPT_ENV}
    environ.update(env or {})
    started = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, errors="replace", start_new_session=True,
                                env=environ)
    except OSError as err:
        return SpatchRun("error", -1, "", "", 0.0, f"cannot run spatch: {err}")
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return SpatchRun("timeout", -9, out, err, time.monotonic() - started,
                         f"spatch timed out after {timeout:.0f} s")
    elapsed = time.monotonic() - started
    if proc.returncode != 0:
        tail = [ln for ln in err.strip().splitlines() if ln.strip()][-1:] or \
            [f"exit status {proc.returncode}"]
        return SpatchRun("error", proc.returncode, out, err, elapsed,
                         f"spatch failed: {tail[0][:300]}")
    return SpatchRun("ok", 0, out, err, elapsed)


def version() -> str:
    """spatch's first --version line (part of the facts cache key)."""
    try:
        out = subprocess.run(["spatch", "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "spatch-missing"
    return out.splitlines()[0] if out else "spatch-unknown"
