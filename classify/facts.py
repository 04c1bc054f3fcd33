"""Facts: the semantic patches of cocci/, run file by file over the census' files.

Each file gets its own spatch process with a timeout, so that one crash or one
endless parse loses that file only; the file is then recorded with the error and
its semaphores are classed "unknown" (not analysed) by the rules.  The scripts
print their facts as JSON lines under ``-D facts``; the results are cached per
file, keyed by the file's content and by the scripts (and spatch version), under
the cache directory.  ``fresh`` ignores (and rewrites) the cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from classify import spatch
from classify.paths import COCCI_DIR

log = logging.getLogger("sem2mutex.facts")

# The scripts the pipeline runs, in this order, combined into one semantic patch
# so that spatch parses each file once.  Each also runs on its own.
SCRIPTS = ("sem_ops", "sem_init", "sem_balance", "sem_atomic", "sem_escape",
           "sem_trylock_timeout")
SPATCH_FLAGS = ("--very-quiet", "--no-includes", "--include-headers", "-D", "facts")
DEFAULT_TIMEOUT = 120.0


class Cache:
    """JSON values in files named by key, under root (sharded by two hex digits)."""

    def __init__(self, root: Path, fresh: bool = False):
        self.root = Path(root)
        self.fresh = fresh
        self.hits = 0
        self.misses = 0
        # fresh ignores what earlier runs left, not what this run has just put
        self.refilled: set[str] = set()

    def _path(self, key: str) -> Path:
        digest = key.rsplit("-", 1)[-1]
        return self.root / digest[:2] / f"{key}.json"

    def get(self, key: str):
        if self.fresh and key not in self.refilled:
            self.misses += 1
            return None
        try:
            with open(self._path(key)) as fh:
                value = json.load(fh)
        except (OSError, ValueError):
            self.misses += 1
            return None
        self.hits += 1
        return value

    def put(self, key: str, value) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w") as fh:
            json.dump(value, fh, sort_keys=True)
        os.replace(tmp, path)
        self.refilled.add(key)


@dataclass
class FileFacts:
    path: str
    status: str                 # ok | error | timeout
    error: str = ""
    facts: list[dict] = field(default_factory=list)
    seconds: float = 0.0


def combined_script(cocci_dir: Path, dest_dir: Path) -> tuple[Path, str]:
    """One semantic patch made of SCRIPTS (their virtual lines hoisted to the top)."""
    virtuals: list[str] = []
    bodies: list[str] = []
    for name in SCRIPTS:
        text = (cocci_dir / f"{name}.cocci").read_text()
        body = []
        for line in text.splitlines():
            if line.startswith("virtual "):
                if line not in virtuals:
                    virtuals.append(line)
            else:
                body.append(line)
        bodies.append(f"// ---- {name}.cocci\n" + "\n".join(body))
    combined = "\n".join(virtuals) + "\n\n" + "\n\n".join(bodies) + "\n"
    version = spatch.version()
    # the macro hints change what spatch parses: part of the key
    digest = hashlib.sha256((version + "\0" + spatch.macro_text() + "\0"
                             + combined).encode()).hexdigest()
    dest_dir.mkdir(parents=True, exist_ok=True)
    path = dest_dir / f"sem2mutex-{digest[:16]}.cocci"
    if not path.exists():
        # atomic: test workers and parallel audits share the cache directory
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(combined)
        os.replace(tmp, path)
    return path, digest


def parse_output(stdout: str) -> list[dict]:
    facts = []
    for line in stdout.splitlines():
        if line.startswith("SEM2MUTEX "):
            try:
                facts.append(json.loads(line[len("SEM2MUTEX "):]))
            except ValueError:
                continue
    facts.sort(key=lambda f: json.dumps(f, sort_keys=True))
    return facts


def run_spatch(cwd: Path, rel: str, script: Path, timeout: float,
               nice: int = 10, names: str = "", extra: list[str] | None = None,
               arg: str = "") -> FileFacts:
    """Facts of rel; arg: the file spatch reads instead (a text the census rewrote)."""
    run = spatch.run([*SPATCH_FLAGS, "--sp-file", str(script), arg or rel, *(extra or [])],
                     cwd, timeout, nice, env={"SEM2MUTEX_NAMES": names} if names else None)
    if run.status != "ok":
        return FileFacts(rel, run.status, run.error, seconds=run.seconds)
    facts = parse_output(run.stdout)
    if not extra:
        for f in facts:
            f.pop("file", None)
    return FileFacts(rel, "ok", "", facts, seconds=run.seconds)


def run_batch(cwd: Path, rels: list[str], script: Path, timeout: float, nice: int = 10,
              names: str = "", args: dict[str, str] | None = None) -> list[FileFacts]:
    """Several files in one spatch process (--file-groups, one group per file),
    which saves spatch's start-up per file.  If the process fails or times out,
    every file is run again on its own, so one bad file still loses only itself.
    args: for a file the census rewrote, the path of the text spatch reads."""
    args = args or {}
    if len(rels) == 1:
        return [run_spatch(cwd, rels[0], script, timeout, nice, names,
                           arg=args.get(rels[0], ""))]
    fd, groups = tempfile.mkstemp(prefix="sem2mutex-groups-", suffix=".txt")
    with os.fdopen(fd, "w") as fh:
        fh.write("\n\n".join(args.get(rel, rel) for rel in rels) + "\n")
    try:
        batch = run_spatch(cwd, "--file-groups", script, timeout * len(rels), nice, names,
                           extra=[groups])
    finally:
        os.unlink(groups)
    if batch.status != "ok":
        log.info("spatch: batch of %d failed (%s): running its files one by one",
                 len(rels), batch.error)
        return [run_spatch(cwd, rel, script, timeout, nice, names, arg=args.get(rel, ""))
                for rel in rels]
    by_file: dict[str, list[dict]] = {rel: [] for rel in rels}
    back = {os.path.normpath(args.get(rel, rel)): rel for rel in rels}
    for f in batch.facts:
        rel = back.get(os.path.normpath(f.pop("file", "")))
        if rel in by_file:
            by_file[rel].append(f)
    share = batch.seconds / len(rels)
    return [FileFacts(rel, "ok", "", sorted(by_file[rel], key=lambda f: json.dumps(
        f, sort_keys=True)), seconds=share) for rel in rels]


def _batches(todo: list[tuple[str, str]], texts: dict[str, str], jobs: int,
             per_job: int = 2) -> list[list[tuple[str, str]]]:
    """per_job batches for each job, big files spread out so that the workers
    finish together.  Few batches: each spatch start costs about 1.8 s of CPU
    (parsing the combined script's 130 rules, starting its Python), against
    0.1-0.5 s for most files."""
    order = sorted(todo, key=lambda t: (-len(texts.get(t[0], "")), t[0]))
    out: list[list[tuple[str, str]]] = [[] for _ in range(min(len(order), jobs * per_job))]
    for i, item in enumerate(order):
        out[i % len(out)].append(item)
    return out


def collect_facts(root: Path, files: list[str], texts: dict[str, str], cache: Cache,
                  cache_dir: Path, jobs: int | None = None,
                  timeout: float = DEFAULT_TIMEOUT, nice: int = 10,
                  cocci_dir: Path = COCCI_DIR,
                  names: list[str] | None = None,
                  rewritten: set[str] | frozenset[str] = frozenset()) -> dict[str, FileFacts]:
    """Facts for every file, from the cache or from spatch.  names: the census'
    semaphore names, which the escape rule keeps (part of the cache key);
    rewritten: the files whose text in texts is not the file's (function-defining
    macros expanded, census.expand): spatch reads that text, saved under cache_dir."""
    root = Path(root)
    cwd = root if root.is_dir() else root.parent
    script, digest = combined_script(cocci_dir, cache_dir)
    names_arg = ",".join(sorted(set(names or [])))
    digest = hashlib.sha256((digest + "\0" + names_arg).encode()).hexdigest()
    results: dict[str, FileFacts] = {}
    todo: list[tuple[str, str]] = []
    for rel in files:
        text = texts.get(rel)
        if text is None:
            results[rel] = FileFacts(rel, "error", "file could not be read")
            continue
        key = "facts-" + hashlib.sha256(
            (digest + "\0" + text).encode("utf-8", "surrogateescape")).hexdigest()
        hit = cache.get(key)
        if hit is not None:
            results[rel] = FileFacts(rel, hit["status"], hit["error"], hit["facts"])
        else:
            todo.append((rel, key))
    if todo:
        jobs = jobs or os.cpu_count() or 1
        log.info("spatch: %d files to analyse (%d cached), %d jobs", len(todo),
                 len(files) - len(todo), jobs)
        started = time.monotonic()
        done = 0
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            args = _rewritten_paths(cache_dir, {rel: texts[rel] for rel, _ in todo
                                                if rel in rewritten})
            futures = {pool.submit(run_batch, cwd, [rel for rel, _ in batch], script,
                                   timeout, nice, names_arg, args): batch
                       for batch in _batches(todo, texts, jobs)}
            keys = dict(todo)
            for fut in as_completed(futures):
                for ff in fut.result():
                    rel = ff.path
                    results[rel] = ff
                    if ff.status != "timeout":
                        # a timeout may be the machine's load: try again next time
                        cache.put(keys[rel], {"status": ff.status, "error": ff.error,
                                              "facts": ff.facts})
                    done += 1
                    if ff.status != "ok":
                        log.warning("%s: %s", rel, ff.error)
                log.info("spatch: %d/%d files, %.0f s", done, len(todo),
                         time.monotonic() - started)
        slow = sorted((results[rel] for rel, _ in todo), key=lambda f: -f.seconds)[:3]
        log.info("spatch: slowest: %s", ", ".join(f"{f.path} {f.seconds:.1f} s" for f in slow))
    else:
        log.info("spatch: all %d files cached", len(files))
    return results


def _rewritten_paths(cache_dir: Path, texts: dict[str, str]) -> dict[str, str]:
    """Each rewritten text saved as a file (under its content's digest, with the
    file's own name, which spatch reports back), for spatch to read."""
    out = {}
    for rel, text in texts.items():
        digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        path = Path(cache_dir) / "rewritten" / digest / Path(rel).name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_text(text, errors="surrogateescape")
            os.replace(tmp, path)
        out[rel] = str(path.resolve())
    return out
