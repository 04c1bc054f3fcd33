"""The run stage with fake commands instead of QEMU: timeout kills the process group,
exit statuses and a missing binary are each their own result."""

import sys
import time
from pathlib import Path

from qemu.parse import parse_log
from qemu.run import RunRequest, RunStatus, qemu_command, run_qemu


def _req(tmp_path: Path, command, timeout=10.0, qemu="/usr/bin/qemu-system-x86_64"):
    return RunRequest(Path("bzImage"), Path("initrd"), tmp_path / "console.log",
                      timeout=timeout, command=tuple(command) if command else None,
                      qemu=qemu)


def test_timeout_kills_the_whole_process_group(tmp_path):
    # The child shell starts a grandchild sleep: both must be gone after the timeout.
    pidfile = tmp_path / "pid"
    script = f"echo booting; sleep 60 & echo $! > {pidfile}; wait"
    start = time.monotonic()
    res = run_qemu(_req(tmp_path, ["sh", "-c", script], timeout=1.0))
    assert time.monotonic() - start < 8
    assert res.status is RunStatus.TIMEOUT
    assert res.tail == ["booting"]
    grandchild = int(pidfile.read_text())
    time.sleep(0.2)
    assert not Path(f"/proc/{grandchild}").exists() or \
        "Z" in Path(f"/proc/{grandchild}/stat").read_text().split()[2]
    parsed = parse_log(res.log_path.read_text())
    assert parsed.verdict == "hang"
    assert parsed.reports[-1].kind == "hang"


def test_a_silent_console_is_a_hang_long_before_the_timeout(tmp_path):
    """The hang control's watchdog: no console line for `silence` seconds kills QEMU."""
    script = "echo booting; echo '# s2m-init: hanging on purpose'; sleep 60"
    req = RunRequest(Path("bz"), Path("rd"), tmp_path / "console.log", timeout=30.0,
                     command=("sh", "-c", script), silence=1.0)
    start = time.monotonic()
    res = run_qemu(req)
    assert time.monotonic() - start < 6
    assert res.status is RunStatus.SILENT and res.tail[-1] == "# s2m-init: hanging on purpose"
    parsed = parse_log(res.log_path.read_text())
    assert parsed.verdict == "hang"
    assert parsed.reports[-1].title == "s2m-harness: no console output for 1 s, killed qemu"


def test_a_console_that_keeps_talking_is_not_silent(tmp_path):
    """Look-alike: lines 0.3 s apart for 2 s under a 1 s silence limit end normally."""
    script = "for i in 1 2 3 4 5 6 7; do echo tick $i; sleep 0.3; done; echo 's2m-init: done'"
    req = RunRequest(Path("bz"), Path("rd"), tmp_path / "console.log", timeout=30.0,
                     command=("sh", "-c", script), silence=1.0)
    res = run_qemu(req)
    assert res.status is RunStatus.EXITED
    assert parse_log(res.log_path.read_text()).verdict == "completed"


def test_clean_exit_is_not_a_hang(tmp_path):
    res = run_qemu(_req(tmp_path, ["sh", "-c", "echo 's2m-init: done'"]))
    assert res.status is RunStatus.EXITED and res.returncode == 0
    assert parse_log(res.log_path.read_text()).verdict == "completed"


def test_log_is_teed_live(tmp_path):
    script = "echo first; sleep 2; echo second"
    req = _req(tmp_path, ["sh", "-c", script])
    import threading
    seen = []
    t = threading.Thread(target=lambda: seen.append(run_qemu(req)))
    t.start()
    time.sleep(1.0)
    assert req.log_path.read_text() == "first\n"      # written before the process ended
    t.join()
    assert seen[0].status is RunStatus.EXITED


def test_nonzero_exit_is_qemu_failed(tmp_path):
    res = run_qemu(_req(tmp_path, [sys.executable, "-c",
                                   "import sys; print('qemu: could not load kernel', "
                                   "file=sys.stderr); sys.exit(1)"]))
    assert res.status is RunStatus.QEMU_FAILED
    assert "could not load kernel" in " ".join(res.errors)
    assert parse_log(res.log_path.read_text()).verdict == "qemu_failed"


def test_truncated_log(tmp_path):
    # QEMU ended cleanly but our init never said it was done and nothing panicked.
    res = run_qemu(_req(tmp_path, ["sh", "-c", "echo 'Run /init as init process'"]))
    assert parse_log(res.log_path.read_text()).verdict == "truncated"


def test_qemu_missing(tmp_path):
    res = run_qemu(_req(tmp_path, None, qemu="/nonexistent/qemu-system-x86_64"))
    assert res.status is RunStatus.QEMU_MISSING
    assert "not found" in res.errors[0]


def test_qemu_command_line(tmp_path):
    cmd = qemu_command(RunRequest(Path("bz"), Path("rd"), tmp_path / "l", "s2m.scenario=x"))
    assert cmd[:3] == ["/usr/bin/qemu-system-x86_64", "-accel", "tcg"]
    assert "-no-reboot" in cmd and "-nographic" in cmd
    append = cmd[cmd.index("-append") + 1]
    assert append.startswith("console=ttyS0 panic=-1 ignore_loglevel")
    assert append.endswith("s2m.scenario=x")
    assert cmd[cmd.index("-smp") + 1] == "1"


def test_qemu_command_line_with_more_vcpus(tmp_path):
    cmd = qemu_command(RunRequest(Path("bz"), Path("rd"), tmp_path / "l", smp=2))
    assert cmd[cmd.index("-smp") + 1] == "2"
