"""Stage 1, configure: `make tinyconfig`, merge our fragments, `olddefconfig`, verify.

A fragment NAME is qemu/configs/NAME.config, or for another architecture than x86_64
qemu/configs/<arch>/NAME.config when that exists (arm64/base.config: the PL011
console instead of the 8250 and the x86 unwinder).

As kunit.py's kunit_config: fragments are parsed into {symbol: value}; a symbol set to
two different values by two fragments is refused (naming both); after olddefconfig every
requested option that did not make it into .config is its own "Missing: CONFIG_X=y".
"""

from __future__ import annotations

import enum
import hashlib
import logging
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from classify import arches
from classify.kbuild import format_option, make, missing_options, parse_config_text
from qemu.common import CONFIGS_DIR, Timer

log = logging.getLogger("sem2mutex.qemu.config")

class ConfigStatus(enum.Enum):
    SUCCESS = "success"
    CONFLICT = "conflict"
    MISSING = "missing"
    FAILURE = "failure"


class ConfigConflict(Exception):
    pass


@dataclass(frozen=True)
class Fragment:
    name: str                 # "base", "mode-full", ...
    options: dict[str, str]   # CONFIG_X -> "y" | "m" | "n" | '"string"' | number


@dataclass(frozen=True)
class ConfigRequest:
    tree: Path
    build_dir: Path
    fragments: tuple[str, ...]
    configs_dir: Path = CONFIGS_DIR
    arch: str = "x86_64"
    # leave out the options no Kconfig entry of the tree defines (the series' own, on
    # the pristine control of qemu/pristine.py), instead of calling them Missing
    drop_undefined: bool = False


@dataclass
class ConfigResult:
    status: ConfigStatus
    elapsed: float
    config_hash: str = ""
    errors: list[str] = field(default_factory=list)
    skipped: bool = False     # .config already matched the request
    dropped: list[str] = field(default_factory=list)   # drop_undefined: what was left out


def fragment_path(name: str, configs_dir: Path = CONFIGS_DIR, arch: str = "x86_64") -> Path:
    """configs/<arch>/NAME.config when arch has its own, else configs/NAME.config."""
    own = configs_dir / arch / f"{name}.config"
    return own if arch != "x86_64" and own.is_file() else configs_dir / f"{name}.config"


def load_fragment(name: str, configs_dir: Path = CONFIGS_DIR,
                  arch: str = "x86_64") -> Fragment:
    path = fragment_path(name, configs_dir, arch)
    if not path.is_file():
        raise FileNotFoundError(f"no config fragment {name!r} ({path})")
    return Fragment(name, parse_config_text(path.read_text()))


def merge_fragments(fragments: list[Fragment]) -> dict[str, str]:
    """Union of the fragments; the same symbol with two values is a ConfigConflict."""
    merged: dict[str, str] = {}
    origin: dict[str, str] = {}
    conflicts = []
    for frag in fragments:
        for sym, value in frag.options.items():
            if sym in merged and merged[sym] != value:
                conflicts.append(f"Conflict: {sym}={merged[sym]} in {origin[sym]} "
                                 f"vs {sym}={value} in {frag.name}")
                continue
            merged[sym] = value
            origin.setdefault(sym, frag.name)
    if conflicts:
        raise ConfigConflict("\n".join(conflicts))
    return merged


def fragments_hash(merged: dict[str, str], tree_head: str = "") -> str:
    text = "\n".join(format_option(s, merged[s]) for s in sorted(merged)) + "\n" + tree_head
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _tree_head(tree: Path) -> str:
    res = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True,
                         text=True)
    return res.stdout.strip()


def configure(req: ConfigRequest) -> ConfigResult:
    with Timer() as t:
        result = _configure(req)
    result.elapsed = t.elapsed
    return result


def _configure(req: ConfigRequest) -> ConfigResult:
    try:
        frags = [load_fragment(n, req.configs_dir, req.arch) for n in req.fragments]
        merged = merge_fragments(frags)
    except (ConfigConflict, FileNotFoundError) as err:
        return ConfigResult(ConfigStatus.CONFLICT, 0.0, errors=str(err).splitlines())
    # an option asked off that the tree does not have is off already: only the
    # others are left out (and said so)
    dropped = [s for s in undefined_options(req.tree, merged) if merged[s] != "n"] \
        if req.drop_undefined else []
    merged = {s: v for s, v in merged.items() if s not in dropped}
    chash = fragments_hash(merged, _tree_head(req.tree) + ("" if req.arch == "x86_64"
                                                           else "\0" + req.arch))
    # every make in the directory (this one's, the build's) takes its ARCH= from here
    arches.set_arch(req.build_dir, arches.ARCHES[req.arch])
    dot = req.build_dir / ".config"
    stamp = req.build_dir / ".s2m-config-hash"
    if dot.is_file() and stamp.is_file() and stamp.read_text().strip() == chash:
        if not missing_options(merged, parse_config_text(dot.read_text())):
            log.info("config %s unchanged (%s)", req.build_dir.name, chash)
            return ConfigResult(ConfigStatus.SUCCESS, 0.0, chash, skipped=True,
                                dropped=dropped)
    stamp.unlink(missing_ok=True)
    log.info("configuring %s: %s tinyconfig + %s", req.build_dir.name, req.arch,
             " + ".join(req.fragments))
    res = make(req.tree, req.build_dir, "tinyconfig")
    if res.returncode != 0:
        return ConfigResult(ConfigStatus.FAILURE, 0.0, chash,
                            ["make tinyconfig failed:"] + _tail(res.stdout))
    with dot.open("a") as f:
        f.write("\n# sem2mutex fragments: " + " ".join(req.fragments) + "\n")
        for sym in sorted(merged):
            f.write(format_option(sym, merged[sym]) + "\n")
    res = make(req.tree, req.build_dir, "olddefconfig")
    if res.returncode != 0:
        return ConfigResult(ConfigStatus.FAILURE, 0.0, chash,
                            ["make olddefconfig failed:"] + _tail(res.stdout))
    missing = missing_options(merged, parse_config_text(dot.read_text()))
    if missing:
        return ConfigResult(ConfigStatus.MISSING, 0.0, chash, missing, dropped=dropped)
    stamp.write_text(chash + "\n")
    return ConfigResult(ConfigStatus.SUCCESS, 0.0, chash, dropped=dropped)


def undefined_options(tree: Path, options: dict[str, str]) -> list[str]:
    """The options no Kconfig entry of the tree (a git tree) defines, sorted."""
    names = sorted(s.removeprefix("CONFIG_") for s in options)
    if not names:
        return []
    res = subprocess.run(["git", "-C", str(tree), "grep", "-h", "-E",
                          rf"^\s*(menu)?config\s+({'|'.join(names)})\s*$", "--", "*Kconfig*"],
                         capture_output=True, text=True)
    defined = {f"CONFIG_{ln.split()[1]}" for ln in res.stdout.splitlines() if ln.split()}
    return sorted(s for s in options if s not in defined)


def _tail(text: str, n: int = 15) -> list[str]:
    return [line for line in text.splitlines() if line.strip()][-n:]
