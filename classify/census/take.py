"""take_census: scan the candidate files (cached), give local semaphores their
short ids, and resolve every call to its semaphore.
"""

from __future__ import annotations

import logging
from pathlib import Path

from classify.census.cscan import read_text
from classify.census.expand import EXPAND_VERSION, expand_text
from classify.census.macros import load_hints
from classify.census.model import CENSUS_VERSION, Census, Decl, Op
from classify.census.pool import scan_files
from classify.census.prefilter import candidate_files
from classify.census.resolver import Resolver
from classify.census.scan import scan_file

log = logging.getLogger("sem2mutex.census")


def _short_local_ids(census: Census) -> None:
    """Function-scope semaphores are `path:name` like file-scope ones; only when
    a file has two of the same name is the function added: `path:name@func`."""
    import dataclasses
    for table in (census.sems, census.pointers):
        seen: dict[tuple[str, str], int] = {}
        for d in list(census.sems.values()) + list(census.pointers.values()):
            if d.kind != "member":
                seen[(d.path, d.name)] = seen.get((d.path, d.name), 0) + 1
        for old, d in list(table.items()):
            if not d.func:
                continue
            new = f"{d.path}:{d.name}"
            if seen[(d.path, d.name)] > 1:
                new += f"@{d.func}"
            del table[old]
            table[new] = dataclasses.replace(d, id=new)


def take_census(root: Path, files: list[str] | None = None,
                cache: "object | None" = None) -> Census:
    """The census of root (a tree, or a single file).  cache, when given, has
    get(key) / put(key, value) and is keyed by the file content."""
    import hashlib
    root = Path(root)
    if files is None:
        files = candidate_files(root)
    census = Census(root=root, files=list(files))
    raw_ops = []
    scans: dict[str, dict] = {}
    keys: dict[str, str] = {}
    for rel in files:
        try:
            text = read_text(root, rel)
        except OSError as err:
            log.warning("%s: %s", rel, err)
            continue
        text, expansions = expand_text(text)
        if expansions:
            census.expanded[rel] = expansions
        census.texts[rel] = text
        keys[rel] = "census-" + hashlib.sha256((CENSUS_VERSION + EXPAND_VERSION
                                                + load_hints().digest + rel
                                                + "\0" + text).encode(
            "utf-8", "surrogateescape")).hexdigest()
        scan = cache.get(keys[rel]) if cache is not None else None
        if scan is not None:
            scans[rel] = scan
    missed = scan_files(scan_file, [(rel, census.texts[rel]) for rel in keys
                                    if rel not in scans])
    for rel, scan in missed.items():
        if cache is not None:
            cache.put(keys[rel], scan)
    scans.update(missed)
    for rel in keys:
        scan = scans[rel]
        census.defines[rel] = scan["defines"]
        census.includes[rel] = set(scan["includes"])
        census.funcs[rel] = set(scan["funcs"])
        for dd in scan["decls"]:
            d = Decl(**dd)
            if d.kind == "alias":
                census.aliases[d.name] = d.init
                continue
            target = census.pointers if d.pointer else census.sems
            target.setdefault(d.id, d)
        for o in scan["ops"]:
            census.hints[(rel, o["line"], o["base"])] = o["hint"]
            raw_ops.append((rel, o))
    _short_local_ids(census)
    res = Resolver(census)
    census.resolver = res
    for rel, o in raw_ops:
        target, via, cands, note = res.resolve(rel, o["func"], o["expr"], o["line"])
        census.ops.append(Op(rel, o["line"], o["op"], o["expr"], o["func"],
                             tuple(o["args"]), target, via, cands, note,
                             loop=o.get("loop", False)))
    census.ops.sort(key=lambda o: (o.path, o.line, o.op, o.expr))
    return census
