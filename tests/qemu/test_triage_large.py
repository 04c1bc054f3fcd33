"""`make triage` on inputs that are not small logs (qemu.logstream): binary and endless
ones are refused in one line (exit status 2), a large log is read in windows around
its reports and says what the small one says."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from qemu import cli, logstream

REPO = Path(__file__).resolve().parents[2]
AUDIT = REPO / "reports" / "linux-6.1.192" / "audit.json"
SMALL = AUDIT.parent / "runtime" / "runtime-udlfb-challenge.3.log"


def triage_cmd(log) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "qemu", "triage", str(log), "--audit",
                           str(AUDIT)], cwd=REPO, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("dev", ["/dev/zero", "/dev/urandom"])
def test_an_endless_binary_input_is_refused_in_one_line(dev):
    res = triage_cmd(dev)
    assert res.returncode == 2 and res.stdout == ""
    assert len(res.stderr.splitlines()) == 1
    assert dev in res.stderr and "not text" in res.stderr


def test_binary_files_are_refused(tmp_path):
    noise = tmp_path / "random.log"
    noise.write_bytes(os.urandom(300_000))
    controls = tmp_path / "controls.log"      # no NUL, but control characters
    controls.write_bytes(bytes(b % 31 + 1 for b in os.urandom(200_000)) + b"\n")
    one_line = tmp_path / "one-line.log"      # text, but no line
    one_line.write_bytes(b"x" * (logstream.NEWLINE_MAX + 10))
    for path in (noise, controls, one_line):
        res = triage_cmd(path)
        assert res.returncode == 2, res.stderr
        assert len(res.stderr.splitlines()) == 1 and str(path) in res.stderr


def noise_lines(size: int) -> list[str]:
    """Console lines of no report (some with a report's words in them)."""
    words = ["usb 1-1: new high-speed USB device number 2 using ehci-pci",
             "systemd[1]: INFO: Started Journal Service.",
             "EXT4-fs (vda): mounted filesystem with ordered data mode",
             "random: crng init done: no BUG here, WARNING: none"]
    out, n = [], 0
    while n < size:
        line = f"[{len(out) / 1000:12.6f}] {words[len(out) % len(words)]}"
        out.append(line)
        n += len(line) + 1
    return out


def triage_json(log: Path, capsys) -> dict:
    assert cli.main(["triage", str(log), "--audit", str(AUDIT), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_report_after_megabytes_of_noise_is_read_the_same(tmp_path, capsys,
                                                            monkeypatch):
    small = triage_json(SMALL, capsys)
    noise = noise_lines(3 << 20)
    big = tmp_path / SMALL.name
    text = SMALL.read_text(errors="replace")
    big.write_text("\n".join(noise) + "\n" + text * 4)
    monkeypatch.setattr(logstream, "WHOLE_MAX", 1 << 20)     # read in windows
    got = triage_json(big, capsys)
    assert len(logstream.read_log(big).text) < len(text) * 4   # the noise is not kept
    first = got["reports"][:len(small["reports"])]
    assert [{**r, "line": r["line"] - len(noise)} for r in first] == small["reports"]
    assert got["repeated"] > 0          # the later copies' reports, counted
    monkeypatch.setattr(logstream, "WHOLE_MAX", 1 << 30)     # read whole
    whole = triage_json(big, capsys)
    assert whole["reports"][:len(first)] == got["reports"][:len(first)]
    for key in ("exercised", "allocated", "verdict", "variant", "boot", "lockdep_classes"):
        assert got[key] == whole[key], key


def test_every_headline_of_the_fixtures_opens_a_window():
    """logstream's cheap tests on raw lines miss no headline the parser finds."""
    from qemu import parse
    from qemu.logtext import normalise
    logs = sorted((REPO / "tests" / "qemu" / "logs").rglob("*.log"))
    heads = 0
    for log in logs + sorted(AUDIT.parent.glob("runtime/*.log")):
        text = log.read_text(errors="replace")
        raw, (lines, origin) = text.splitlines(), normalise(text)
        for i, line in enumerate(lines):
            joined = i + 1 < len(lines) and origin[i + 1] - origin[i] > 1
            if not joined and any(p.match(line) for _, p in parse.REPORT_PATTERNS):
                heads += 1
                b = raw[origin[i]].encode()
                assert logstream._CANDIDATE.search(b) and logstream._headline(b), \
                    (log.name, raw[origin[i]])
    assert heads > 100
