"""Each semantic patch of cocci/ against its test pair NAME.c / NAME.res.

NAME.res is the expected output of `spatch -D report` on NAME.c (sorted lines):
every script has at least one case it must report and one it must not.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from classify.tree import make_worktree

REPO = Path(__file__).resolve().parents[2]
COCCI = REPO / "cocci"
HERE = Path(__file__).resolve().parent
SCRIPTS = sorted(p.stem for p in COCCI.glob("*.cocci"))

pytestmark = pytest.mark.skipif(shutil.which("spatch") is None, reason="spatch missing")


def spatch(script: str, mode: str, target: str, cwd: Path = HERE) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SEM2MUTEX_NAMES"}
    return subprocess.run(["spatch", "--very-quiet", "--no-includes", "--include-headers",
                           "-D", mode, "--sp-file", str(COCCI / f"{script}.cocci"), target],
                          cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def test_every_script_has_a_pair():
    assert SCRIPTS
    for name in SCRIPTS:
        assert (HERE / f"{name}.c").exists() and (HERE / f"{name}.res").exists(), name


@pytest.mark.parametrize("name", SCRIPTS)
def test_report_matches_res(name):
    res = spatch(name, "report", f"{name}.c")
    assert res.returncode == 0, res.stderr
    got = sorted(line for line in res.stdout.splitlines() if line.strip())
    want = sorted(line for line in (HERE / f"{name}.res").read_text().splitlines() if line.strip())
    assert got == want
    assert want, "a pair must have a case the script reports"


@pytest.mark.parametrize("name", SCRIPTS)
def test_other_modes_run(name):
    for mode in ("context", "org", "facts"):
        res = spatch(name, mode, f"{name}.c")
        assert res.returncode == 0, (mode, res.stderr)
        assert "Traceback" not in res.stderr and "error" not in res.stderr.lower(), res.stderr


@pytest.mark.parametrize("name", SCRIPTS)
def test_kernel_style_header(name):
    text = (COCCI / f"{name}.cocci").read_text()
    lines = text.splitlines()
    assert lines[0].startswith("// SPDX-License-Identifier:")
    assert lines[1].startswith("///")
    for field in ("// Confidence:", "// Copyright:", "// Options:", "// Keywords:"):
        assert field in text, field
    for mode in ("report", "org", "context"):
        assert f"virtual {mode}" in text
    assert "@script:python depends on report@" in text
    assert "coccilib.report.print_report" in text
    assert re.search(r"^// Options: .*--no-includes", text, re.M)


@pytest.mark.slow
def test_make_coccicheck_runs_in_a_worktree():
    """The tree's own `make coccicheck` runs each script (on a worktree, never on
    the pristine tree)."""
    pristine = REPO / "work" / "linux-6.1"
    if not (pristine / ".git").exists():
        pytest.skip("no 6.1 tree: run `make setup`")
    tree = REPO / "work" / "trees" / "cocci"
    make_worktree(pristine, tree)
    for name in SCRIPTS:
        res = subprocess.run(["make", "-s", "coccicheck", "MODE=report",
                              f"COCCI={COCCI / (name + '.cocci')}", "M=drivers/usb/misc/"],
                             cwd=tree, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, (name, res.stderr[-2000:])
        if name in ("sem_ops", "sem_balance"):
            assert "drivers/usb/misc/" in res.stdout, name
