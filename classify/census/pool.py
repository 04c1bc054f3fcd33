"""Scanning many files on every core.

The census and the call graph read each file with pure-Python regular
expressions: a few hundred files take seconds, and in a cold audit one core
would wait while the other scans.  Forked workers share the parent's memory
(the texts, the macro hints) for free.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Callable

MIN_PARALLEL = 16    # fewer files do not pay for the workers' start


def scan_files(scan: Callable[[str, str], dict],
               items: list[tuple[str, str]]) -> dict[str, dict]:
    """rel -> scan(rel, text) for each (rel, text); scan must be a module-level
    function (the workers get it by name)."""
    workers = len(os.sched_getaffinity(0))
    if len(items) < MIN_PARALLEL or workers < 2:
        return {rel: scan(rel, text) for rel, text in items}
    rels = [rel for rel, _ in items]
    with ProcessPoolExecutor(max_workers=workers,
                             mp_context=multiprocessing.get_context("fork")) as pool:
        return dict(zip(rels, pool.map(scan, rels, [text for _, text in items],
                                       chunksize=4)))
