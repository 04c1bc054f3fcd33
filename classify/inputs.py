"""What a user types or hands in: the one error path for user errors.

A user error (a path that is no kernel tree, a JSON file that is not the record asked
for, an id the audit does not have, a path under the committed folders) is one line
naming the input and what is wrong with it, and exit status 2 (fail()); a traceback
is for the project's own bugs.  Every command line parses with OneLineParser, whose
usage errors are one line too.

The JSON files a user may hand a command are checked against the shapes the project
writes before anything reads them: audit.json here (check_audit), runtime.json
through its record (classify.records.runtime.RuntimeRecord), patches.json here
(check_patches).  refuse_committed() keeps every command but the three whose job it
is (`make audit` of a tree `make setup` unpacks, `make reports`, `make marking`) out
of reports/ and kernel-patches/.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, NoReturn

from classify.paths import PROJECT_DIR, REPORTS_DIR, SERIES_ROOT
from classify.records.audit import AUDIT_SCHEMA, AuditData
from classify.records.base import RecordError
from classify.records.patches import PATCH_STATUSES, PATCHES_SCHEMA
from classify.tree import TreeError

AUDIT_CLASSES = ("mutex", "completion", "counting", "unknown")
COMMITTED = (REPORTS_DIR, SERIES_ROOT)


class InputError(Exception):
    """A user's input that cannot be used: the message is one line naming it."""


# The exceptions whose message is a user error line (exit status 2).
USER_ERRORS: tuple[type[Exception], ...] = (InputError, TreeError, RecordError)


class OneLineParser(argparse.ArgumentParser):
    """argparse, with a usage error in one line (the program, the error, --help)."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def fail(err: BaseException | str, prefix: str = "error: ") -> int:
    """Print the one line of a user error; the exit status (2)."""
    line = " ".join(str(err).split("\n")).strip()
    print(f"{prefix}{line}", file=sys.stderr)
    return 2


def shown(path: Path) -> str:
    """A path as it reads best: relative to the project when it is inside it."""
    try:
        return str(Path(path).resolve().relative_to(PROJECT_DIR))
    except ValueError:
        return str(path)


# ------------------------------------------------------------------ paths

def committed_root(path: Path) -> Path | None:
    """reports/ or kernel-patches/ when path lies under one of them, else None."""
    full = Path(path).resolve()
    return next((root for root in COMMITTED if full == root or root in full.parents), None)


def refuse_committed(path: Path, what: str, allowed: Path | None = None) -> Path:
    """path, when a command may write there: anywhere but reports/ and kernel-patches/,
    and there only allowed (the one place the command's job is to write)."""
    root = committed_root(path)
    if root is None or (allowed is not None and
                        Path(path).resolve() == Path(allowed).resolve()):
        return Path(path)
    raise InputError(f"{what} {path}: under {root.name}/, which holds committed files "
                     "that only `make audit`, `make reports` and `make marking` write: "
                     "give a path in work/ or outside the project")


def output_file(path: Path, what: str) -> Path:
    """A file a command is to write: not a directory, not under the committed folders."""
    refuse_committed(path, what)
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{what} {path}: is a directory: give a file name")
    parent = next((q for q in p.absolute().parents if q.exists()), None)
    if parent is not None and not parent.is_dir():
        raise InputError(f"{what} {path}: {parent} is not a directory")
    return p


def input_file(path: Path, what: str) -> str:
    """The text of a file a user gave; InputError when it is not a readable file."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{what} {path}: is a directory, not a file")
    try:
        return p.read_text(errors="replace")
    except OSError as err:
        raise InputError(f"{what} {path}: cannot read it: "
                         f"{err.strerror or err}") from None


def load_json(path: Path, what: str, kind: str) -> Any:
    """A JSON file a user gave (kind: what it should be, for the message)."""
    text = input_file(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"{what} {path}: not {kind}: not JSON ({err.msg}, line "
                         f"{err.lineno})") from None


# ------------------------------------------------------------------ audit.json

def _type(value: Any, tp: type | tuple[type, ...], where: str) -> Any:
    if value is None and not (isinstance(tp, tuple) and type(None) in tp):
        raise ValueError(f"no {where}")
    if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
        want = " or ".join(t.__name__ for t in (tp if isinstance(tp, tuple) else (tp,)))
        raise ValueError(f"{where} is {type(value).__name__}, expected {want}")
    return value


def _places(items: Any, where: str, keys: tuple[str, ...]) -> None:
    """A list of {"path": str, "line": int, ...} (the audit's ops and inits)."""
    for n, item in enumerate(_type(items, list, where)):
        _type(item, dict, f"{where}[{n}]")
        _type(item.get("path"), str, f"{where}[{n}].path")
        _type(item.get("line"), (int, type(None)), f"{where}[{n}].line")
        for key in keys:
            _type(item.get(key), str, f"{where}[{n}].{key}")


def _semaphore(s: Any, where: str) -> None:
    _type(s, dict, where)
    sid = _type(s.get("id"), str, f"{where}.id")
    where = f"{where} ({sid})"
    if s.get("class") not in AUDIT_CLASSES:
        raise ValueError(f"{where}: class {s.get('class')!r} is not one of "
                         + ", ".join(AUDIT_CLASSES))
    declared = _type(s.get("declared"), dict, f"{where}.declared")
    _type(declared.get("path"), str, f"{where}.declared.path")
    _places(s.get("init", []), f"{where}.init", ())
    _places(s.get("ops", []), f"{where}.ops", ("op",))
    for key in ("reasons", "evidence"):
        for n, r in enumerate(_type(s.get(key, []), list, f"{where}.{key}")):
            _type(r, str, f"{where}.{key}[{n}]")


def check_audit(data: Any, where: str) -> None:
    """Nothing when data has the shape of an audit.json (classify.report.data writes
    it: its schema, kernel_version, and each semaphore's id, class, declaration, inits
    and calls); else InputError naming the file and the first thing that is not.
    (audit.json's shape is classify.records.audit's TypedDicts: this is their check.)"""
    if not isinstance(data, dict):
        raise InputError(f"{where}: not an audit.json: a JSON {type(data).__name__}, "
                         "not an object")
    if data.get("schema", AUDIT_SCHEMA) != AUDIT_SCHEMA:
        raise InputError(f"{where}: not an audit.json: schema {data.get('schema')!r}, "
                         f"expected {AUDIT_SCHEMA!r}")
    try:
        _type(data.get("kernel_version"), str, "kernel_version")
        for n, s in enumerate(_type(data.get("semaphores"), list, "semaphores")):
            _semaphore(s, f"semaphores[{n}]")
        for n, f in enumerate(_type(data.get("allocated", []), list, "allocated")):
            _type(f, dict, f"allocated[{n}]")
            _type(f.get("id"), str, f"allocated[{n}].id")
            _type(f.get("class"), str, f"allocated[{n}].class")
    except ValueError as err:
        raise InputError(f"{where}: not an audit.json: {err}") from None


def load_audit(path: Path, what: str = "audit") -> AuditData:
    """The JSON data of an audit.json a user gave, checked (InputError: missing, not
    JSON, not an audit)."""
    if not Path(path).exists():
        raise InputError(f"{what} {path}: no such file: run `make audit` (KERNEL=...) "
                         "first, or name an audit.json")
    data = load_json(path, what, "an audit.json")
    check_audit(data, f"{what} {path}")
    return data


# ------------------------------------------------------------------ patches.json

def check_patches(data: Any, where: str) -> None:
    """Nothing when data has the shape of the patches.json `make patches` writes (its
    schema, kernel_version, and a record with a status per semaphore id); else
    InputError naming the file and the first thing that is not."""
    if not isinstance(data, dict):
        raise InputError(f"{where}: not a patches.json: a JSON {type(data).__name__}, "
                         "not an object")
    if data.get("schema", PATCHES_SCHEMA) != PATCHES_SCHEMA:
        raise InputError(f"{where}: not a patches.json: schema {data.get('schema')!r}, "
                         f"expected {PATCHES_SCHEMA!r}")
    try:
        _type(data.get("kernel_version"), str, "kernel_version")
        for sid, rec in _type(data.get("semaphores"), dict, "semaphores").items():
            _type(rec, dict, f"semaphores[{sid!r}]")
            if rec.get("status") not in PATCH_STATUSES:
                raise ValueError(f"semaphores[{sid!r}].status {rec.get('status')!r} is "
                                 "not one of " + ", ".join(PATCH_STATUSES))
    except ValueError as err:
        raise InputError(f"{where}: not a patches.json: {err}") from None


def load_runtime(path: Path, what: str = "runtime record"):
    """A runtime.json a user gave, read into its record (classify.records.runtime)."""
    from classify.records.runtime import RuntimeRecord
    input_file(path, what)
    try:
        return RuntimeRecord.load(Path(path))
    except RecordError as err:
        raise InputError(f"{what} {err}") from None
