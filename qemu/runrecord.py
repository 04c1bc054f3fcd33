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

derive() turns that directory into the record, and the run writes runtime.json with
derive() itself, after each variant; a test derives it again from the committed files
and compares the bytes.  So no record says what its log does not.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from classify import evidence as rt
from qemu import parse

RUN_FILE = "run.json"
RUN_SCHEMA = "sem2mutex-runtime-run-1"


def artifacts_dir(record: Path) -> Path:
    """Where the artifacts of a runtime.json live."""
    return record.parent / "runtime"


def parse_report_dict(r: parse.Report) -> dict:
    return {"kind": r.kind, "title": r.title, "frames": list(r.frames), "body": list(r.body),
            "locks": [{"name": lk.name, "lock_class": lk.lock_class} for lk in r.locks]}


def log_boot(name: str, variant: str, marked: frozenset[str], text: str,
             scenario: str = "") -> rt.Boot:
    """One boot's evidence from its console log: lockdep classes, reports, verdict."""
    parsed = parse.parse_log(text)
    return rt.Boot(name, variant, marked, rt.lockdep_classes(parse.clean_lines(text)),
                   [parse_report_dict(r) for r in parsed.reports], verdict=parsed.verdict,
                   scenario=scenario or name)


def variant_records(variants) -> dict[str, dict]:
    """What each variant marks: trust the ids its marking committed and those it could
    not mark (why); an unmark:<id> the id it leaves unmarked, or why it was not made.
    variants: objects with name, marked, not_marked, refused (qemu.variants.Variant)."""
    out: dict[str, dict] = {}
    for v in variants:
        if not v.name.startswith("unmark:"):       # trust (or triage's series)
            out[v.name] = {"marked": sorted(v.marked), "not_marked": dict(v.not_marked)}
        else:
            out[v.name] = {"unmarks": v.name.split(":", 1)[1]}
            if v.refused:
                out[v.name]["not_made"] = v.refused
    return out


def record_data(audit: dict, version: str, marks: list[str], boots: list[rt.Boot],
                built: set[str], variants: dict[str, dict], config: str) -> dict:
    """The stable record of the boots (no times): what runtime.json holds, and what
    `python3 -m qemu triage --record` writes for one log."""
    index = rt.build_index(audit["semaphores"])
    records = rt.runtime_records(audit["semaphores"], boots, built)
    out_boots = {}
    for b in boots:
        out_boots[b.name] = {
            "scenario": b.scenario or b.name, "variant": b.variant, "verdict": b.verdict,
            "reports": [{"kind": r["kind"], "title": r["title"],
                         "ids": rt.report_ids(r, index)} for r in b.reports],
            "build_errors": [ln for _, ln in rt.build_failures(b, index)]}
    return {"schema": rt.SCHEMA, "kernel_version": version, "config": config,
            "trust_marks": sorted(marks), "boots": out_boots, "counts": rt.counts(records),
            "semaphores": records, "variants": variants}


def marked_in(variants: dict[str, dict], variant: str) -> frozenset[str]:
    """The ids declared struct arch_semaphore in a variant's kernel (run.json)."""
    trust = frozenset(variants.get("trust", {}).get("marked", []))
    return trust - {variant[len("unmark:"):]} if variant.startswith("unmark:") else trust


def boot_from(entry: dict, variants: dict[str, dict], directory: Path) -> rt.Boot:
    """One boot of run.json, read from its artifact."""
    name, variant = entry["name"], entry["variant"]
    marked = marked_in(variants, variant)
    if "log" in entry:
        text = (directory / entry["log"]).read_text(errors="replace")
        return log_boot(name, variant, marked, text, entry["scenario"])
    if "build_errors" in entry:
        lines = (directory / entry["build_errors"]).read_text().splitlines()
        return rt.Boot(name, variant, marked, build_errors=lines, verdict="not_built",
                       scenario=entry["scenario"])
    return rt.Boot(name, variant, marked, verdict="not_made", scenario=entry["scenario"])


def derive(audit: dict, directory: Path) -> dict:
    """The runtime record, from the artifacts in directory alone (and the audit)."""
    run = json.loads((directory / RUN_FILE).read_text())
    if run.get("schema") != RUN_SCHEMA:
        raise ValueError(f"{directory / RUN_FILE}: schema {run.get('schema')!r}, "
                         f"expected {RUN_SCHEMA}")
    boots = [boot_from(e, run["variants"], directory) for e in run["boots"]]
    return record_data(audit, run["kernel_version"], run["trust_marks"], boots,
                        set(run["built"]), run["variants"], run["config"])


def dumps_record(data: dict) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


class Artifacts:
    """The artifacts of one run, written as the run goes: start() empties the directory
    of an earlier run's files, add_*() put each boot's evidence in, write() the run."""

    def __init__(self, directory: Path, run: dict) -> None:
        self.directory = directory
        self.run = {"schema": RUN_SCHEMA, **run, "boots": []}

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        for p in self.directory.iterdir():
            if p.is_file() and (p.suffix == ".log" or p.name.endswith(".build.txt")
                                or p.name == RUN_FILE):
                p.unlink()

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

    def write(self, variants: dict[str, dict], built: set[str]) -> None:
        self.run.update(variants=variants, built=sorted(built))
        (self.directory / RUN_FILE).write_text(json.dumps(self.run, indent=1,
                                                          sort_keys=True) + "\n")
