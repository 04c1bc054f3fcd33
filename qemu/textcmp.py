#!/usr/bin/python3
"""Compare the .text section of two vmlinux files.

Usage: python3 -m qemu.textcmp VMLINUX_A VMLINUX_B

For each file, print the size of .text (from `size -A`), the sha256 of the
raw .text bytes (`objcopy -O binary --only-section=.text`) and the sha256 of
the disassembly of .text with addresses and raw bytes stripped
(`objdump -d --no-show-raw-insn`).  In the disassembly, the numeric
suffixes that GCC gives to function-local static and cloned symbols
(`__print_once.16`, `foo.constprop.0`) are also stripped: they are
per-translation-unit counters that shift when a header declares one more
local static, without any change to the code.  Exit status: 0 if both
.text sections are identical by all three measures, 1 if they differ, 2 on
a usage or tool error.
"""

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile

_ADDR_PREFIX = re.compile(r"^\s*[0-9a-f]+:\s*")
_SYMBOL_LINE = re.compile(r"^[0-9a-f]+ <")
_LOCAL_SUFFIX = re.compile(r"\.[0-9]+(?=[>+.])")


def text_size(vmlinux):
    """Return the size in bytes of .text, as reported by `size -A`."""
    out = subprocess.run(["size", "-A", vmlinux], check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if fields and fields[0] == ".text":
            return int(fields[1])
    raise ValueError(f"{vmlinux}: no .text section")


def raw_hash(vmlinux):
    """Return the sha256 of the raw bytes of .text."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "text.bin")
        subprocess.run(["objcopy", "-O", "binary", "--only-section=.text",
                        vmlinux, out], check=True)
        with open(out, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()


def disasm_hash(vmlinux):
    """Return the sha256 of the disassembly of .text, addresses stripped."""
    proc = subprocess.run(["objdump", "-d", "--no-show-raw-insn",
                           "--section=.text", vmlinux], check=True,
                          capture_output=True, text=True)
    digest = hashlib.sha256()
    started = False
    for line in proc.stdout.splitlines():
        if line.startswith("Disassembly of section"):
            started = True
        if not started:
            continue  # skip the header, which names the file
        if _SYMBOL_LINE.match(line):
            line = line.split(" ", 1)[1]
        line = _ADDR_PREFIX.sub("", line)
        line = _LOCAL_SUFFIX.sub("", line)
        digest.update(line.encode() + b"\n")
    return digest.hexdigest()


def measure(vmlinux):
    """Return (size, raw sha256, disassembly sha256) of vmlinux's .text."""
    return text_size(vmlinux), raw_hash(vmlinux), disasm_hash(vmlinux)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Compare the .text section of two vmlinux files "
                    "(size, sha256 of the raw bytes, sha256 of the "
                    "address-stripped disassembly). Exit 1 on difference.")
    parser.add_argument("vmlinux_a")
    parser.add_argument("vmlinux_b")
    args = parser.parse_args(argv)
    try:
        results = [measure(v) for v in (args.vmlinux_a, args.vmlinux_b)]
    except (OSError, ValueError, subprocess.CalledProcessError) as err:
        print(f"textcmp: {err}", file=sys.stderr)
        return 2
    for name, (size, raw, dis) in zip((args.vmlinux_a, args.vmlinux_b),
                                      results):
        print(f"{name}: .text size {size} raw-sha256 {raw} "
              f"disasm-sha256 {dis}")
    if results[0] == results[1]:
        print("identical .text")
        return 0
    labels = ("size", "raw bytes", "disassembly")
    differ = [lab for lab, a, b in zip(labels, *results) if a != b]
    print("DIFFERENT .text: " + ", ".join(differ))
    return 1


if __name__ == "__main__":
    sys.exit(main())
