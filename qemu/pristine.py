"""`make selftest-control`: the control scenarios booted on the pristine tree.

The control kernel is the series kernel's configuration without the series: the same
fragments, less the options no Kconfig entry of the pristine tree defines (the series'
own: DEBUG_MUTEX_FULL, MUTEX_DEBUG_KUNIT_TEST, MUTEX_RULE_CHECK), built from a worktree
of the tree with no patch applied (work/trees/qemu-pristine) in an O= directory of its
own (work/build/pristine-<fragments>): one more kernel, built only on demand, never by
`make test`.  Each control scenario (`control = true`) boots on it once; its console log
and record go to <selftest dir>/pristine/ (qemu.control), and control.json says which
options were left out and every option whose value differs from the series kernel's
.config, so that a reader sees the two kernels differ by the series alone.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from classify.kbuild import config_values
from classify.records.base import dumps
from classify.records.selftest import ControlRecord
from classify.tree import kernel_version
from qemu import control
from qemu.boot import (BOOTS_DIR, BootResult, attach_modules, boot_scenario, build_kernel,
                       in_parallel, result_lines)
from qemu.build import build_dir_for
from qemu.parse import ParsedLog
from qemu.rootfs import make_initramfs, request_for
from qemu.scenarios import Evaluation, Scenario, control_set, load_scenario
from qemu.source import kernel_key, prepare_source

log = logging.getLogger("sem2mutex.qemu.pristine")


def pristine_key(kernel: Path) -> str:
    """The O= directory key of a tree's control kernel."""
    key = kernel_key(kernel)
    return control.PRISTINE + (f"-{key}" if key else "")


def config_differences(series: dict[str, str], pristine: dict[str, str]) -> list[str]:
    """Every option whose value differs between two .config files, an option a file
    does not have counting as n (pure)."""
    out = []
    for sym in sorted(set(series) | set(pristine)):
        a, b = series.get(sym, "n"), pristine.get(sym, "n")
        if a != b:
            out.append(f"{sym}: series {a}, pristine {b}")
    return out


def ran(sc: Scenario, parsed: ParsedLog) -> Evaluation:
    """A control boot passes when it ran /init to its end: its reports are the tree's."""
    ok = parsed.verdict == "completed"
    return Evaluation(ok, [] if ok else [f"verdict {parsed.verdict}, expected completed"])


def selftest_control(kernel: Path, out_dir: Path = BOOTS_DIR / control.PRISTINE,
                     accel: str = "tcg") -> tuple[bool, list[str]]:
    """Build the control kernel, boot every control scenario on it, write the records;
    (all ran to their end, the lines to print)."""
    scenarios = [load_scenario(n) for n in control_set()]
    fragments = {sc.fragments for sc in scenarios}
    if len(fragments) != 1:
        return False, [f"the control scenarios must share one kernel, not {len(fragments)}"]
    frags = fragments.pop()
    source = prepare_source(kernel, pristine=True)
    version = kernel_version(source.kernel)
    initramfs = make_initramfs(request_for("x86_64"))
    k = build_kernel(source, frags, key=pristine_key(source.kernel), drop_undefined=True)
    if not k.ok:
        return False, k.problems
    attach_modules(k, initramfs)
    # the boots as the scenarios ask for them (command line, steps); what they expect
    # of the series kernel (its console lines, its tests' results) is not asked here
    bare = [dataclasses.replace(sc, console=(), locking_api="", ww_mutex="", torture=(),
                                ktap={}, reports=()) for sc in scenarios]
    results: list[BootResult] = in_parallel(
        [lambda sc=sc: boot_scenario(sc, k, initramfs, source, accel, out_dir, evaluator=ran)
         for sc in bare])
    dest = control.selftest_dir(source.kernel, version) / control.PRISTINE
    lines = result_lines(results)
    for sc, r in zip(scenarios, results):
        if r.verdict != "not_booted":
            rec = control.write_record(out_dir / f"{sc.name}.log", dest, sc.name, version,
                                       control.PRISTINE)
            lines.append(f"{sc.name} on pristine {version}: {control.summary_line(rec)}")
    series_config = build_dir_for(frags, kernel_key(source.kernel)) / ".config"
    assert k.build is not None and k.build.log is not None
    differences = config_differences(config_values(series_config),
                                     config_values(k.build.log.parent / ".config"))
    if not series_config.is_file():
        differences = [f"not compared: no series kernel built yet ({series_config})"]
    record = ControlRecord(version, list(frags), k.config.dropped, differences,
                           [sc.name for sc in scenarios])
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "control.json").write_text(dumps(record.to_json()))
    lines.append(f"selftest-control: {dest}: left out {', '.join(k.config.dropped) or 'nothing'}"
                 f"; {len(differences)} option(s) differ from the series kernel")
    return all(r.passed for r in results), lines
