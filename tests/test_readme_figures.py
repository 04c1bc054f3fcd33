"""The figures and examples of README.md and docs/ are what the committed reports hold.

A figure typed by hand drifts from the measurement it quotes.  Each test here reads a
table or an example output of the documents and compares it with the committed
artifact it comes from (reports/bench.json, reports/linux-*/audit.json, patches.json,
runtime.json, the truth file, the committed console logs), so that a new run without a
document update fails here; each has a negative control that shows a changed figure is
caught.  The runtime table of docs/runtime.md is checked by
tests/qemu/test_runtime_record.py, the full-kernel boots of docs/figures.md by
tests/qemu/test_full_kernel_logs.py.
"""

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from classify.evaluate import evaluate, load_truth, render

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
FIGURES = DOCS / "figures.md"
BENCH = ROOT / "reports" / "bench.json"
VERSIONS = ("6.1.192", "6.12.118")
USER_DOCS = [README, ROOT / "qemu" / "README.md", ROOT / "CONTRIBUTING.md",
             *sorted(DOCS.glob("*.md"))]


def report(version: str, name: str) -> dict:
    return json.loads((ROOT / "reports" / f"linux-{version}" / name).read_text())


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def table_after(text: str, marker: str) -> dict[str, list[str]]:
    """The first Markdown table after marker: first column -> the other cells."""
    lines = text.split(marker, 1)[1].splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("|"))
    rows = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        row = cells(line)
        if not set(row[0]) <= set("-: "):
            rows[row[0]] = row[1:]
    return rows


# -- the toolkit timings of docs/figures.md: reports/bench.json ---------------------------

def toolkit_rows(text: str) -> dict[str, str]:
    """The first column -> the second, for the table after "What the toolkit costs"."""
    return {k: v[0] for k, v in table_after(text, "What the toolkit costs").items()}


def median_range(summary: dict) -> str:
    return f"{summary['median']} s** ({summary['min']}–{summary['max']})"


def audit_row(summary: dict, cpu: dict) -> str:
    return (f"**{median_range(summary)}; {cpu['median']} s CPU "
            f"({cpu['min']}–{cpu['max']})")


def test_the_audit_rows_quote_the_bench():
    audit = json.loads(BENCH.read_text())["toolkit"]["audit"]
    rows = toolkit_rows(FIGURES.read_text())
    assert rows["`make audit`, cold (`FRESH=1`)"] == audit_row(audit["cold"],
                                                              audit["cold_cpu"])
    assert rows["`make audit`, warm"] == audit_row(audit["warm"], audit["warm_cpu"])


def test_the_kernel_rows_quote_the_bench():
    kernel = json.loads(BENCH.read_text())["toolkit"]["kernel"]
    rows = toolkit_rows(FIGURES.read_text())
    for kind, label in (("cold", "kernel (tinyconfig + FULL + lockdep) configure / build / "
                                 "boot, cold (no ccache)"),
                        ("warm", "the same, warm (nothing changed)")):
        got = [float(x) for x in re.findall(r"([\d.]+) s", rows[label])]
        want = [kernel[kind][step]["median"] for step in ("configure", "build", "boot")]
        # the figures round a time over 100 s to whole seconds
        assert len(got) == 3 and all(abs(g - w) < 0.5 for g, w in zip(got, want)), \
            (kind, got, want)


def test_a_changed_figure_is_caught():
    audit = json.loads(BENCH.read_text())["toolkit"]["audit"]
    bumped = dict(audit["cold"], median=audit["cold"]["median"] + 1)
    row = toolkit_rows(FIGURES.read_text())["`make audit`, cold (`FRESH=1`)"]
    assert row != audit_row(bumped, audit["cold_cpu"])


def test_the_boot_test_row_quotes_the_bench():
    boot = json.loads(BENCH.read_text())["toolkit"]["boot_test"]
    row = [line for line in FIGURES.read_text().splitlines()
           if line.startswith("| `make boot-test`, warm: the ")]
    assert len(row) == 1
    warm = boot["warm"]
    assert f"median of 5: **{median_range(warm)}, {boot['boots']} passed" in row[0]


# -- the conversion patch figures of docs/figures.md: reports/linux-*/patches.json --------

PATCH_BEGIN = "<!-- conversion patch figures"
PATCH_END = "<!-- end of the conversion patch figures -->"


def patch_table(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """The versions of the header and the rows of the one conversion patch table."""
    assert text.count(PATCH_BEGIN) == 1 and text.count(PATCH_END) == 1
    block = text.split(PATCH_BEGIN, 1)[1].split(PATCH_END, 1)[0]
    header = next(ln for ln in block.splitlines() if ln.startswith("|"))
    return cells(header)[1:], table_after(block, "\n")


def _per_patch(sems: dict) -> dict[tuple, dict]:
    """One record per patch (the semaphores of one patch share its checks)."""
    out = {}
    for rec in sems.values():
        if rec.get("patch"):
            out.setdefault((rec["series"], rec["patch"]), rec)
    return out


def _files(sems: dict) -> tuple[str, str]:
    status = {}
    for rec in sems.values():
        for path, st in rec.get("build", {}).items():
            status.setdefault(path, set()).add(st)
    built = [s for s in status.values() if any(x.startswith("ok") for x in s)]
    arches = sorted({x[len("ok on "):] for s in status.values() for x in s
                     if x.startswith("ok on ")})
    other = sum(any(x.startswith("ok on ") for x in s) for s in status.values())
    text = f"{len(built)}"
    if other:
        text += f", {other} of them on another architecture: " + ", ".join(arches)
    return text, str(len(status) - len(built))


def _not_built(sems: dict) -> str:
    out = []
    for sid, rec in sorted(sems.items()):
        if rec.get("status") == "converted" and rec.get("verify") == "not built":
            why = sorted({n.split("not built here: ", 1)[1] for n in rec.get("not_built", [])
                          if "not built here: " in n})
            out.append(f"`{sid.rsplit(':', 1)[1]}`: " + ", ".join(why))
    return "; ".join(out) or "none"


def _by_hand(sems: dict) -> str:
    hand = {sid.rsplit(":", 1)[1]: rec["hand"] for sid, rec in sems.items() if rec.get("hand")}
    if not hand:
        return "none"
    n = len(set(hand.values()))
    names = ", ".join(f"`{h}`" for h in sorted(hand))
    return f"{len(hand)} ({names}) in {n} patch" + ("es" if n > 1 else "")


def patch_figures(record: dict) -> dict[str, str]:
    """What each checked row of the table must say of one patches.json."""
    sems = record["semaphores"]
    patches = _per_patch(sems)
    check = [sum(r.get("checkpatch", {}).get(k, 0) for r in patches.values())
             for k in ("errors", "warnings", "checks")]
    built, unbuilt = _files(sems)
    return {
        "semaphores converted": str(sum(r["status"] == "converted" for r in sems.values())),
        "semaphores refused or skipped": str(sum(r["status"] != "converted"
                                                 for r in sems.values())),
        "patches": str(len(patches)),
        "series (MAINTAINERS entries)": str(len({s for s, _ in patches})),
        "semaphores verified": str(sum(r.get("verify") == "verified" for r in sems.values())),
        "semaphores not built on any architecture": _not_built(sems),
        "files compiled before and after, with sparse": built,
        "files no architecture builds": unbuilt,
        "converted by a patch written by hand": _by_hand(sems),
        "checkpatch `--strict`: errors, warnings, checks": ", ".join(map(str, check)),
        "new sparse warnings": str(sum(len(r.get("new_sparse", [])) for r in patches.values())),
    }


def patch_mismatches(text: str, records: dict[str, dict]) -> list[str]:
    versions, rows = patch_table(text)
    assert versions == list(records), versions
    wrong = []
    for col, (version, record) in enumerate(records.items()):
        assert record["kernel_version"] == version
        for label, want in patch_figures(record).items():
            got = rows[label][col]
            if got != want:
                wrong.append(f"{version}: {label}: the table says {got!r}, "
                             f"patches.json gives {want!r}")
    return wrong


def patch_records() -> dict[str, dict]:
    return {v: report(v, "patches.json") for v in VERSIONS}


def test_the_patch_figures_are_those_of_patches_json():
    assert patch_mismatches(FIGURES.read_text(), patch_records()) == []


def test_a_changed_patch_record_is_caught():
    records = patch_records()
    bumped = copy.deepcopy(records)
    sid = next(s for s, r in bumped["6.12.118"]["semaphores"].items()
               if r.get("verify") == "verified" and not r.get("hand"))
    bumped["6.12.118"]["semaphores"][sid].update(
        verify="not built", not_built=["x.c: not built here: CONFIG_X depends on BROKEN"])
    bumped["6.1.192"]["semaphores"].popitem()
    wrong = patch_mismatches(FIGURES.read_text(), bumped)
    assert any("6.12.118: semaphores verified" in w for w in wrong)
    assert any("6.12.118: semaphores not built" in w for w in wrong)
    assert any("6.1.192: semaphores converted" in w for w in wrong)


def test_the_patch_figures_are_quoted_in_one_place():
    for doc in USER_DOCS:
        if doc != FIGURES:
            assert PATCH_BEGIN not in doc.read_text(), doc


# -- the README's figures: audit.json, the series, runtime.json, bench.json ---------------

def readme_figures(text: str) -> dict[str, list[str]]:
    return table_after(text, "## The figures that matter")


def readme_mismatches(rows: dict[str, list[str]]) -> list[str]:
    wrong = []
    boots = json.loads(BENCH.read_text())["toolkit"]["boot_test"]["boots"]
    for col, version in enumerate(VERSIONS):
        audit = report(version, "audit.json")
        c = audit["counts"]
        want = {
            "`struct semaphore`s (`make audit`)":
                f"{audit['total']}: mutex {c['mutex']}, completion {c['completion']}, "
                f"counting {c['counting']}, unknown {c['unknown']}",
            "the kernel series (`kernel-patches/`)": f"{series_length(version)} patches",
            "`make boot-test`: the standard DEBUG_MUTEX_FULL and PARTIAL boots":
                f"{boots} passed",
        }
        runtime = ROOT / "reports" / f"linux-{version}" / "runtime.json"
        label = "the runtime set: semaphores a DEBUG_MUTEX_FULL kernel ran"
        if runtime.exists():
            # ran: its lock class shows operations (OPS > 0) in some boot
            sems = json.loads(runtime.read_text())["semaphores"].values()
            ran = sum(any(e.get("ops", 0) > 0 for e in r.get("boots", [])) for r in sems)
            got = rows[label][col].split(" ", 1)[0]
            if got != str(ran):
                wrong.append(f"{version}: {label}: {got} != {ran}")
        elif rows[label][col] != "not run":
            wrong.append(f"{version}: {label}: no runtime.json, yet {rows[label][col]!r}")
        want[SELFTEST_ROW] = selftest_cell(version)
        for key, value in want.items():
            if rows[key][col] != value:
                wrong.append(f"{version}: {key}: {rows[key][col]!r} != {value!r}")
    return wrong


SELFTEST_ROW = ("the kernel's own locking tests on the FULL kernel (`make boot-test`), each "
                "report against the tree without the series (`make selftest-control`)")


def selftest_cell(version: str) -> str:
    """The README's cell: qemu.control.summary_line of the committed record."""
    from classify.records.selftest import SelftestRecord
    from qemu.control import summary_line
    path = ROOT / "reports" / f"linux-{version}" / "selftest" / "selftest.json"
    return summary_line(SelftestRecord.load(path))


def series_length(version: str) -> int:
    major_minor = ".".join(version.split(".")[:2])
    series = ROOT / "kernel-patches" / major_minor / "series"
    return sum(1 for ln in series.read_text().splitlines()
               if ln.strip() and not ln.startswith("#"))


def test_the_readme_figures_are_those_of_the_reports():
    assert readme_mismatches(readme_figures(README.read_text())) == []


def test_a_changed_readme_figure_is_caught():
    text = README.read_text()
    row = next(ln for ln in text.splitlines() if ln.startswith("| `struct semaphore`s"))
    # one figure of the row changed, whatever the audit now says
    changed = re.sub(r"unknown (\d+)", lambda m: f"unknown {int(m.group(1)) + 1}", row, 1)
    edited = text.replace(row, changed, 1)
    assert edited != text
    assert readme_mismatches(readme_figures(edited))


def test_a_changed_locking_test_cell_is_caught():
    text = README.read_text()
    row = next(ln for ln in text.splitlines() if ln.startswith(f"| {SELFTEST_ROW} |"))
    edited = text.replace(row, row.replace("also on pristine", "only with the series", 1), 1)
    assert edited != text
    assert readme_mismatches(readme_figures(edited))


# -- the README's examples: the truth file, audit.md, the committed logs ------------------

def code_blocks(text: str) -> list[list[str]]:
    return [b.splitlines() for b in re.findall(r"^```\n(.*?)^```$", text, re.M | re.S)]


def evaluate_example(text: str) -> list[str]:
    block = next(b for b in code_blocks(text) if b and b[0] == "$ make evaluate")
    assert block[1] == "/usr/bin/python3 -m classify.evaluate"
    assert block[2].startswith("evaluate: Linux 6.1.192: reports/linux-6.1.192/audit.json")
    return block[3:]


def evaluate_output(version: str = "6.1.192") -> list[str]:
    truth = load_truth(ROOT / "classify" / "truth" / f"linux-{version}.tsv")
    return render(evaluate(report(version, "audit.json"), truth), truth).splitlines()


def test_the_evaluate_example_is_its_output():
    shown = evaluate_example(README.read_text())
    assert shown[-1].startswith("disagreements: ")
    assert shown == evaluate_output()[:len(shown)]


def test_a_changed_evaluation_is_caught():
    shown = evaluate_example(README.read_text())
    truth = load_truth(ROOT / "classify" / "truth" / "linux-6.1.192.tsv")
    audit = report("6.1.192", "audit.json")
    sid = next(s["id"] for s in audit["semaphores"] if s["class"] == "unknown")
    audit["semaphores"] = [dict(s, **{"class": "mutex"}) if s["id"] == sid else s
                           for s in audit["semaphores"]]
    assert shown != render(evaluate(audit, truth), truth).splitlines()[:len(shown)]


def unknown_pool(text: str) -> list[str]:
    return text.split("## The unknown pool", 1)[1].split("\n## ", 1)[0].splitlines()


def readme_unknown_rows(text: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index("| semaphore | why unknown | what would settle it |") + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def test_the_unknown_pool_rows_are_those_of_audit_md():
    audit_md = unknown_pool((ROOT / "reports" / "linux-6.1.192" / "audit.md").read_text())
    rows = readme_unknown_rows(README.read_text())
    assert len(rows) >= 3
    assert [r for r in rows if r not in audit_md] == []
    assert rows[0].replace("|", "| edited", 2) not in audit_md


TRIAGE = re.compile(r"^\$ make -s triage LOG=(\S+)$")


def triage_examples() -> list[tuple[Path, str, list[str]]]:
    out = []
    for doc in (README, *sorted(DOCS.glob("*.md"))):
        for block in code_blocks(doc.read_text()):
            m = TRIAGE.match(block[0]) if block else None
            if m:
                out.append((doc, m.group(1), block[1:]))
    return out


def triage_output(log: str) -> list[str]:
    res = subprocess.run([sys.executable, "-m", "qemu", "triage", log], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout.rstrip("\n").splitlines()


def test_the_readme_has_a_triage_example():
    assert any(doc == README for doc, _, _ in triage_examples())


@pytest.mark.parametrize("doc,log,shown", triage_examples(),
                         ids=[f"{d.name}:{Path(lg).name}" for d, lg, _ in triage_examples()])
def test_a_triage_example_is_its_output(doc, log, shown):
    assert (ROOT / log).is_file(), log
    assert shown == triage_output(log)
    # negative control: another line in the example is caught
    assert shown[:-1] + ["record: edited"] != triage_output(log)


# -- the 2005 claims of docs/figures.md: reports/bench.json -------------------------------

def ratio(text: str) -> str:
    value = float(re.match(r"([\d.]+)x", text).group(1))
    return f"{value:.0f}×" if value >= 10 else f"{value:.1f}×"


def claim_mismatches(text: str, claims: list[dict]) -> list[str]:
    rows = list(table_after(text, "| the claim (2005) |").values())
    assert len(rows) == len(claims)
    wrong = []
    for (measured, verdict), claim in zip(rows, claims):
        if not verdict.strip("*").startswith(claim["verdict"]):
            wrong.append(f"{claim['claim']}: verdict {verdict!r} != {claim['verdict']!r}")
        m = claim["measured"]
        if re.match(r"[\d.]+x", m):
            want = [ratio(m)]
        elif (sizes := re.match(r"(\d+) vs (\d+) bytes", m)):
            want = [f"{sizes[1]} vs {sizes[2]} bytes"]
        else:
            saved = re.match(r"(\d+) bytes saved \(([\d.]+%) of the (\d+) bytes", m)
            want = [f"**{saved[1]} bytes**", saved[2], f"{int(saved[3]):,}"]
        wrong += [f"{claim['claim']}: {w!r} not in {measured!r}" for w in want
                  if w not in measured]
    return wrong


def test_the_2005_claims_are_those_of_the_bench():
    claims = json.loads(BENCH.read_text())["seed_claims"]
    assert claim_mismatches(FIGURES.read_text(), claims) == []


def test_a_changed_claim_is_caught():
    claims = copy.deepcopy(json.loads(BENCH.read_text())["seed_claims"])
    claims[1]["measured"] = "150.0x, 8 kthreads on one lock"
    claims[0]["verdict"] = "holds"
    assert len(claim_mismatches(FIGURES.read_text(), claims)) == 2


# -- the documents themselves --------------------------------------------------------------

def test_the_readme_is_short():
    assert len(README.read_text().splitlines()) < 300


SESSION_WORDS = re.compile(r"\bissues? \d+|#\d{2,}\b|\bthis change\b|\bstop \d+\b|"
                           r"\bthis session\b", re.I)


@pytest.mark.parametrize("doc", USER_DOCS, ids=[str(d.relative_to(ROOT)) for d in USER_DOCS])
def test_no_issue_numbers_or_session_words(doc):
    assert SESSION_WORDS.findall(doc.read_text()) == []
    assert SESSION_WORDS.findall("as issue 13 asks, after this change")


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("doc", USER_DOCS, ids=[str(d.relative_to(ROOT)) for d in USER_DOCS])
def test_the_links_between_documents_resolve(doc):
    for target in LINK.findall(doc.read_text()):
        if "://" in target:
            continue
        path, _, frag = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        assert dest.is_file(), (doc.name, target)
        if frag:
            heads = {anchor(h) for h in re.findall(r"^#+ (.*)$", dest.read_text(), re.M)}
            assert frag in heads, (doc.name, target)


def test_an_anchor_is_githubs():
    assert anchor("The 2005 claims on 6.1") == "the-2005-claims-on-61"
    assert anchor("A tester's own kernel") == "a-testers-own-kernel"


# -- the triage row of docs/figures.md: reports/bench.json (PARTS=triage) ------------------

def triage_row_mismatches(text: str, tr: dict) -> list[str]:
    row = next(v for k, v in toolkit_rows(text).items() if k.startswith("`make triage`"))
    s, c = tr["seconds"], tr["cpu_seconds"]
    want = [f"**{median_range(s)} wall", f"{c['median']} s CPU ({c['min']}–{c['max']})",
            f"peak {tr['peak_mib']:.0f} MiB", f"{tr['log_mib']:.0f} MiB log",
            f"refused in {tr['refused']['zero']['seconds']} s and "
            f"{tr['refused']['urandom']['seconds']} s"]
    label = next(k for k in toolkit_rows(text) if k.startswith("`make triage`"))
    return [w for w in want if w not in row + label]


def test_the_triage_row_quotes_the_bench():
    tr = json.loads(BENCH.read_text())["toolkit"]["triage"]
    assert triage_row_mismatches(FIGURES.read_text(), tr) == []
    bumped = dict(tr, peak_mib=tr["peak_mib"] + 10,
                  cpu_seconds=dict(tr["cpu_seconds"], median=tr["cpu_seconds"]["median"] + 1))
    assert len(triage_row_mismatches(FIGURES.read_text(), bumped)) == 2


def test_the_bench_booted_the_standard_set_of_now():
    """The boot-test figures (README, docs/figures.md) quote reports/bench.json: it
    must have booted as many scenarios as `make boot-test` boots today."""
    from qemu.scenarios import standard_set
    boots = json.loads(BENCH.read_text())["toolkit"]["boot_test"]["boots"]
    assert boots == len(standard_set()), (
        f"reports/bench.json: {boots} boots, the standard set has "
        f"{len(standard_set())}: run `make bench PARTS=boottest`")
