"""make bench PARTS=text: the .text the conversion patches save (or cost), object by object.

The seed claimed that switching every mutex-like semaphore to a mutex saved 25,051
bytes of .text (0.76% of a 2.6.15 i386 vmlinux).  On 6.1 the conversions are the
patches `make patches` wrote into work/patches/<subsystem>/; this part measures them:

1. configure once, in a persistent O= directory (work/build/text-allmodconfig-nodebug,
   ccache): x86_64 ``allmodconfig`` with ``KCONFIG_ALLCONFIG`` forcing off the
   sanitizers, coverage, lock debugging and the other debug options that add code
   (``NODEBUG``), then check that every one of them really is off in .config
   (qemu/config's "Missing: ..." check).  allmodconfig builds every touched file that
   x86_64 can build (COMPILE_TEST stays on); lock debugging would turn mutex_lock()
   and down() into other code and bias the comparison;
2. per series, in order, in a worktree of the kernel reset to its HEAD
   (work/trees/text): the objects of every .c file the patch touches, and of every .c
   file including a header it touches (the files classify/verify.py builds), are
   compiled before ``git am`` of the patch and after it, without sparse;
3. per object, the sum of its ``.text*`` sections (``size -A``): before, after, delta.

An object that does not build here (another architecture, a file that does not
compile in this tree, a Kconfig symbol allmodconfig leaves off) is listed with the
reason, never dropped.  Totals are per class (mutex, completion) over the distinct
objects: first "before" against last "after".  The pure helpers (``parse_size``,
``text_bytes``, ``totals``, ``text_claim``, ``markdown``) are tested without a
compiler.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from classify import kbuild
from classify.convert.series import fresh_worktree
from classify.convert.verify import files_to_build
from classify.kbuild import compile_file
from classify.paths import BUILD_ROOT, PATCHES_DIR, TREES_DIR, WORK_DIR, default_out
from classify.tree import check_kernel_tree, git_am

log = logging.getLogger("sem2mutex.bench.text")

BUILD_DIR = BUILD_ROOT / "text-allmodconfig-nodebug"
WORKTREE = TREES_DIR / "text"
LOG_DIR = WORK_DIR / "bench" / "text-logs"

BASE_CONFIG = "allmodconfig"
# Forced off through KCONFIG_ALLCONFIG, and checked after the configuration.  What
# x86_64 6.1 allmodconfig turns on that changes the code of an ordinary driver:
# compiler instrumentation (sanitizers, coverage), lock debugging (mutex_lock() and
# down() become other code), the irq/preempt tracers that select TRACE_IRQFLAGS,
# inline debug checks (lists, objects, VM, preempt counts, scatterlists) and the
# debug options that change code generation.  Hardening stays as allmodconfig sets
# it (FORTIFY_SOURCE, STACKPROTECTOR_STRONG, INIT_STACK_ALL_PATTERN,
# ZERO_CALL_USED_REGS, RETPOLINE, RETHUNK, IBT), and so does ftrace.
NODEBUG: dict[str, str] = {s: "n" for s in (
    # sanitizers and coverage
    "CONFIG_KASAN", "CONFIG_KCSAN", "CONFIG_KMSAN", "CONFIG_UBSAN", "CONFIG_KCOV",
    "CONFIG_GCOV_KERNEL",
    # lock debugging
    "CONFIG_PROVE_LOCKING", "CONFIG_DEBUG_LOCK_ALLOC", "CONFIG_LOCK_STAT",
    "CONFIG_LOCKDEP", "CONFIG_DEBUG_LOCKDEP", "CONFIG_DEBUG_MUTEXES",
    "CONFIG_DEBUG_RT_MUTEXES", "CONFIG_DEBUG_RWSEMS", "CONFIG_DEBUG_WW_MUTEX_SLOWPATH",
    "CONFIG_DEBUG_SPINLOCK", "CONFIG_DEBUG_ATOMIC_SLEEP", "CONFIG_PROVE_RAW_LOCK_NESTING",
    "CONFIG_DEBUG_LOCKING_API_SELFTESTS", "CONFIG_LOCK_TORTURE_TEST",
    "CONFIG_WW_MUTEX_SELFTEST",
    # irq-flag tracing and the preempt/irq debug checks
    "CONFIG_IRQSOFF_TRACER", "CONFIG_PREEMPT_TRACER", "CONFIG_TRACE_IRQFLAGS",
    "CONFIG_DEBUG_IRQFLAGS", "CONFIG_DEBUG_PREEMPT",
    # inline debug checks, and what selects them (BUG_ON_DATA_CORRUPTION selects
    # DEBUG_LIST, DRM_I915_SW_FENCE_DEBUG_OBJECTS selects DEBUG_OBJECTS)
    "CONFIG_DEBUG_LIST", "CONFIG_BUG_ON_DATA_CORRUPTION", "CONFIG_DEBUG_OBJECTS",
    "CONFIG_DRM_I915_SW_FENCE_DEBUG_OBJECTS", "CONFIG_DEBUG_VM", "CONFIG_DEBUG_SG",
    # debug options that change code generation itself: every function aligned to
    # 64 bytes, -fno-inline-functions-called-once, no block reordering or cloning
    "CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B", "CONFIG_DEBUG_SECTION_MISMATCH",
    "CONFIG_READABLE_ASM")}
CONFIG_NAME = (f"x86_64 {BASE_CONFIG} with KCONFIG_ALLCONFIG forcing off the "
               "sanitizers, coverage, lock debugging, inline debug checks and the debug "
               "options that change code generation (hardening and ftrace as "
               f"{BASE_CONFIG} sets them)")

# The seed's figures (001-cover-generic-mutex-subsystem.txt: `size` of vmlinux).
SEED_TEXT = {"semaphore": 3280380, "mutex": 3255329, "saved": 25051}
_SUBJECT_CLASS = re.compile(r"^Subject: .*? to a (mutex|completion)\b", re.M)


class TextError(Exception):
    """Nothing to measure (no patches), or the configuration failed."""


# ----------------------------------------------------------------------- pure helpers

def parse_size(output: str) -> dict[str, dict[str, int]]:
    """`size -A` (sysv format) output: {file: {section: bytes}}.  One block per file,
    each starting with "FILE  :" and ending with its Total line."""
    out: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in output.splitlines():
        if m := re.match(r"^(\S.*?)\s+:\s*$", line):
            current = out.setdefault(m.group(1), {})
            continue
        fields = line.split()
        if current is None or len(fields) < 2 or fields[0] in ("section", "Total"):
            continue
        try:
            current[fields[0]] = current.get(fields[0], 0) + int(fields[1])
        except ValueError:
            continue
    return out


def text_bytes(sections: dict[str, int]) -> int:
    """The code of an object: its `.text*` sections (.text, .text.unlikely,
    .text.startup, ...), not .init.text/.exit.text and not .rela.text."""
    return sum(n for name, n in sections.items()
               if name == ".text" or name.startswith(".text."))


_OBJDUMP_SYM = re.compile(r"^[0-9a-f]+ (.{7}) (\S+)\t([0-9a-f]+) (.*)$")


def function_bytes(objdump_t: str) -> int:
    """The code of an object without the padding between functions: the sizes of
    its function symbols (flag F) in `.text*` sections, from `objdump -t`.  x86_64
    aligns functions to 16 bytes, so a change of a few bytes inside a function
    often leaves the section size as it was; this figure shows it."""
    total = 0
    for line in objdump_t.splitlines():
        m = _OBJDUMP_SYM.match(line)
        if m and m.group(1)[6] == "F" and (m.group(2) == ".text"
                                           or m.group(2).startswith(".text.")):
            total += int(m.group(3), 16)
    return total


def class_of(audit_classes: dict[str, str], sem_id: str, patch_text: str) -> str:
    """The audit's class of a semaphore, else what the patch's subject says."""
    if audit_classes.get(sem_id) in ("mutex", "completion"):
        return audit_classes[sem_id]
    m = _SUBJECT_CLASS.search(patch_text)
    return m.group(1) if m else "unknown"


@dataclass
class ObjectText:
    """One object at one point of the series: its .text, or why it has none."""
    status: str                 # ok | failed | not built
    text: int = 0
    why: str = ""
    functions: int | None = None    # function_bytes(), when objdump could tell


def object_entry(before: ObjectText, after: ObjectText | None) -> tuple[dict | None, str]:
    """({before, after, delta}, "") when both sides built, else (None, the reason)."""
    if before.status != "ok":
        return None, before.why
    if after is None:
        return None, "not measured after the patch (it does not apply)"
    if after.status != "ok":
        return None, f"builds before the patch, not after it: {after.why}"
    entry = {"before": before.text, "after": after.text, "delta": after.text - before.text}
    if before.functions is not None and after.functions is not None:
        entry["functions"] = {"before": before.functions, "after": after.functions,
                              "delta": after.functions - before.functions}
    return entry, ""


def totals(records: dict[str, dict], cls: str) -> dict:
    """The whole effect of the class's patches on the objects they touch: over the
    distinct objects, the .text before the first patch touching each and after the
    last one (patches of one series are applied in order, so an object's "after"
    of one patch is its "before" of the next)."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    ffirst: dict[str, int] = {}
    flast: dict[str, int] = {}
    n = 0
    not_built: set[str] = set()
    patch_sum = 0
    for sem_id in sorted(records, key=lambda i: (records[i]["series"], records[i]["patch"])):
        rec = records[sem_id]
        if rec["class"] != cls:
            continue
        n += 1
        for obj, e in sorted(rec["objects"].items()):
            first.setdefault(obj, e["before"])
            last[obj] = e["after"]
            if "functions" in e:
                ffirst.setdefault(obj, e["functions"]["before"])
                flast[obj] = e["functions"]["after"]
            patch_sum += e["delta"]
        not_built |= set(rec["not_built"])
    before, after = sum(first.values()), sum(last.values())
    funcs = {"before": sum(ffirst.values()), "after": sum(flast.values()),
             "delta": sum(flast.values()) - sum(ffirst.values())} if ffirst else None
    return {"semaphores": n, "functions": funcs, "objects": len(first), "before": before, "after": after,
            "delta": after - before, "sum_of_patch_deltas": patch_sum,
            "percent": round(100.0 * (after - before) / before, 3) if before else None,
            "not_built": len(not_built - set(first))}


def text_claim(text: dict | None, seed_saved: int = SEED_TEXT["saved"]) -> dict:
    """The seed's .text claim against the mutex-class total: holds when the
    conversions save at least the seed's share of .text, partly when they save less,
    does not hold when they cost some or change nothing."""
    seed_pct = 100.0 * seed_saved / SEED_TEXT["semaphore"]
    claim = {"claim": "converting the mutex-like semaphores saves .text",
             "seed": f"{seed_saved} bytes ({seed_pct:.2f}% of vmlinux .text, every "
                     "mutex-like semaphore of 2.6.15, i386)"}
    tot = ((text or {}).get("totals") or {}).get("mutex")
    if not tot or not tot.get("objects"):
        return {**claim, "measured": "not measured (make patches, then make bench "
                                     "PARTS=text)", "verdict": "not measured"}
    saved = -tot["delta"]
    word = "saved" if saved > 0 else "added" if saved < 0 else "changed"
    amount = f"{abs(saved)} bytes {word}" if saved else "no byte changed"
    claim["measured"] = (f"{amount} ({abs(tot['percent'] or 0):.2f}% of the "
                         f"{tot['before']} bytes of .text of the {tot['objects']} "
                         f"objects touched"
                         + (f"; function bytes {_delta(tot['functions']['delta'])}"
                            if tot.get("functions") else "")
                         + f"), {tot['semaphores']} semaphores, "
                         f"{text.get('config', {}).get('name', BASE_CONFIG)}")
    # the seed's share is of the whole vmlinux, ours of the touched objects only (a
    # larger share for the same bytes): "holds" needs at least the seed's share
    share = abs(tot["percent"] or 0)
    claim["verdict"] = ("holds" if saved > 0 and share >= seed_pct else
                        "partly" if saved > 0 else "does not hold")
    return claim


def _n(value: int) -> str:
    return f"{value:,}"


def _delta(value: int) -> str:
    return f"{value:+,}" if value else "0"


def markdown(text: dict) -> list[str]:
    """The code-size tables of reports/bench.md: every object of the mutex class,
    one row per semaphore for the completion class, the totals and what did not
    build."""
    recs = text.get("semaphores") or {}
    tots = text.get("totals") or {}
    cfg = text.get("config") or {}
    out = ["", "Code size: `.text*` of each object a conversion patch touches, before and "
           "after the patch (`size -A`; series applied in order with `git am`). Config: "
           f"{cfg.get('name', BASE_CONFIG)}: "
           + ", ".join(f"`{s}`" for s in sorted(cfg.get("forced_off", []))) + ".", ""]

    def ordered(cls: str) -> list[str]:
        return sorted((i for i in recs if recs[i]["class"] == cls),
                      key=lambda i: (recs[i]["series"], recs[i]["patch"]))

    def fdelta(e: dict) -> str:
        return _delta(e["functions"]["delta"]) if e.get("functions") else "-"

    out += ["| mutex-class semaphore | object | .text before | after | delta | "
            "function bytes delta |", "|---|---|---:|---:|---:|---:|"]
    for sem_id in ordered("mutex"):
        for obj, e in sorted(recs[sem_id]["objects"].items()):
            out.append(f"| `{sem_id}` | {obj} | {_n(e['before'])} | {_n(e['after'])} | "
                       f"{_delta(e['delta'])} | {fdelta(e)} |")
    t = tots.get("mutex")
    if t:
        out.append(f"| **total**, {t['semaphores']} semaphores | {t['objects']} objects | "
                   f"{_n(t['before'])} | {_n(t['after'])} | **{_delta(t['delta'])}** "
                   f"({t['percent'] or 0:+.3f}%) | {fdelta(t)} |")
    comp = ordered("completion")
    if comp:
        out += ["", "| completion-class semaphore | objects | .text before | after | delta |",
                "|---|---:|---:|---:|---:|"]
        for sem_id in comp:
            objs = recs[sem_id]["objects"]
            b = sum(e["before"] for e in objs.values())
            a = sum(e["after"] for e in objs.values())
            out.append(f"| `{sem_id}` | {len(objs)} | {_n(b)} | {_n(a)} | {_delta(a - b)} |")
        t = tots.get("completion")
        if t:
            out.append(f"| **total**, {t['semaphores']} semaphores | {t['objects']} | "
                       f"{_n(t['before'])} | {_n(t['after'])} | **{_delta(t['delta'])}** "
                       f"({t['percent'] or 0:+.3f}%) |")
    if any(e.get("functions") for r in recs.values() for e in r["objects"].values()):
        out += ["", "Function bytes: the sizes of the function symbols in `.text*` "
                "(`objdump -t`), without the padding between functions: x86_64 aligns "
                "functions to 16 bytes, so a change of a few bytes inside a function "
                "often leaves the section size as it was."]
    missing = [(obj, why, sem_id) for sem_id in sorted(recs)
               for obj, why in sorted(recs[sem_id]["not_built"].items())]
    if missing:
        out += ["", "Objects not measured (they do not build here):", ""]
        out += [f"- {obj} ({recs[s]['class']}, `{s}`): {why}" for obj, why, s in missing]
    for cls, t in sorted(tots.items()):
        if t.get("sum_of_patch_deltas", t["delta"]) != t["delta"]:
            out.append(f"\nNote: the {cls} patches' own deltas add up to "
                       f"{_delta(t['sum_of_patch_deltas'])} bytes, the objects' first "
                       f"before and last after to {_delta(t['delta'])}: a patch changed "
                       "an object it does not list.")
    return out


# ------------------------------------------------------------------------- measuring

def ensure_config(tree: Path, build_dir: Path) -> dict:
    """allmodconfig + NODEBUG in build_dir, configured once (again when NODEBUG
    changes) and prepared; every forced option checked in .config."""
    try:
        done = kbuild.ensure_config(tree, build_dir, NODEBUG)
    except kbuild.KbuildError as err:
        raise TextError(str(err)) from None
    return {"name": CONFIG_NAME, "base": done.base, "arch": "x86_64",
            "forced_off": sorted(NODEBUG), "hash": done.hash, "build_dir": str(build_dir),
            "seconds": done.seconds}


def _short_error(errors: list[str], tree: Path) -> str:
    for line in errors:
        if "error:" in line:
            line = line.replace(str(tree).rstrip("/") + "/", "")
            return "does not compile here: " + line.strip()[:200]
    return "does not compile here: " + (errors[0].strip()[:200] if errors else "make failed")


def object_text(tree: Path, build_dir: Path, rel: str, logfile: Path) -> ObjectText:
    """Compile rel's object (no sparse) and read its .text."""
    c = compile_file(tree, build_dir, rel, logfile, sparse=False, check_config=False)
    if c.status == "failed":
        return ObjectText("failed", why=_short_error(c.errors, tree))
    if c.status != "ok":
        return ObjectText(c.status, why=c.why)
    obj = build_dir / (rel[:-2] + ".o")
    res = subprocess.run(["size", "-A", "-d", str(obj)], capture_output=True, text=True)
    if res.returncode != 0:
        return ObjectText("failed", why=f"size -A failed: {res.stderr.strip()[:200]}")
    sections = next(iter(parse_size(res.stdout).values()), {})
    dump = subprocess.run(["objdump", "-t", str(obj)], capture_output=True, text=True)
    return ObjectText("ok", text_bytes(sections),
                      functions=function_bytes(dump.stdout) if dump.returncode == 0 else None)


def measure_patch(tree: Path, build_dir: Path, patch: Path, logs: Path) -> dict:
    """The .text of each object patch touches, before and after `git am` of it."""
    _, _, cfiles = files_to_build(tree, patch.read_text(errors="replace"))
    stem = patch.name[:4]
    before = {f: object_text(tree, build_dir, f, logs / f"{stem}-before-{Path(f).name}.log")
              for f in cfiles}
    applied = git_am(tree, patch)
    after: dict[str, ObjectText] = {}
    if not applied:
        after = {f: object_text(tree, build_dir, f,
                                logs / f"{stem}-after-{Path(f).name}.log") for f in cfiles}
    record: dict = {"apply": f"does not apply: {applied}" if applied else "ok",
                    "objects": {}, "not_built": {}}
    for f in cfiles:
        entry, why = object_entry(before[f], after.get(f))
        obj = f[:-2] + ".o"
        if entry is None:
            record["not_built"][obj] = why
        else:
            record["objects"][obj] = entry
    record["delta"] = sum(e["delta"] for e in record["objects"].values())
    return record


def audit_classes(kernel: Path) -> dict[str, str]:
    tree = check_kernel_tree(kernel)
    try:
        audit = json.loads((default_out(tree.path, tree.version) / "audit.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return {s["id"]: s["class"] for s in audit.get("semaphores", [])}


def series_indexes(patches: Path) -> list[Path]:
    """work/patches/<slug>/series.json of every series, or a TextError saying to run
    `make patches` first."""
    indexes = sorted(patches.glob("*/series.json")) if patches.is_dir() else []
    if not indexes:
        raise TextError(f"{patches}: no conversion patches (no */series.json): run "
                        "`make patches` first")
    return indexes


def bench_text(kernel: Path, patches: Path = PATCHES_DIR, build_dir: Path = BUILD_DIR,
               worktree: Path = WORKTREE, logs: Path = LOG_DIR) -> dict:
    indexes = series_indexes(patches)
    classes = audit_classes(kernel)
    # the series with a mutex-class patch first: the seed's claim is about those
    indexes.sort(key=lambda i: (not any(
        classes.get(e["id"]) == "mutex"
        for e in json.loads(i.read_text()).get("patches", [])), i.parent.name))
    started = time.monotonic()
    tree = fresh_worktree(kernel, worktree)
    config = ensure_config(tree, build_dir)
    print(f"bench: text: config: {config['name']} (make {BASE_CONFIG} "
          f"KCONFIG_ALLCONFIG={build_dir / kbuild.FORCED_FILE}: "
          + ", ".join(f"{s}=n" for s in config["forced_off"])
          + f"; all checked in .config) in {build_dir}, {config['seconds']:.1f} s",
          file=sys.stderr, flush=True)
    records: dict[str, dict] = {}
    for index in indexes:
        series = json.loads(index.read_text())
        tree = fresh_worktree(kernel, worktree)
        for entry in series.get("patches", []):
            patch = index.parent / entry["patch"]
            text = patch.read_text(errors="replace") if patch.is_file() else ""
            rec = {"series": index.parent.name, "patch": entry["patch"],
                   "class": class_of(classes, entry["id"], text)}
            if not patch.is_file():
                rec.update(apply="patch file missing", objects={}, not_built={}, delta=0)
            else:
                t0 = time.monotonic()
                rec.update(measure_patch(tree, build_dir, patch, logs / index.parent.name))
                print(f"bench: text: {entry['id']} ({rec['class']}): "
                      f"{len(rec['objects'])} object(s), delta {_delta(rec['delta'])} "
                      f"bytes, {len(rec['not_built'])} not built "
                      f"({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)
            records[entry["id"]] = rec
    result = {"config": config, "patches": str(patches), "semaphores": records,
              "totals": {cls: totals(records, cls) for cls in ("completion", "mutex")
                         if any(r["class"] == cls for r in records.values())},
              "measure_seconds": round(time.monotonic() - started, 1)}
    for cls, t in sorted(result["totals"].items()):
        print(f"bench: text: {cls}: {t['semaphores']} semaphores, {t['objects']} objects, "
              f".text {t['before']} -> {t['after']} bytes ({_delta(t['delta'])}), "
              f"{t['not_built']} object(s) not built", file=sys.stderr, flush=True)
    return result
