"""Nothing a user types breaks it, and nothing fails silently (issue 31).

Every target is driven through `make` with the inputs a careless or hostile user
gives: each must stop with exit status 2 and one line naming the input and what is
wrong with it, print no traceback, and leave the checkout as it was (`git status`,
and every file under reports/ and kernel-patches/ untouched).  A value with shell or
make syntax in it reaches the command as one argument, never as a command.

Add a case here whenever a user finds a new one.  Each case is quick: tiny trees under
tmp_path, VERIFY=0, BUILD=0, and inputs refused before any stage starts (a target
whose refusal is make's own is run with -n, so that a regression prints the command
instead of running it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from test_tree import fake_kernel

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "classify"))
from smalltree import git_tree as committed_tree  # noqa: E402
LOG = REPO / "tests" / "qemu" / "logs" / "runtime-xfs-challenge-ic-sema.log"   # 6.1.192
AUDIT = REPO / "reports" / "linux-6.1.192" / "audit.json"
AUDIT_612 = REPO / "reports" / "linux-6.12.118" / "audit.json"
RUNTIME = REPO / "reports" / "linux-6.1.192" / "runtime.json"
TREE_612 = REPO / "work" / "linux-6.12"
DEFAULT_TREE = REPO / "work" / "linux-6.1"
COMMITTED = ("reports", "kernel-patches")

needs_default_tree = pytest.mark.skipif(not (DEFAULT_TREE / "Makefile").is_file(),
                                        reason="make setup has not unpacked work/linux-6.1")


def checkout_state() -> tuple[str, dict[str, tuple[int, int]]]:
    """git status, and the size and mtime of every file under the committed folders
    (a file already modified stays " M" in git status when it is written again)."""
    status = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain",
                             "--untracked-files=all"], capture_output=True, text=True,
                            check=True).stdout
    files = {str(p.relative_to(REPO)): (p.stat().st_size, p.stat().st_mtime_ns)
             for d in COMMITTED for p in (REPO / d).rglob("*") if p.is_file()}
    return status, files


def make(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", "-C", str(REPO), *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd)


def error_lines(res: subprocess.CompletedProcess) -> list[str]:
    """The lines of stderr that are the command's: not make's own "*** [...] Error 2"
    after a failed recipe, not the progress log (sem2mutex.x: ...)."""
    return [ln for ln in res.stderr.splitlines()
            if ln.strip() and not ln.startswith(("make: *** [", "make[1]: *** [",
                                                 "sem2mutex.", "qemu: "))]


def refused(res: subprocess.CompletedProcess, *naming: str) -> str:
    """The one error line of a run refused as a user error (exit 2)."""
    out = res.stdout + res.stderr
    assert "Traceback" not in out, out
    assert res.returncode == 2, out
    lines = error_lines(res)
    assert len(lines) == 1, lines
    for word in naming:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.fixture
def unchanged():
    """Fails the test when the checkout changed while it ran."""
    before = checkout_state()
    yield
    assert checkout_state() == before


@pytest.fixture
def garbage(tmp_path) -> dict[str, Path]:
    """Files that are not what they are given as."""
    files = {"empty": "{}\n", "list": "[]\n", "shape": '{"kernel_version": "6.1.192", '
             '"semaphores": 3}\n', "notjson": "not json\n",
             "sems": '{"kernel_version": "6.1.192", "semaphores": [{"id": 1}]}\n',
             "text": "hello world\nthis is not a kernel log\n"}
    out = {}
    for name, text in files.items():
        out[name] = tmp_path / f"{name}.json"
        out[name].write_text(text)
    out["dir"] = tmp_path / "adir"
    out["dir"].mkdir()
    out["missing"] = tmp_path / "missing.json"
    return out


# ------------------------------------------------------------------ make's own checks

@pytest.mark.parametrize("args,naming", [
    (["audit", "KERNEL="], "KERNEL= is empty"),
    (["audit", "TREE="], "TREE= is empty"),
    (["patches", "ID=", "VERIFY=0"], "ID= is empty"),
    (["audit", "TREE=5.4"], "TREE=5.4: make setup unpacks no such tree"),
    (["audit", "TREE=6.1 6.12"], "TREE=6.1 6.12: make setup unpacks no such tree"),
    (["audit", "TREE=6.12", "KERNEL=/tmp"], "give one of them"),
    (["audit", "OUT=reports/linux-6.1.192/audit.json"], "make audit does not use OUT="),
    (["patches", "OUT=kernel-patches/x", "VERIFY=0"], "make patches does not use OUT="),
    (["evaluate", "AUDIT=x.json"], "make evaluate does not use AUDIT="),
    (["setup", "KERNEL=/tmp"], "make setup does not use KERNEL="),
    (["clean", "TREE=6.12"], "make clean does not use TREE="),
    (["distclean", "KERNEL=/tmp"], "make distclean does not use KERNEL="),
    (["patches", "VERIFY=O"], "VERIFY=O: give VERIFY=1"),
    (["patches", "SIGNOFF=nope", "VERIFY=0"], "SIGNOFF=nope"),
    (["audit", "FRESH=maybe"], "FRESH=maybe"),
    (["marking", "CHECK=2"], "CHECK=2: give one of"),
    (["boot-test", "ARCH=sparc"], "ARCH=sparc: give one of x86_64 arm64"),
    (["full-kernel", "CONFIG=x", "ARCH=riscv"], "ARCH=riscv"),
    (["full-kernel", "CONFIG=x", "BUILD=zero"], "BUILD=zero"),
    (["triage", "LOG=x", "JSON=please"], "JSON=please"),
    (["bench", "RUNS=many"], "RUNS=many: give a positive whole number"),
    (["audit", "JOBS=0"], "JOBS=0: give a positive whole number"),
    (["audit", "TREE=$(shell touch /tmp/s2m-pwned-tree)"], "make setup unpacks no such"),
])
def test_make_refuses_a_bad_variable_in_one_line(args, naming, unchanged):
    # -n: a regression prints the command instead of running it
    line = refused(make("-n", *args), naming)
    assert line.startswith("Makefile:") and line.endswith("Stop.")
    assert not Path("/tmp/s2m-pwned-tree").exists()


def test_an_empty_kernel_says_so_not_spatch(unchanged):
    line = refused(make("audit", "KERNEL="), "KERNEL= is empty")
    assert "spatch" not in line


def test_a_target_without_its_required_variable(unchanged):
    refused(make("triage"), "give LOG=")
    refused(make("full-kernel", "BUILD=0"), "give CONFIG=")


# ------------------------------------------------------------------ values are text

@pytest.mark.parametrize("value", ["x;touch {pwned}", "$(shell touch {pwned})",
                                   "`touch {pwned}`", "x' && touch '{pwned}",
                                   "a\"; touch {pwned}; echo \""])
def test_a_value_is_one_argument_never_a_command(tmp_path, value, unchanged):
    pwned = tmp_path / "pwned"
    value = value.format(pwned=pwned)
    # make -n prints what would run: the value quoted as one word, nothing expanded
    for target, var in (("patches", "SUBSYS"), ("bench", "BENCH_NOTE")):
        shown = make("-n", target, f"{var}={value}").stdout
        assert "python3 -m" in shown and not pwned.exists(), (target, var)
    # and run, each is refused as the one argument it is: no such log, no such tree
    for target, var, naming in (("triage", "LOG", "cannot read"),
                                ("evaluate", "KERNEL", "no such directory"),
                                ("audit", "KERNEL", "no such directory")):
        refused(make(target, f"{var}={value}"), value, naming)
        assert not pwned.exists(), (target, var)


@needs_default_tree
def test_patches_with_an_id_that_holds_a_command(tmp_path, unchanged):
    pwned = tmp_path / "pwned"
    line = refused(make("patches", f"ID=x;touch {pwned}", "VERIFY=0"),
                   "x;touch", "no semaphore with this id")
    assert not pwned.exists(), line
    refused(make("patches", f"ID=$(shell touch {pwned})", "VERIFY=0"), "$(shell")
    assert not pwned.exists()


@needs_default_tree
def test_patches_of_an_id_or_subsys_the_audit_does_not_have(unchanged):
    refused(make("patches", "ID=does-not-exist", "VERIFY=0"),
            "does-not-exist", "no semaphore with this id", "reports/linux-6.1.192/audit.json")
    refused(make("patches", "SUBSYS=drivers/no/such", "VERIFY=0"),
            "drivers/no/such", "no semaphore")


# ------------------------------------------------------------------ KERNEL= and TREE=

@pytest.mark.parametrize("target", ["audit", "patches", "reports", "marking", "evaluate",
                                    "bitcheck", "boot-test"])
def test_a_kernel_that_is_not_a_tree(tmp_path, target, unchanged):
    args = ["VERIFY=0"] if target == "patches" else []
    refused(make(target, f"KERNEL={tmp_path}", *args), str(tmp_path), "not a kernel tree")
    refused(make(target, f"KERNEL={tmp_path}/absent", *args), "absent", "no such directory")


def test_reports_of_a_tree_without_an_audit(tmp_path, unchanged):
    kernel = fake_kernel(tmp_path / "other-linux")
    refused(make("reports", f"KERNEL={kernel}"), "audit.json", "run `make audit`")


@pytest.mark.skipif(not (TREE_612 / "Makefile").is_file(), reason="no work/linux-6.12")
def test_evaluate_of_the_other_tree_takes_its_own_labels(unchanged):
    res = make("evaluate", "TREE=6.12")
    assert res.returncode in (0, 1), res.stderr
    assert ("evaluate: Linux 6.12.118: reports/linux-6.12.118/audit.json against the "
            "hand labels of classify/truth/linux-6.12.118.tsv") in res.stdout


def test_evaluate_names_a_version_it_has_no_labels_for(tmp_path, unchanged):
    data = json.loads(AUDIT.read_text())
    data["kernel_version"] = "6.6.1"
    (tmp_path / "audit.json").write_text(json.dumps(data))
    res = subprocess.run([sys.executable, "-m", "classify.evaluate", "--audit",
                          str(tmp_path / "audit.json")], cwd=REPO, capture_output=True,
                         text=True, timeout=60)
    refused(res, "Linux 6.6.1", "no hand labels", "labelled: 6.1.192, 6.12.118")


def test_evaluate_names_the_version_it_evaluates(tmp_path, unchanged):
    res = make("evaluate")
    assert res.returncode in (0, 1), res.stderr
    assert "evaluate: Linux 6.1.192: reports/linux-6.1.192/audit.json against" in res.stdout
    kernel = fake_kernel(tmp_path / "mine")
    refused(make("evaluate", f"KERNEL={kernel}"), "mine-6.1.192/audit.json", "no such file")


# ------------------------------------------------------------------ triage

@pytest.mark.parametrize("name,naming", [
    ("empty", "no kernel_version"), ("list", "a JSON list, not an object"),
    ("shape", "semaphores is int"), ("notjson", "not JSON"), ("sems", "semaphores[0].id"),
    ("missing", "no such file"), ("dir", "is a directory"),
])
def test_triage_of_an_audit_that_is_none(garbage, name, naming, unchanged):
    refused(make("triage", f"LOG={LOG}", f"AUDIT={garbage[name]}"), str(garbage[name]),
            naming)


def test_triage_of_an_audit_of_another_kind_or_version(unchanged):
    refused(make("triage", f"LOG={LOG}", f"AUDIT={RUNTIME}"), "not an audit.json",
            "sem2mutex-runtime-1")
    refused(make("triage", f"LOG={LOG}", f"AUDIT={AUDIT_612}"), "Linux 6.12.118",
            "the log is of Linux 6.1.192")


def test_triage_of_a_log_that_is_none(garbage, unchanged):
    refused(make("triage", f"LOG={garbage['text']}"), str(garbage["text"]),
            "not a console log")
    refused(make("triage", f"LOG={garbage['dir']}"), "is a directory")
    refused(make("triage", f"LOG={garbage['missing']}"), "cannot read")


@pytest.mark.parametrize("out", ["reports/linux-6.1.192/runtime.json",
                                 str(REPO / "reports" / "linux-6.1.192" / "runtime.json"),
                                 "kernel-patches/6.1/runtime.json", "reports/new.json"])
def test_triage_never_writes_the_committed_files(out, unchanged):
    refused(make("triage", f"LOG={LOG}", f"OUT={out}"), out, "committed")


def test_triage_out_that_is_a_directory(garbage, unchanged):
    refused(make("triage", f"LOG={LOG}", f"OUT={garbage['dir']}"), "is a directory")


def test_triage_honours_kernel_and_tree(tmp_path, unchanged):
    kernel = fake_kernel(tmp_path / "built")
    # the audit of that tree, the one `make audit KERNEL=` writes: not made yet
    refused(make("triage", f"LOG={LOG}", f"KERNEL={kernel}"), "built-6.1.192/audit.json")
    refused(make("triage", f"LOG={LOG}", f"KERNEL={tmp_path}/absent"), "no such directory")
    if (TREE_612 / "Makefile").is_file():
        refused(make("triage", f"LOG={LOG}", "TREE=6.12"), "a log of Linux 6.1.192",
                "Linux 6.12.118")


def test_triage_writes_its_record_where_asked(tmp_path, unchanged):
    res = make("triage", f"LOG={LOG}", "TREE=6.1", f"OUT={tmp_path}/r.json")
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "r.json").read_text())["schema"] == "sem2mutex-runtime-1"


def triage_eval(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "qemu", "triage-eval", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


def test_triage_eval_of_logs_that_are_none(garbage, unchanged):
    """The measurement of triage: a directory that holds no fixture, labels that are
    none, and no committed file but its own figures written."""
    refused(triage_eval("syzkaller", str(garbage["text"].parent)), "is no report fixture")
    refused(triage_eval("runtime", str(garbage["missing"])), "no such directory")
    refused(triage_eval("runtime", "--labels", str(garbage["notjson"])),
            str(garbage["notjson"]), "not five tab-separated cells")
    refused(triage_eval("runtime", "--out", "reports/linux-6.1.192/audit.json"),
            "--out", "committed")


# ------------------------------------------------------------------ full-kernel

@needs_default_tree
def test_full_kernel_of_a_config_that_is_none(garbage, tmp_path, unchanged):
    refused(make("full-kernel", f"CONFIG={garbage['text']}", "BUILD=0", "ARCH=x86_64"),
            str(garbage["text"]), "line 1 is not a .config line")
    refused(make("full-kernel", f"CONFIG={garbage['dir']}", "BUILD=0"), "is a directory")
    refused(make("full-kernel", f"CONFIG={garbage['missing']}", "BUILD=0"), "missing.json")
    empty = tmp_path / "empty.config"
    empty.write_text("# nothing set\n")
    refused(make("full-kernel", f"CONFIG={empty}", "BUILD=0", "ARCH=x86_64"),
            "no CONFIG_ option set")


# ------------------------------------------------------------------ boot-test

@needs_default_tree
def test_boot_test_of_a_set_there_is_not(unchanged):
    refused(make("boot-test", "SCENARIOS=nope"), "nope")


def test_boot_commands_never_write_the_committed_files(tmp_path, unchanged):
    res = subprocess.run([sys.executable, "-m", "qemu", "boot-test", "--kernel",
                          str(fake_kernel(tmp_path / "linux")), "--record",
                          "reports/linux-6.1.192/runtime.json"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    refused(res, "--record", "committed")
    res = subprocess.run([sys.executable, "-m", "qemu", "boot-test", "--scenario", "nope"],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    if DEFAULT_TREE.is_dir():
        refused(res, "--scenario nope", "no such scenario")


# ------------------------------------------------------------------ python3 -m classify

def classify(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "classify", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


def test_audit_writes_reports_only_for_the_trees_make_setup_unpacks(tmp_path, unchanged):
    kernel = fake_kernel(tmp_path / "linux")
    refused(classify("audit", "--kernel", str(kernel), "--out", "reports/linux-6.1.192"),
            "--out reports/linux-6.1.192", "committed")
    refused(classify("audit", "--kernel", str(kernel), "--cache", "kernel-patches/c"),
            "--cache", "committed")
    refused(classify("patches", "--kernel", str(kernel), "--out", "reports/x"), "--out")
    refused(classify("audit", "--bogus"), "unrecognized arguments: --bogus")


def small_audit(*ids: str) -> dict:
    return {"schema": "sem2mutex-audit-1", "kernel_version": "6.1.192", "semaphores": [
        {"id": i, "class": "mutex", "declared": {"path": i.split(":")[0], "line": 3},
         "init": [], "ops": [], "reasons": []} for i in ids]}


def test_reports_keeps_only_the_records_of_the_audit(tmp_path, unchanged):
    """`make reports` after `make patches ID=does-not-exist`: no entry for it."""
    kernel = fake_kernel(tmp_path / "linux")
    reports, out = tmp_path / "reports", tmp_path / "out"
    reports.mkdir()
    out.mkdir()
    (reports / "audit.json").write_text(json.dumps(small_audit("drivers/a.c:a.lock")))
    records = {"schema": "sem2mutex-patches-1", "kernel_version": "6.1.192",
               "semaphores": {"drivers/a.c:a.lock": {"status": "converted"},
                              "does-not-exist": {"status": "skipped"}}}
    (out / "patches.json").write_text(json.dumps(records))
    args = ("patches", "--kernel", str(kernel), "--audit", str(reports / "audit.json"),
            "--out", str(out), "--record", "--no-report")
    res = classify(*args)
    assert res.returncode == 0, res.stderr
    assert "left out 1 record(s)" in res.stdout and "does-not-exist" in res.stdout
    kept = json.loads((reports / "patches.json").read_text())["semaphores"]
    assert list(kept) == ["drivers/a.c:a.lock"]
    # records of another version, and a file that is no patches.json
    (out / "patches.json").write_text(json.dumps({**records, "kernel_version": "6.12.118"}))
    refused(classify(*args), "made for Linux 6.12.118")
    (out / "patches.json").write_text("[]\n")
    refused(classify(*args), "not a patches.json")
    (reports / "audit.json").write_text("{}\n")
    refused(classify(*args), "not an audit.json")


# ------------------------------------------------------------------ what the audit reads

def git_tree(root: Path, files: dict[str, str]) -> Path:
    """A fake kernel with files, committed."""
    fake_kernel(root)
    return committed_tree(root, files)


def test_the_census_of_a_git_tree_reads_its_new_and_changed_files(tmp_path, unchanged):
    tree = git_tree(tmp_path / "linux", {"drivers/a.c": "static DEFINE_SEMAPHORE(a);\n",
                                         "drivers/b.c": "int b;\n", ".gitignore": "gen.c\n"})
    (tree / "drivers/new.c").write_text("static DEFINE_SEMAPHORE(n);\n")        # untracked
    (tree / "drivers/b.c").write_text("static DEFINE_SEMAPHORE(b);\n")          # modified
    (tree / "drivers/gen.c").write_text("static DEFINE_SEMAPHORE(g);\n")        # ignored
    res = classify("census", "--kernel", str(tree), "--cache", str(tmp_path / "cache"))
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert [s["id"] for s in data["semaphores"]] == [
        "drivers/a.c:a", "drivers/b.c:b", "drivers/new.c:n"]
    assert "1 file(s) that git ignores" in res.stderr and "drivers/gen.c" in res.stderr
    # the second run, from the cache, sees the same: a new file is a local change
    again = classify("census", "--kernel", str(tree), "--cache", str(tmp_path / "cache"))
    assert json.loads(again.stdout)["semaphores"] == data["semaphores"]


def test_a_partial_tree_is_audited_with_a_warning(tmp_path, unchanged):
    tree = git_tree(tmp_path / "linux", {"drivers/a.c": "int a;\n"})
    res = classify("audit", "--kernel", str(tree), "--out", str(tmp_path / "out"),
                   "--cache", str(tmp_path / "cache"))
    warning = [ln for ln in res.stderr.splitlines() if "partial tree" in ln]
    assert len(warning) == 1 and "drivers/" in warning[0] and "fs/" in warning[0]
    # (this one has no semaphore at all: that is a user error of its own)
    refused(res, "no struct semaphore found")


def test_options_this_tree_does_not_know_are_named():
    """BUILD=0 of a config full of symbols no Kconfig defines: a warning, not silence."""
    from qemu import userconfig
    options = {"CONFIG_X86_64": "y", "CONFIG_GARBAGE": "y", "CONFIG_OFF": "n",
               "CONFIG_LOCKDEP": "y"}
    values = {"CONFIG_X86_64": "y", "CONFIG_LOCKDEP": "y"}
    unknown = userconfig.unknown_options(options, values, {"CONFIG_LOCKDEP": "y"})
    assert unknown == ["CONFIG_GARBAGE"]
    line = userconfig.unknown_line(unknown, options, "my.config")
    assert line.startswith("my.config: 1 of its 3 options are unknown to this tree's")
    assert userconfig.unknown_line([], options, "my.config") == ""
    with pytest.raises(userconfig.UserConfigError, match="line 2 is not a .config line"):
        userconfig.read_user_config("CONFIG_X86_64=y\ngarbage here\n", "my.config")
