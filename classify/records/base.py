"""Record: a dataclass that is also a JSON object.

to_json() writes every field but those that are None (an absent key); from_json() reads
them back and checks each value against the field's type, records nested in records
included.  A record that is a file of its own names its shape in SCHEMA (written as
"schema"); the records nested in it are versioned by it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from pathlib import Path
from typing import Any, ClassVar, TypeVar

R = TypeVar("R", bound="Record")


class RecordError(ValueError):
    """A JSON document that is not the record it was read as (one line: what it is not)."""


class Record:
    """Base of the records; subclasses are dataclasses."""

    SCHEMA: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": self.SCHEMA} if self.SCHEMA else {}
        for f in dataclasses.fields(self):      # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = _dump(value)
        return out

    @classmethod
    def from_json(cls: type[R], data: Any, where: str = "") -> R:
        where = where or cls.__name__
        if not isinstance(data, dict):
            raise RecordError(f"{where}: not a {cls.__name__} (a JSON object), "
                              f"but {type(data).__name__}")
        if cls.SCHEMA and data.get("schema") != cls.SCHEMA:
            raise RecordError(f"{where}: not a {cls.__name__}: schema "
                              f"{data.get('schema')!r}, expected {cls.SCHEMA!r}")
        fields = {f.name: f for f in dataclasses.fields(cls)}   # type: ignore[arg-type]
        unknown = sorted(set(data) - set(fields) - ({"schema"} if cls.SCHEMA else set()))
        if unknown:
            raise RecordError(f"{where}: not a {cls.__name__}: unknown field(s) "
                              + ", ".join(unknown))
        hints = _hints(cls)
        kwargs = {}
        for name, f in fields.items():
            if name in data:
                kwargs[name] = _load(hints[name], data[name], f"{where}.{name}")
            elif _optional(hints[name]):
                kwargs[name] = None
            elif f.default is dataclasses.MISSING and \
                    f.default_factory is dataclasses.MISSING:
                raise RecordError(f"{where}: not a {cls.__name__}: no {name!r}")
        return cls(**kwargs)

    @classmethod
    def load(cls: type[R], path: Path) -> R:
        """The record a JSON file holds, or RecordError naming the file."""
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise RecordError(f"{path}: not a {cls.__name__}: not JSON ({err.msg}, "
                              f"line {err.lineno})") from None
        return cls.from_json(data, str(path))


def dumps(data: Any) -> str:
    """The serialisation of the project's JSON files: sorted keys, one-space indent."""
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def _dump(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, frozenset):
        return sorted(value)
    if isinstance(value, (list, tuple)):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _optional(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and \
        type(None) in typing.get_args(tp)


_SCALARS = (str, int, float, bool)


def _load(tp: Any, value: Any, where: str) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is not type(None):
                try:
                    return _load(arg, value, where)
                except RecordError:
                    pass
        raise RecordError(f"{where}: {type(value).__name__} is not {tp}")
    if origin in (list, tuple, frozenset):
        if not isinstance(value, list):
            raise RecordError(f"{where}: {type(value).__name__}, expected a list")
        items = [_load(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
        return origin(items) if origin is not list else items
    if origin is dict:
        if not isinstance(value, dict):
            raise RecordError(f"{where}: {type(value).__name__}, expected an object")
        return {k: _load(args[1], v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, Record):
        return tp.from_json(value, where)
    if tp in _SCALARS:
        if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
            raise RecordError(f"{where}: {type(value).__name__}, expected {tp.__name__}")
        return value
    raise TypeError(f"{where}: no JSON reading of {tp}")
