"""`python3 -m classify patches`: generate the series, verify them, and record the
status of each semaphore beside the audit.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from classify.convert.select import Outcome, PatchError, under
from classify.convert.series import SENDING, Series, fresh_worktree, generate, read_series
from classify.inputs import (InputError, check_patches, load_audit, load_json,
                             refuse_committed, shown)
from classify.paths import DEFAULT_CACHE, default_out
from classify.records.patches import PATCHES_SCHEMA, PatchRecord
from classify.versions import build_dir_for

# the build the records are of: a file x86_64 leaves out names its own
CONFIG_NAME = "allmodconfig: x86_64, or the architecture named"


def stable_record(outcome: Outcome, verified: dict | None) -> PatchRecord:
    """What the audit report shows for a semaphore: no times, no dates."""
    from classify.convert.verify import status_of
    rec: PatchRecord = {"status": outcome.status, "why": outcome.why,
                        "series": outcome.series, "patch": outcome.patch,
                        **({"hand": outcome.hand} if outcome.hand else {})}
    if verified is not None:
        rec["verify"] = status_of(verified)
        rec["apply"] = verified.get("apply", "")
        rec["build"] = {f: (b["after"]["status"]
                            + (f" on {b['arch']}" if b.get("arch", "x86_64") != "x86_64"
                               else "")
                            + (f": {b['after']['why']}" if b["after"]["why"] else ""))
                        for f, b in sorted(verified.get("build", {}).items())}
        cp = verified.get("checkpatch") or {}
        rec["checkpatch"] = {k: cp[k] for k in ("errors", "warnings", "checks") if k in cp}
        rec["new_sparse"] = verified.get("new_sparse", [])
        rec["problems"] = verified.get("problems", [])
        rec["not_built"] = verified.get("not_built", [])
        rec["testing"] = verified.get("testing", "")
    return rec


def convertible_ids(audit: dict) -> set[str]:
    """The ids the audit classes mutex or completion: a record of any other is
    stale, whichever run wrote it."""
    return {s["id"] for s in audit["semaphores"] if s["class"] in ("mutex", "completion")}


def check_selection(audit: dict, audit_path: Path, subsys: str | None,
                    ids: list[str]) -> None:
    """ID= and SUBSYS= name what the audit has: a typo is a user error (one line, exit
    2) before anything is made, not a run that makes nothing."""
    sems = audit["semaphores"]
    known = {s["id"] for s in sems}
    unknown = [i for i in ids if i not in known]
    if unknown:
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        example = f", e.g. {sorted(known)[0]}" if known else ""
        raise InputError(f"--id {unknown[0]}{more}: no semaphore with this id in "
                         f"{shown(audit_path)} (ID= takes the audit's ids{example})")
    if subsys is not None and not any(under(s, subsys) for s in sems):
        raise InputError(f"--subsys {subsys}: no semaphore of {shown(audit_path)} is "
                         "declared or used under this path")


def merge_json(path: Path, updates: dict[str, dict], extra: dict,
               keep: set[str] | None = None) -> dict:
    """Update the per-semaphore records of a JSON file (earlier runs' records of
    other semaphores are kept, but for those keep does not name)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        data = {}
    if data.get("kernel_version") not in (None, extra.get("kernel_version")):
        data = {}   # another tree's records: none of them is this run's
    data.update(extra)
    sems = data.setdefault("semaphores", {})
    sems.update(updates)
    data["semaphores"] = dict(sorted((k, v) for k, v in sems.items()
                                     if keep is None or k in keep))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return data


def verify_all(kernel: Path, series: list[Series], build_dir: Path, vtree: Path,
               logs: Path, sems: dict[str, dict] | None = None,
               booted: Path | None = None) -> tuple[dict[str, dict], dict]:
    """Verify every series (each from the kernel's HEAD), then write into each
    patch what was tested (sems: the audit's records by id, for the boots that
    ran them; booted: the runtime record's artifacts, with the patches its
    kernels booted); ({id: record}, timings)."""
    from classify.crossbuild import Builds
    from classify.convert.testing import finish_series
    from classify.convert.verify import verify_series
    records: dict[str, dict] = {}
    timings = {"prepare_seconds": 0.0, "verify_seconds": 0.0}
    todo = [s for s in series if any(o.status == "converted" for o in s.outcomes)]
    if not todo:
        return records, timings
    started = time.monotonic()
    tree = fresh_worktree(kernel, vtree)
    # x86_64 now; another architecture's directory the first time a file needs it
    builds = Builds(tree, build_dir)
    builds.native()
    for s in todo:
        tree = fresh_worktree(kernel, vtree)
        done = verify_series(tree, builds, s.dir, logs)
        finish_series(tree, s.dir, done, sems or {}, booted)
        records.update(done)
    timings["prepare_seconds"] = round(sum(builds.seconds.values()), 1)
    timings["verify_seconds"] = round(time.monotonic() - started, 1)
    return records, timings


def _print_outcomes(outcomes: list[Outcome], records: dict[str, dict]) -> None:
    from classify.convert.verify import status_of
    for o in outcomes:
        if o.status == "converted":
            rec = records.get(o.id)
            extra = ""
            if rec is not None:
                extra = f"; {status_of(rec)}"
                if rec.get("problems"):
                    extra += ": " + "; ".join(rec["problems"])
                if rec.get("not_built"):
                    extra += "; " + "; ".join(rec["not_built"])
            print(f"patches: {o.id}: {o.cls or 'converted'} -> {o.series}/{o.patch}{extra}")
        else:
            print(f"patches: {o.id}: {o.status}: " + "; ".join(o.why[:3])
                  + (f" (+{len(o.why) - 3} more)" if len(o.why) > 3 else ""))


def _generate_or_read(args, tree, audit: dict, out: Path, timings: dict
                      ) -> tuple[list[Series], list[Outcome]]:
    if args.verify_only:
        series = read_series(out, audit.get("kernel_version"))
        if not series:
            raise PatchError(f"{out}: no series of Linux {audit.get('kernel_version')} to "
                             "verify: run `make patches` first")
        return series, []
    result = generate(tree.path, audit, out, out.parent / "trees" / "patches",
                      args.subsys, args.id, signoff=None if args.no_signoff else True)
    timings["generate_seconds"] = round(result.elapsed, 1)
    return result.series, result.skipped


def run_patches(args) -> int:
    """Generate (and verify) the series under --out; everything is written in
    the work area (out/verify.json, out/patches.json).  --record instead copies
    out/patches.json beside the audit and re-renders the audit report: the one
    way the committed reports change (`make reports`)."""
    from classify.tree import check_kernel_tree
    tree = check_kernel_tree(args.kernel)
    audit_path = args.audit or default_out(tree.path, tree.version) / "audit.json"
    out = Path(args.out).resolve()
    if args.record:
        return record_reports(tree, audit_path, out, not args.no_report)
    audit = load_audit(audit_path, "--audit" if args.audit else "audit")
    check_selection(audit, audit_path, args.subsys, args.id)
    timings: dict[str, float] = {}
    series, skipped = _generate_or_read(args, tree, audit, out, timings)
    outcomes = [o for s in series for o in s.outcomes] + skipped
    records: dict[str, dict] = {}
    if not args.no_verify:
        build_dir = args.build_dir or build_dir_for("allmodconfig", tree.version)
        records, vt = verify_all(tree.path, series, Path(build_dir).resolve(),
                                 out.parent / "trees" / "verify", out / "logs",
                                 {s["id"]: s for s in audit.get("semaphores", [])},
                                 # the runtime record's artifacts (qemu.runrecord)
                                 audit_path.parent / "runtime")
        timings.update(vt)
    _print_outcomes(outcomes, records)
    full = {o.id: {**o.to_json(), "verification": records.get(o.id)} for o in outcomes}
    merge_json(out / "verify.json", full, {"kernel_version": audit.get("kernel_version"),
                                           "kernel": str(tree.path), "timings": timings,
                                           "config": CONFIG_NAME})
    stable = {o.id: stable_record(o, records.get(o.id)) for o in outcomes
              if not o.id.startswith("SUBSYS=")}
    merge_json(out / "patches.json", stable,
               {"schema": PATCHES_SCHEMA, "kernel_version": audit.get("kernel_version"),
                "config": CONFIG_NAME})
    n_conv = sum(o.status == "converted" for o in outcomes)
    n_ref = sum(o.status == "refused" for o in outcomes)
    # select() refuses some before any conversion: they are among `skipped` too
    n_skip = sum(o.status == "skipped" for o in outcomes)
    n_patches = len({(o.series, o.patch) for o in outcomes if o.status == "converted"})
    print(f"patches: {n_conv} semaphore(s) in {n_patches} patch(es) in "
          f"{sum(bool(s.patches) for s in series)} "
          f"series under {out}; {n_ref} refused; {n_skip} skipped")
    if any((s.dir / SENDING).is_file() for s in series):
        print(f"patches: before sending a series, read its {SENDING}: where it goes, "
              "and the evidence of each patch")
    if records:
        from classify.convert.verify import status_of
        counts: dict[str, int] = {}
        for r in records.values():
            counts[status_of(r)] = counts.get(status_of(r), 0) + 1
        print("patches: verification: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
              + f" (records in {out / 'verify.json'})")
    print("patches: " + ", ".join(f"{k} {v}" for k, v in timings.items()))
    print(f"patches: status in {out / 'patches.json'}; `make reports` copies it "
          f"to {audit_path.parent}")
    return 0 if n_conv else 1


def record_reports(tree, audit_path: Path, out: Path, rerender: bool) -> int:
    """out/patches.json (what `make patches` recorded) into the audit's directory,
    then the audit report re-rendered with it.  Only the records of the semaphores
    the audit classes mutex or completion are kept; the others are named."""
    audit = load_audit(audit_path, "audit")
    dest = refuse_committed(audit_path.parent / "patches.json", "patch status",
                            allowed=default_out(tree.path, tree.version) / "patches.json")
    if not (out / "patches.json").is_file():
        raise PatchError(f"{out / 'patches.json'}: no patch records: run `make patches` "
                         "first")
    stable = load_json(out / "patches.json", "patch records", "a patches.json")
    check_patches(stable, f"patch records {out / 'patches.json'}")
    if stable["kernel_version"] != audit["kernel_version"]:
        raise InputError(f"patch records {out / 'patches.json'}: made for Linux "
                         f"{stable['kernel_version']}, but {shown(audit_path)} is of Linux "
                         f"{audit['kernel_version']}: run `make patches` on this tree first")
    sems = stable.pop("semaphores")
    keep = convertible_ids(audit)
    stale = sorted(set(sems) - keep)
    if stale:
        print(f"patches: left out {len(stale)} record(s) of semaphores {shown(audit_path)} "
              "does not class mutex or completion: " + ", ".join(stale[:5])
              + (f" (+{len(stale) - 5} more)" if len(stale) > 5 else ""))
    data = merge_json(dest, sems, stable, keep=keep)
    print(f"patches: wrote {audit_path.parent / 'patches.json'} "
          f"({len(data['semaphores'])} record(s))")
    if rerender and audit_path.is_file():
        rerender_report(tree.path, tree.version, audit_path.parent, data, DEFAULT_CACHE)
    return 0


def rerender_report(kernel: Path, version: str, out_dir: Path, patches: dict,
                    cache: Path) -> None:
    """audit.json/.md/.html again, now with each semaphore's patch status (the
    audit comes from the warm cache: seconds)."""
    from classify.audit import run_audit
    from classify.report import load_runtime, write_all
    audit = run_audit(kernel, cache, version=version)
    for p in write_all(audit, out_dir, patches, load_runtime(out_dir / "runtime.json")):
        print(f"patches: wrote {p}")
