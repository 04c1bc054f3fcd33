"""Derive fixtures in formats our x86_64 6.1 boots cannot produce from the real logs.

    /usr/bin/python3 tests/qemu/logs/derive.py          # (re)write the derived fixtures
    /usr/bin/python3 tests/qemu/logs/derive.py --check  # exit 1 if one differs

CONTRIBUTING forbids writing a log by hand.  The parser must nevertheless read logs of
other kernels and machines (lockdep before 4.14 and 5.7, arm64, arm, dmesg and
journalctl output), so each derived fixture is one real fixture put through the
mechanical changes below, which reproduce what the other kernel's printk formats
(read in linux-6.1 and in the older lockdep.c) would have made of the same event.
The derived file names its source and the changes in a "DERIVED:" header line, and
tests/qemu/test_derived.py checks that the committed files equal this script's output.

What a change cannot know it writes as zero, never as a made-up value: code addresses
(the 6.1 x86 log prints none) are [<0000000000000000>] (arm: [<00000000>]), the
offsets of scheduler frames a blocked task adds are +0x0/0x0, timestamps count 1 ms
per line from 0.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LOGS = Path(__file__).parent
HEADER_KEYS = ("TITLE", "KIND", "ALSO", "LOCKS", "TASK", "SOURCE")


def load(name: str) -> tuple[dict[str, str], list[str]]:
    text = (LOGS / name).read_text(errors="replace")
    head, _, body = text.partition("\n\n")
    header = {}
    for line in head.splitlines():
        key, _, value = line.partition(":")
        header[key.strip()] = value.strip()
    return header, body.split("\n")


# ------------------------------------------------------------------ lockdep before 4.14

# The pre-4.14 banner of each 4.14+ one (commit a5dd63efda3d), as the old lockdep.c
# printed it between two rules as wide as the banner.
OLD_BANNERS = {
    "WARNING: possible circular locking dependency detected":
        "[ INFO: possible circular locking dependency detected ]",
    "WARNING: possible recursive locking detected":
        "[ INFO: possible recursive locking detected ]",
    "WARNING: bad unlock balance detected!": "[ BUG: bad unlock balance detected! ]",
    "WARNING: held lock freed!": "[ BUG: held lock freed! ]",
    "WARNING: lock held when returning to user space!":
        "[ BUG: lock held when returning to user space! ]",
}
_STILL_HELD = re.compile(r"^WARNING: (\S+/\d+) still has locks held!$")
_LOCK_LINE = re.compile(r"^(?P<lead>\s*(?:#\d+: |-> #\d+ )?)(?:[0-9a-f]{16} )?"
                        r"(?P<lock>\(.*\)\{[-+.?]*\})-\{\d+:\d+\}(?P<rest>.*)$")
_FRAME = re.compile(r"^(?P<ind>\s+)(?P<q>\? )?(?P<sym>[A-Za-z_][\w.]*\+0x[0-9a-f]+/0x[0-9a-f]+)"
                    r"(?P<mod> \[\w+\])?$")
_MARKER = re.compile(r"^\s*</?TASK>\s*$")


def pre_4_14(lines: list[str]) -> list[str]:
    """Lockdep as 4.9 printed it: bracketed banner between rules of its width, lock
    lines without the instance address and the 5.7 "-{n:n}" suffix and with the
    code address before the function, frames as " [<addr>] func+off/len", no
    <TASK> markers (5.13)."""
    out: list[str] = []
    for line in lines:
        if _MARKER.match(line):
            continue
        banner = OLD_BANNERS.get(line)
        if (m := _STILL_HELD.match(line)):
            banner = f"[ BUG: {m[1]} still has locks held! ]"
        if banner:
            if out and re.match(r"^=+$", out[-1]):
                out[-1] = "=" * len(banner)
            out.append(banner)
            continue
        if out and len(out) >= 2 and out[-2].startswith("[ ") and re.match(r"^-+$", line):
            out.append("-" * len(out[-2]))
            continue
        if m := _LOCK_LINE.match(line):
            lead = m["lead"]
            rest = m["rest"].replace(", at: ", ", at: [<0000000000000000>] ", 1)
            # print_lock_name() printed " (%s": a space before the name
            sep = "" if lead.lstrip().startswith("->") else " "
            out.append(f"{lead}{sep}{m['lock']}{rest}")
            continue
        if m := _FRAME.match(line):
            out.append(f"{m['ind']}[<0000000000000000>] {m['q'] or ''}{m['sym']}{m['mod'] or ''}")
            continue
        out.append(line)
    return out


# ------------------------------------------------------------------ arm64 and arm

_X86_REGS = re.compile(r"^(?:RIP|Code|RSP|RAX|RDX|RBP|R10|R13|FS|CS|CR2): ")


def _traces(lines: list[str], convert) -> list[str]:
    """Replace every x86 "Call Trace:" ... "</TASK>" block by convert(reliable frames)."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "Call Trace:":
            j = i + 1
            frames = []
            while j < len(lines) and (_MARKER.match(lines[j]) or _FRAME.match(lines[j])):
                if (m := _FRAME.match(lines[j])) and not m["q"]:
                    frames.append(m["sym"])
                j += 1
            out += convert(frames)
            i = j
            continue
        out.append(lines[i])
        i += 1
    return out


def arm64_call_trace(lines: list[str]) -> list[str]:
    """arm64 since 4.15: "Call trace:" (lower-case t), one frame per line printed
    " %pSb", no "? " guesses (the unwinder follows frame records), no markers."""
    return _traces(lines, lambda fr: ["Call trace:"] + [f" {f}" for f in fr])


def arm64_old_call_trace(lines: list[str]) -> list[str]:
    """arm64 before 4.15: frames printed by print_ip_sym(), "[<addr>] func+off/len"."""
    return _traces(lines, lambda fr: ["Call trace:"] +
                   [f"[<0000000000000000>] {f}" for f in fr])


def arm_backtrace(header: bool):
    """arm with CONFIG_BACKTRACE_VERBOSE: "[<pc>] (func) from [<lr>] (caller+off/len)",
    one line per call; after "Backtrace: " with the frame-pointer unwinder, with no
    header with CONFIG_ARM_UNWIND."""
    def convert(fr: list[str]) -> list[str]:
        out = ["Backtrace: "] if header else []
        for callee, caller in zip(fr, fr[1:]):
            out.append(f"[<00000000>] ({callee.split('+')[0]}) from [<00000000>] ({caller})")
        return out
    return lambda lines: _traces(lines, convert)


def x86_regs_to(pc_form: str):
    """The x86 register dump of an oops becomes the arm64/arm program counter line:
    "pc : func+off/len" (arm64 since 4.15) or "PC is at func+off/len" (arm, old arm64)."""
    def change(lines: list[str]) -> list[str]:
        out = []
        for line in lines:
            if m := re.match(r"^RIP: [0-9a-f]{4}:(\S+)$", line):
                out.append(pc_form + m[1])
            elif not _X86_REGS.match(line):
                out.append(line)
        return out
    return change


def replace_line(old: str, new: list[str]):
    """Replace the first line equal to old by the lines new."""
    def change(lines: list[str]) -> list[str]:
        i = lines.index(old)
        return lines[:i] + new + lines[i + 1:]
    return change


def warn_message_after(lines: list[str]) -> list[str]:
    """WARN() without __WARN_FLAGS (arm, x86 before 4.x): warn_slowpath_fmt() prints the
    "WARNING: CPU:" line first and the message (DEBUG_LOCKS_WARN_ON(...)) after it."""
    out = list(lines)
    i = next(n for n, ln in enumerate(out) if ln.startswith("DEBUG_LOCKS_WARN_ON("))
    msg = out.pop(i)
    out.insert(i + 1, msg)
    return out


# ------------------------------------------------------------------ dmesg, journalctl

def kernel_only(lines: list[str]) -> list[str]:
    """What the kernel's ring buffer holds: from "Linux version" on, without the
    firmware's screen before it and the harness's line after the boot."""
    first = next(n for n, ln in enumerate(lines) if "Linux version" in ln)
    out = [lines[first][lines[first].index("Linux version"):]] + lines[first + 1:]
    return [ln for ln in out if not ln.startswith("s2m-harness: ")]


def timestamps(caller: str = "", sep: str = ""):
    """CONFIG_PRINTK_TIME (and CONFIG_PRINTK_CALLER "[    T1]"): synthetic times, 1 ms
    per line."""
    def change(lines: list[str]) -> list[str]:
        out = []
        for n, line in enumerate(lines):
            t = f"[{n // 1000:5d}.{(n % 1000) * 1000:06d}]"
            cid = f"{sep}[{caller:>6}]" if caller else ""
            out.append(f"{t}{cid} {line}")
        return out
    return change


def journalctl(lines: list[str]) -> list[str]:
    """journalctl -k (short format): date, host name, "kernel: ", then the message."""
    return [f"Dec 03 12:00:00 s2m kernel: {line}" for line in lines]


def twice(lines: list[str]) -> list[str]:
    """The one report printed twice back to back, as in a capture of two consoles or a
    console log followed by its dmesg: the lines from "------------[ cut here ]" to
    "---[ end trace" repeated right after themselves."""
    a = next(n for n, ln in enumerate(lines) if ln.startswith("------------[ cut here ]"))
    b = next(n for n, ln in enumerate(lines) if n > a and ln.startswith("---[ end trace"))
    return lines[:b + 1] + lines[a:b + 1] + lines[b + 1:]


def hung_task_after_deadlock(lines: list[str]) -> list[str]:
    """recursive-locking.log's kthread deadlocks on itself; 120 s later hung_task.c
    (6.1 formats) reports it.  The log is cut after the lockdep report (the capture
    of a boot that did not go on) and the hung-task report is appended.  Its stack is
    the lockdep report's from __mutex_lock down, under the scheduler frames a sleeping
    mutex waiter has (offsets unknown: +0x0/0x0); lockdep, off since its report, shows
    no locks."""
    end = next(n for n, ln in enumerate(lines) if ln.strip() == "</TASK>")
    start = next(n for n, ln in enumerate(lines) if ln.strip().startswith("__mutex_lock+"))
    stack = [ln for ln in lines[start:end] if not ln.startswith(" ? ")]
    return lines[:end + 1] + [
        "INFO: task mutex_rule_chk:17 blocked for more than 122 seconds.",
        "      Not tainted 6.1.192+ #1",
        '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
        "task:mutex_rule_chk  state:D stack:0     pid:17    ppid:2      flags:0x00004000",
        "Call Trace:",
        " <TASK>",
        " __schedule+0x0/0x0",
        " schedule+0x0/0x0",
        " schedule_preempt_disabled+0x0/0x0",
    ] + stack + [
        " </TASK>",
        "",
        "Showing all locks held in the system:",
        "INFO: lockdep is turned off.",
    ]


# ------------------------------------------------------------------ the fixtures

# name: (source, changes, header of the first report, what the DERIVED line says)
DERIVED: dict[str, tuple[str, list, dict[str, str], str]] = {
    "pre414-circular-locking-abba.log": (
        "circular-locking-abba.log", [pre_4_14], {}, "lockdep as before 4.14"),
    "pre414-recursive-locking.log": (
        "recursive-locking.log", [pre_4_14], {}, "lockdep as before 4.14"),
    "pre414-bad-unlock-balance-double-unlock.log": (
        "bad-unlock-balance-double-unlock.log", [pre_4_14], {}, "lockdep as before 4.14"),
    "pre414-held-lock-freed.log": (
        "held-lock-freed.log", [pre_4_14], {}, "lockdep as before 4.14"),
    "pre414-lock-held-at-exit.log": (
        "lock-held-at-exit.log", [pre_4_14], {}, "lockdep as before 4.14"),
    "pre414-lock-held-return-to-user.log": (
        "lock-held-return-to-user.log", [pre_4_14], {}, "lockdep as before 4.14"),
    "arm64-circular-locking-abba.log": (
        "circular-locking-abba.log", [arm64_call_trace], {},
        "stack dump as arm64 prints it (Call trace:)"),
    "arm64-bug-kernel-bug-at.log": (
        "bug-kernel-bug-at.log",
        [replace_line("invalid opcode: 0000 [#1]",
                      ["Internal error: Oops - BUG: 00000000f2000800 [#1] SMP"]),
         x86_regs_to("pc : "), arm64_call_trace], {},
        "BUG() as arm64 6.1 reports it (brk: Internal error: Oops - BUG, pc :, Call trace:)"),
    "arm64-old-oops-null-deref.log": (
        "oops-invalid-opcode-no-config-bug.log",
        [replace_line("invalid opcode: 0000 [#1]",
                      ["Unable to handle kernel NULL pointer dereference at virtual "
                       "address 0000000000000000",
                       "Internal error: Oops: 96000005 [#1] SMP"]),
         x86_regs_to("PC is at "), arm64_old_call_trace],
        {"TITLE": "Unable to handle kernel NULL pointer dereference in bug_thread"},
        "the trap banner replaced by arm64's NULL-dereference fault banner and the x86 "
        "registers by 'PC is at', frames in the pre-4.15 arm64 '[<addr>] func' form"),
    "arm-recursive-locking.log": (
        "recursive-locking.log", [arm_backtrace(header=False)], {},
        "stack dump as arm (CONFIG_ARM_UNWIND, BACKTRACE_VERBOSE) prints it"),
    "arm-debug-locks-warn-on-memset-init.log": (
        "debug-locks-warn-on-memset-init.log",
        [warn_message_after, x86_regs_to("PC is at "), arm_backtrace(header=True)], {},
        "WARN() as arm prints it (message after the WARNING line, 'Backtrace: ' with "
        "the frame-pointer unwinder)"),
    "dmesg-caller-runtime-seccomp-probe-request.log": (
        "runtime-seccomp-probe-request.log", [kernel_only, timestamps("T31")], {},
        "console with CONFIG_PRINTK_TIME and CONFIG_PRINTK_CALLER ([T31] on every line)"),
    "dmesg-runtime-xfs-challenge-ic-sema.log": (
        "runtime-xfs-challenge-ic-sema.log", [kernel_only, timestamps("T21", " ")], {},
        "dmesg output (util-linux 2.38: time, space, caller id)"),
    "journalctl-bad-unlock-balance-owner-unlock.log": (
        "bad-unlock-balance-owner-unlock.log", [kernel_only, journalctl], {},
        "journalctl -k output"),
    "dmesg-none-clean-boot.log": (
        "none-clean-boot.log", [kernel_only, timestamps()], {}, "dmesg output"),
    "twice-warning-one-holder.log": (
        "warning-one-holder.log", [twice], {}, "the WARNING printed twice back to back"),
    "hung-task-recursive-locking.log": (
        "recursive-locking.log", [hung_task_after_deadlock, kernel_only, timestamps()],
        {"ALSO": "hung_task"},
        "a hung-task report of the deadlocked thread appended, dmesg output"),
}


def render(name: str) -> str:
    source, changes, override, what = DERIVED[name]
    header, lines = load(source)
    for change in changes:
        lines = change(lines)
    header = {**header, **override}
    head = [f"{k}: {header[k]}" for k in HEADER_KEYS if k in header]
    head.append(f"DERIVED: {source} by derive.py: {what}")
    return "\n".join(head) + "\n\n" + "\n".join(lines)


def main(argv: list[str]) -> int:
    bad = 0
    for name in DERIVED:
        text = render(name)
        path = LOGS / name
        if "--check" in argv:
            if not path.exists() or path.read_text(errors="replace") != text:
                print(f"{name}: differs from derive.py's output")
                bad = 1
        else:
            path.write_text(text)
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
