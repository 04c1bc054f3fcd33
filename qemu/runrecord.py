"""The runtime set's records, derived from the artifacts committed with them.

`make boot-test SCENARIOS=runtime` leaves, beside `reports/linux-<version>/runtime.json`,
the directory `runtime/` that holds everything the record is made from:

    run.json              the run: kernel version, configuration, the trust marks, what
                          each variant marks (or why it was not made), the .c files of
                          the audit's semaphores the trust kernel compiled, and the
                          boots in order: {name, scenario, variant} and one of
                          "log" (a console log here), "build_errors" (the compiler's
                          error excerpt here), "not_made" (no kernel)
    <boot>.log            each boot's serial console, as the harness wrote it
    <variant>.build.txt   each variant that did not build: the compiler's error lines
                          (and gcc's "in expansion of macro" notes), paths relative to
                          the tree
    <patch>.patch         each convert:<id> variant's conversion patch, as booted

derive() turns that directory into the record, and the run writes runtime.json with
derive() itself, after each variant; a test derives it again from the committed files
and compares the bytes.  So no record says what its log does not.  After a change of
the parser or of the records, the committed record is derived again without a boot:

    python3 -m qemu.runrecord [--version 6.1.192]     # reports/linux-<v>/runtime.json

then `make audit` (audit.md shows the records) and `python3 -m classify.report.readme`
(the docs' runtime figures).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

from classify import runtime_records
from classify.paths import REPORTS_DIR
from classify.records.base import dumps
from classify.records.boot import Boot
from classify.records.runtime import RuntimeRecord, VariantRecord
from qemu import parse
from qemu.variants import CONVERT, UNMARK, variant_id

RUN_FILE = "run.json"
RUN_SCHEMA = "sem2mutex-runtime-run-1"


def artifacts_dir(record: Path) -> Path:
    """Where the artifacts of a runtime.json live."""
    return record.parent / "runtime"


def log_boot(name: str, variant: str, marked: frozenset[str], text: str,
             scenario: str = "") -> Boot:
    """One boot's evidence from its console log: lockdep classes, reports, verdict."""
    parsed = parse.parse_log(text)
    failed = [path for doc in parsed.ktap for path, st in doc.leaves() if st == "not ok"]
    return Boot(name, variant, marked, parse.lockdep_classes(parse.clean_lines(text)),
                parsed.reports, verdict=parsed.verdict, scenario=scenario or name,
                failed=failed)


def variant_records(variants) -> dict[str, VariantRecord]:
    """What each variant marks: trust the ids its marking committed and those it could
    not mark (why); an unmark:<id> the id it leaves unmarked, a convert:<id> the id
    it converts and its patch, or why it was not made.  variants: objects with name,
    marked, not_marked, refused, patch (qemu.variants.Variant)."""
    out: dict[str, VariantRecord] = {}
    for v in variants:
        sid = variant_id(v.name)
        if v.name.startswith(UNMARK):
            out[v.name] = VariantRecord(unmarks=sid, not_made=v.refused or None)
        elif v.name.startswith(CONVERT):
            out[v.name] = VariantRecord(converts=sid, patch=v.patch.name if v.patch else None,
                                        not_made=v.refused or None)
        else:                                     # trust (or triage's series)
            out[v.name] = VariantRecord(marked=sorted(v.marked), not_marked=dict(v.not_marked))
    return out


def marked_in(variants: dict[str, VariantRecord], variant: str) -> frozenset[str]:
    """The ids declared struct arch_semaphore in a variant's kernel (run.json):
    trust's, less the one an unmark: or convert: variant is about."""
    trust = variants.get("trust")
    marks = frozenset(trust.marked or []) if trust else frozenset()
    return marks - {variant_id(variant)}


_VARIANT = re.compile(r"Kernel command line:.*?\bs2m\.variant=(\S+)")


def logged_variant(text: str) -> str:
    """The variant a boot's command line names (s2m.variant=, Scenario.append());
    "" for a log of a run before it was named there."""
    m = _VARIANT.search(text)
    return m.group(1) if m else ""


def boot_from(entry: dict[str, str | bool], variants: dict[str, VariantRecord],
              directory: Path) -> Boot:
    """One boot of run.json, read from its artifact."""
    name, variant = entry["name"], entry["variant"]
    marked = marked_in(variants, variant)
    if "log" in entry:
        text = (directory / entry["log"]).read_text(errors="replace")
        said = logged_variant(text)
        if said and said != variant:
            raise ValueError(f"{directory / entry['log']}: the kernel booted says variant "
                             f"{said}, run.json says {variant}")
        return log_boot(name, variant, marked, text, entry["scenario"])
    if "build_errors" in entry:
        lines = (directory / entry["build_errors"]).read_text().splitlines()
        return Boot(name, variant, marked, build_errors=lines, verdict="not_built",
                    scenario=entry["scenario"])
    return Boot(name, variant, marked, verdict="not_made", scenario=entry["scenario"])


def derive(audit: dict, directory: Path) -> RuntimeRecord:
    """The runtime record, from the artifacts in directory alone (and audit.json's data)."""
    run = json.loads((directory / RUN_FILE).read_text())
    if run.get("schema") != RUN_SCHEMA:
        raise ValueError(f"{directory / RUN_FILE}: schema {run.get('schema')!r}, "
                         f"expected {RUN_SCHEMA}")
    variants = {name: VariantRecord.from_json(v, f"{directory / RUN_FILE}: variants.{name}")
                for name, v in run["variants"].items()}
    boots = [boot_from(e, variants, directory) for e in run["boots"]]
    return runtime_records.runtime_record(audit, run["kernel_version"], run["trust_marks"],
                                          boots, set(run["built"]), variants, run["config"])


class Artifacts:
    """The artifacts of one run, written as the run goes: start() empties the directory
    of an earlier run's files, add_*() put each boot's evidence in, write() the run."""

    def __init__(self, directory: Path, kernel_version: str, config: str,
                 trust_marks: list[str]) -> None:
        self.directory = directory
        self.run = {"schema": RUN_SCHEMA, "kernel_version": kernel_version, "config": config,
                    "trust_marks": sorted(trust_marks), "boots": []}

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        for p in self.directory.iterdir():
            if p.is_file() and (p.suffix in (".log", ".patch") or p.name.endswith(".build.txt")
                                or p.name == RUN_FILE):
                p.unlink()

    def add_patch(self, patch: Path) -> None:
        """A convert: variant's patch, beside the logs of its boots."""
        shutil.copyfile(patch, self.directory / patch.name)

    def add_log(self, name: str, scenario: str, variant: str, log: Path) -> None:
        dest = f"{name}.log"
        if log.is_file():
            shutil.copyfile(log, self.directory / dest)
        else:
            (self.directory / dest).write_text("")
        self.run["boots"].append({"name": name, "scenario": scenario, "variant": variant,
                                  "log": dest})

    def add_build_errors(self, name: str, scenario: str, variant: str, slug: str,
                         lines: list[str], tree: Path) -> None:
        dest = f"{slug}.build.txt"
        prefix = str(tree.resolve()) + "/"
        text = "".join(ln.replace(prefix, "").rstrip() + "\n" for ln in lines)
        (self.directory / dest).write_text(text or "build failed\n")
        self.run["boots"].append({"name": name, "scenario": scenario, "variant": variant,
                                  "build_errors": dest})

    def add_not_made(self, name: str, scenario: str, variant: str) -> None:
        self.run["boots"].append({"name": name, "scenario": scenario, "variant": variant,
                                  "not_made": True})

    def write(self, variants: dict[str, VariantRecord], built: set[str]) -> None:
        self.run.update(variants={n: v.to_json() for n, v in variants.items()},
                        built=sorted(built))
        (self.directory / RUN_FILE).write_text(dumps(self.run))


def main(argv: list[str] | None = None) -> int:
    """Derive a committed runtime.json again from the artifacts beside it."""
    p = argparse.ArgumentParser(prog="python3 -m qemu.runrecord",
                                description="runtime.json derived again from runtime/")
    p.add_argument("--version", default="6.1.192", help="kernel version of the reports")
    p.add_argument("--reports", type=Path, default=REPORTS_DIR)
    args = p.parse_args(argv)
    out = args.reports / f"linux-{args.version}" / "runtime.json"
    directory = artifacts_dir(out)
    if not (directory / RUN_FILE).is_file():
        print(f"runrecord: {directory / RUN_FILE}: no run recorded there", file=sys.stderr)
        return 2
    try:
        record = derive(json.loads((out.parent / "audit.json").read_text()), directory)
    except ValueError as err:       # a schema, or a log of another kernel than its boot's
        print(f"runrecord: {err}", file=sys.stderr)
        return 2
    old = out.read_text() if out.is_file() else ""
    out.write_text(record.dumps())
    print(f"runrecord: {out}: {'unchanged' if old == record.dumps() else 'written'}; "
          + ", ".join(f"{k} {v}" for k, v in record.counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
