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
    assert [{**r, "line": r["line"] - len(noise)} | {"repeats": 0} for r in first] == \
        [r | {"repeats": 0} for r in small["reports"]]
    # every report of every copy: listed, or a repeat of a listed one at its own line
    copy = text.count("\n")
    want = sorted(r["line"] + len(noise) + k * copy for r in small["reports"]
                  for k in range(4))
    listed = [r["line"] for r in got["reports"]]
    repeats = [n for r in got["reports"] for n in r.get("repeats", {}).get("lines", [])]
    assert sorted(listed + repeats) == want
    assert len(listed) + got["repeated"] == len(want) and got["repeated"] > 0
    for r in got["reports"]:            # a repeat is the same report: the same triage
        twin = next(s for s in small["reports"] if (r["line"] - len(noise) - s["line"])
                    % copy == 0)
        assert {**r, "line": twin["line"]} | {"repeats": 0} == twin | {"repeats": 0}
    monkeypatch.setattr(logstream, "WHOLE_MAX", 1 << 30)     # read whole
    whole = triage_json(big, capsys)
    assert [{k: v for k, v in r.items() if k != "repeats"} for r in first] == \
        whole["reports"][:len(first)]
    assert [r["line"] for r in whole["reports"]] == want    # read whole: every one listed
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


def test_the_text_names_each_repeat_by_its_line(tmp_path, capsys, monkeypatch):
    text = SMALL.read_text(errors="replace")
    big = tmp_path / SMALL.name
    big.write_text("\n".join(noise_lines(1 << 20)) + "\n" + text * 12)
    monkeypatch.setattr(logstream, "WHOLE_MAX", 1 << 20)
    assert cli.main(["triage", str(big), "--audit", str(AUDIT), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    rep = next(r for r in got["reports"] if r.get("repeats"))
    assert cli.main(["triage", str(big), "--audit", str(AUDIT)]) == 0
    out = capsys.readouterr().out
    n, lines = rep["repeats"]["count"], rep["repeats"]["lines"]
    # copies 2 to 11 repeat the first; the last, its window cut short by the end of
    # the file, is not word for word the same: listed again
    assert n == len(lines) == 10
    assert f"{n} further report(s) of the same signature" in out
    assert ", ".join(map(str, lines[:8])) + ", and 2 more (--json lists 10)" in out
    assert f"and {got['repeated']} further report(s) of the same signature" in out


def test_repeats_past_the_limit_are_counted_not_listed(tmp_path, monkeypatch):
    text = SMALL.read_text(errors="replace")
    big = tmp_path / "big.log"
    big.write_text(text * 6)
    monkeypatch.setattr(logstream, "WHOLE_MAX", 1 << 10)
    monkeypatch.setattr(logstream, "POSITIONS_MAX", 3)
    log = logstream.read_log(big)
    assert sum(len(r.lines) for r in log.repeats.values()) == 3
    assert sum(r.count for r in log.repeats.values()) > 3


def test_one_stretch_of_reports_without_end_is_refused(tmp_path, monkeypatch):
    """Headlines on every line keep one window open: it is bounded too."""
    log = tmp_path / "dense.log"
    line = "[    1.000000] BUG: scheduling while atomic: swapper/0/0x00000002\n"
    log.write_text(line * 20_000)
    monkeypatch.setattr(logstream, "WHOLE_MAX", 1 << 10)
    monkeypatch.setattr(logstream, "KEEP_MAX", 256 << 10)
    with pytest.raises(logstream.LogError, match="one stretch of reports from line 1"):
        logstream.read_log(log)
    # the look-alike: the same headlines spread out, each window small, is read
    log.write_text("".join(line + "noise\n" * 300 for _ in range(40)))
    assert logstream.read_log(log).text
