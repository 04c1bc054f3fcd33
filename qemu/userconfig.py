"""A tester's own .config and the DEBUG_MUTEX_FULL + lockdep request: what the merge
changed, which requested options survived `olddefconfig`, and why the others did not.

Pure apart from reading files: the facts come in (the user's options, the requested
ones, the .config after olddefconfig, merge_config.sh's output, the Kconfig entries),
the verdicts go out; `qemu/fullkernel.py` runs the tools.  A requested option that did
not survive is named with its reason, in this order:
- no Kconfig entry defines it (a tree without the series: DEBUG_MUTEX_FULL);
- its `depends on` is not met, the unmet part named ("depends on !ARCH_NO_PREEMPT");
- the Kconfig file that defines it is read only inside an `if` that is false;
- else its dependencies are met, and a choice, a `select` or the prompt's `if`
  decided otherwise (the Kconfig file is named, to read).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from classify.kbuild import format_option, kconfig_true, parse_config_text, unmet_depends

# An architecture by the symbol its .config sets.
ARCH_SYMBOLS = {"x86_64": "CONFIG_X86_64", "arm64": "CONFIG_ARM64"}
_REDEFINED = re.compile(r"^Value of (CONFIG_\w+) is redefined by fragment (\S+?):?$")
_VALUE = re.compile(r"^(Previous|New)\s+value:\s*(.*)$")

# sym -> (Kconfig file, [depends on ...]) or None; file -> the `if` it is sourced in
DependsLookup = Callable[[str], "tuple[str, list[str]] | None"]
SourcedIf = Callable[[str], str]


class UserConfigError(ValueError):
    """The tester's file is not a usable .config: the message says why, in one line."""


@dataclass(frozen=True)
class Change:
    """An option of the user's config that the request set to another value."""
    symbol: str
    before: str         # "y", "n" (unset), ...
    after: str
    fragment: str       # the fragment file that set it


@dataclass(frozen=True)
class Dropped:
    symbol: str
    wanted: str
    got: str            # the value in .config after olddefconfig ("n": absent or unset)
    reason: str

    def line(self) -> str:
        got = "not set" if self.got == "n" else f"={self.got}"
        return f"{format_option(self.symbol, self.wanted)} did not survive ({got}): {self.reason}"


@dataclass
class Check:
    """The outcome of the merge and olddefconfig, for the report and the record."""
    requested: int
    survived: list[str] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    changed: list[Change] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.dropped


_CONFIG_LINE = re.compile(r"^(?:CONFIG_[A-Za-z0-9_]+=.*|#.*|)$")


def read_user_config(text: str, name: str) -> dict[str, str]:
    """The options of a .config; UserConfigError when there are none, or when a line
    is none of what a .config holds (an option, a comment, a blank line): olddefconfig
    would drop it without a word."""
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not _CONFIG_LINE.match(line):
            raise UserConfigError(f"{name}: line {n} is not a .config line "
                                  f"({line[:60]!r}): not a kernel .config")
    options = parse_config_text(text)
    if not any(v != "n" for v in options.values()):
        raise UserConfigError(f"{name}: no CONFIG_ option set in it: not a kernel .config")
    return options


def unknown_options(options: dict[str, str], values: dict[str, str],
                    requested: dict[str, str]) -> list[str]:
    """The options the user's config sets that are not in .config after olddefconfig
    at all (not even "is not set"): symbols this tree's Kconfig does not define.  The
    request's own are checked apart (check_options)."""
    return sorted(s for s, v in options.items()
                  if v != "n" and s not in requested and s not in values)


def unknown_line(unknown: list[str], options: dict[str, str], name: str) -> str:
    """The warning about them, or "" when there are none."""
    if not unknown:
        return ""
    set_ = sum(v != "n" for v in options.values())
    return (f"{name}: {len(unknown)} of its {set_} options are unknown to this tree's "
            f"Kconfig and were dropped: {', '.join(unknown[:8])}"
            + (f" (+{len(unknown) - 8} more)" if len(unknown) > 8 else "")
            + " (a config of another kernel version, or not a .config?)")


def config_arch(options: dict[str, str]) -> str:
    """The architecture a .config was made for ('' when it says neither)."""
    found = [arch for arch, sym in ARCH_SYMBOLS.items() if options.get(sym) == "y"]
    return found[0] if len(found) == 1 else ""


def choose_arch(options: dict[str, str], asked: str, name: str) -> str:
    """ARCH= when given (refused if the config says another one), else the config's."""
    own = config_arch(options)
    if asked and own and asked != own:
        raise UserConfigError(f"{name} was made for {own} ({ARCH_SYMBOLS[own]}=y), not "
                              f"{asked}: give ARCH={own}, or a .config made for {asked}")
    if not asked and not own:
        raise UserConfigError(f"{name} sets neither {' nor '.join(ARCH_SYMBOLS.values())}: "
                              f"give ARCH= ({', '.join(ARCH_SYMBOLS)})")
    return asked or own


def merge_changes(output: str) -> list[Change]:
    """The options merge_config.sh says a fragment redefined, with both values."""
    changes: list[Change] = []
    current: dict[str, str] = {}
    for raw in output.splitlines():
        line = raw.strip()
        if m := _REDEFINED.match(line):
            current = {"symbol": m.group(1), "fragment": m.group(2).rsplit("/", 1)[-1]}
        elif current and (m := _VALUE.match(line)):
            current[m.group(1)] = m.group(2)
            if "Previous" in current and "New" in current:
                changes.append(Change(current["symbol"], _value(current["Previous"]),
                                      _value(current["New"]), current["fragment"]))
                current = {}
    return changes


def _value(text: str) -> str:
    """merge_config.sh prints 'CONFIG_X=y' or '# CONFIG_X is not set'."""
    parsed = parse_config_text(text)
    return next(iter(parsed.values()), text.strip())


def why_dropped(symbol: str, values: dict[str, str], depends: DependsLookup,
                sourced_if: SourcedIf) -> str:
    """Why a requested option is not in .config: see the module's docstring."""
    entry = depends(symbol)
    if entry is None:
        return ("no Kconfig entry defines it in this tree (a tree without the "
                "sem2mutex series, or another kernel version)")
    kconfig, exprs = entry
    unmet = unmet_depends(exprs, values)
    if unmet:
        return f"depends on {' && '.join(unmet)} ({kconfig})"
    cond = sourced_if(kconfig)
    if cond and kconfig_true(cond, values) is not True:
        return f"{kconfig} is read only if {cond}"
    return (f"its dependencies are met; a choice, a select or the prompt's condition "
            f"decided otherwise (read its entry in {kconfig})")


def check_options(requested: dict[str, str], values: dict[str, str], changes: list[Change],
                  depends: DependsLookup, sourced_if: SourcedIf) -> Check:
    """Every requested option against the .config after olddefconfig."""
    check = Check(len(requested), changed=sorted(changes, key=lambda c: c.symbol))
    for sym in sorted(requested):
        want, got = requested[sym], values.get(sym, "n")
        if want == got:
            check.survived.append(sym)
        else:
            check.dropped.append(Dropped(sym, want, got,
                                         why_dropped(sym, values, depends, sourced_if)))
    return check


def check_lines(check: Check) -> list[str]:
    """The check as a person reads it: the changes to their config, then the verdict."""
    lines = [f"changed from your config: {format_option(c.symbol, c.before)} -> "
             f"{format_option(c.symbol, c.after)} ({c.fragment})" for c in check.changed]
    lines += [d.line() for d in check.dropped]
    lines.append(f"{len(check.survived)} of {check.requested} requested options are in "
                 f".config" + ("" if check.ok else f"; {len(check.dropped)} did not survive"))
    return lines
