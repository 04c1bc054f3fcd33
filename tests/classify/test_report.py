"""The report writers and the command line, on fixtures and on bad input."""

import json
import subprocess
import sys
from pathlib import Path

from classify.audit import run_audit
from classify.report import to_html, to_json, to_markdown, write_all

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def audit_of(cache, name="loop.c"):
    return run_audit(FIXTURES / name, cache, nice=0, version="file-x")


def test_json_is_stable_and_complete(tmp_path, shared_cache):
    a = audit_of(shared_cache)
    data = to_json(a)
    assert [s["id"] for s in data["semaphores"]] == sorted(s["id"] for s in data["semaphores"])
    for s in data["semaphores"]:
        assert {"id", "class", "reasons", "evidence", "ops", "init"} <= set(s)
    assert data["total"] == len(data["semaphores"]) == 3
    assert data["counts"]["completion"] == 2 and data["counts"]["mutex"] == 1
    write_all(a, tmp_path / "out1")
    write_all(audit_of(tmp_path / "cache"), tmp_path / "out2")
    for name in ("audit.json", "audit.md", "audit.html"):
        assert (tmp_path / "out1" / name).read_bytes() == (tmp_path / "out2" / name).read_bytes()


def test_unknown_pool_first_with_settle(shared_cache):
    md = to_markdown(audit_of(shared_cache, "trylock_atomic.c"))
    assert md.index("## The unknown pool") < md.index("## By subsystem")
    assert "only runs in process context" in md


def test_html_escapes_source_text(shared_cache):
    a = audit_of(shared_cache, "passed_by_pointer.c")
    a.results[0].verdict.reasons.append("<script>alert(1)</script> & co")
    page = to_html(a)
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co" in page
    assert 'class="chart"' in page


def run_cli(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "classify", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_cli_help():
    res = run_cli("audit", "--help")
    assert res.returncode == 0 and "--fresh" in res.stdout and "--kernel" in res.stdout


def test_cli_single_file(tmp_path):
    res = run_cli("audit", "--kernel", str(FIXTURES / "sx8_probe_sem.c"), "--out",
                  str(tmp_path / "out"), "--cache", str(tmp_path / "cache"), "--nice", "0")
    assert res.returncode == 0, res.stderr
    data = json.loads((tmp_path / "out/audit.json").read_text())
    assert [(s["id"], s["class"]) for s in data["semaphores"]] == [
        ("sx8_probe_sem.c:carm_host.probe_sem", "completion")]


def test_cli_no_semaphores(tmp_path):
    res = run_cli("audit", "--kernel", str(FIXTURES / "no_semaphores.c"), "--out",
                  str(tmp_path / "out"), "--cache", str(tmp_path / "cache"))
    assert res.returncode == 0, res.stderr
    assert "no struct semaphore found" in res.stdout
    assert json.loads((tmp_path / "out/audit.json").read_text())["total"] == 0


def test_cli_not_a_kernel_tree(tmp_path):
    res = run_cli("audit", "--kernel", str(tmp_path), "--out", str(tmp_path / "out"))
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "not a kernel tree" in lines[0]


def test_cli_missing_path(tmp_path):
    res = run_cli("audit", "--kernel", str(tmp_path / "nope"))
    assert res.returncode == 2 and res.stderr.count("\n") == 1


def errors(res) -> list[str]:
    """The error lines of a run (the rest of stderr is its progress log)."""
    return [ln for ln in res.stderr.splitlines() if not ln.startswith("sem2mutex.")]


def test_cli_tree_without_semaphore_users(tmp_path):
    tree = tmp_path / "linux"
    for rel in ("Kconfig", "include/linux/semaphore.h", "kernel/locking/semaphore.c"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text("struct semaphore { int count; };\n")
    (tree / "Makefile").write_text("VERSION = 9\nPATCHLEVEL = 9\nSUBLEVEL = 0\n")
    (tree / "drivers").mkdir()
    (tree / "drivers/a.c").write_text("int main(void) { return 0; }\n")
    res = run_cli("audit", "--kernel", str(tree), "--out", str(tmp_path / "out"),
                  "--cache", str(tmp_path / "cache"))
    assert res.returncode == 2
    assert errors(res) == [f"error: {tree}: no struct semaphore found (0 file(s) mention "
                           "the semaphore API): nothing to audit"]
    assert not (tmp_path / "out").exists()
    # one that mentions the API (up() of something else) but declares none
    (tree / "drivers/a.c").write_text("void f(void) { up(&x); }\n")
    res = run_cli("audit", "--kernel", str(tree), "--out", str(tmp_path / "out"),
                  "--cache", str(tmp_path / "cache"))
    assert res.returncode == 2 and "(1 file(s) mention" in res.stderr


def test_cli_git_tree_that_tracks_nothing_is_refused(tmp_path):
    import subprocess
    tree = tmp_path / "linux"
    for rel in ("Kconfig", "include/linux/semaphore.h", "kernel/locking/semaphore.c"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text("struct semaphore { int count; };\n")
    (tree / "Makefile").write_text("VERSION = 9\nPATCHLEVEL = 9\nSUBLEVEL = 0\n")
    (tree / "drivers").mkdir()
    (tree / "drivers/a.c").write_text("static DEFINE_SEMAPHORE(s);\n")
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    res = run_cli("audit", "--kernel", str(tree), "--out", str(tmp_path / "out"),
                  "--cache", str(tmp_path / "cache"))
    assert res.returncode == 2
    assert [e[:len(f"error: {tree}: git tracks no file here")] for e in errors(res)] == [
        f"error: {tree}: git tracks no file here"]
    # the same tree with its files added is audited (git grep of the index)
    subprocess.run(["git", "-C", str(tree), "add", "-A"], check=True)
    res = run_cli("audit", "--kernel", str(tree), "--out", str(tmp_path / "out"),
                  "--cache", str(tmp_path / "cache"), "--nice", "0")
    assert res.returncode == 0, res.stderr
    assert "audit: 1 semaphores" in res.stdout


def test_only_the_setup_trees_write_into_reports(tmp_path):
    from classify.paths import DEFAULT_KERNEL, PROJECT_DIR as REPO, SETUP_TREES, default_out
    assert default_out(DEFAULT_KERNEL.resolve(), "6.1.192") == REPO / "reports/linux-6.1.192"
    assert default_out(SETUP_TREES["6.12"].resolve(), "6.12.118") == \
        REPO / "reports/linux-6.12.118"
    # a user's 6.12 tree elsewhere is not the committed one
    assert default_out(tmp_path / "linux-6.12", "6.12.118") == \
        REPO / "work/reports/linux-6.12-6.12.118"
    assert default_out(tmp_path / "linux-next", "6.1.192") == \
        REPO / "work/reports/linux-next-6.1.192"
    assert default_out(tmp_path / "x.c", "file-x") == REPO / "work/reports/file-x"
