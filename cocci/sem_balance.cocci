// SPDX-License-Identifier: GPL-2.0-only
/// Find struct semaphore acquisitions (down, down_interruptible, down_killable,
/// down_trylock) that are not released by up() on the same expression on every
/// path of the same function -- the first requirement for a semaphore to be a
/// mutex.  Recognised acquisition forms: "down(E);", "if (down_xxx(E)) S" and
/// "ret = down_xxx(E); if (ret) S" (S is the failure branch).  Other forms
/// (e.g. "if (!down_trylock(E)) {...}", loops around the down) are reported as
/// not provably released: false positives, never false negatives, by design.
/// Lock helpers that return with the semaphore held, and semaphores used as
/// completions, are reported too: that is what they are.
///
// Confidence: Moderate
// Copyright: (C) 2026 The sem2mutex authors.
// Comments: Part of sem2mutex; -D facts prints one JSON line per released down.
// Options: --no-includes --include-headers
// Keywords: semaphore, down, up, mutex, unlock

virtual context
virtual org
virtual report
virtual facts

@sem_bal_r forall@
expression E;
identifier ret;
type T;
statement S;
position p;
@@

(
down@p(E);
|
if (\(down_interruptible@p\|down_killable@p\|down_trylock@p\)(E)) S
|
ret = \(down_interruptible@p\|down_killable@p\)(E);
if (ret) S
|
T ret = \(down_interruptible@p\|down_killable@p\)(E);
... when != ret
if (ret) S
)
... when != E
    when strict
up(E);

@sem_unbal_r@
identifier op = {down, down_interruptible, down_killable, down_trylock};
expression E;
position p != sem_bal_r.p;
@@

op@p(E)

@depends on context@
identifier op = {down, down_interruptible, down_killable, down_trylock};
expression E;
position sem_unbal_r.p;
@@

* op@p(E)

@script:python depends on report@
op << sem_unbal_r.op;
E << sem_unbal_r.E;
p << sem_unbal_r.p;
@@
coccilib.report.print_report(p[0], "%s() on %s is not released by up() on every path of %s()" % (op, E, p[0].current_element))

@script:python depends on org@
op << sem_unbal_r.op;
E << sem_unbal_r.E;
p << sem_unbal_r.p;
@@
coccilib.org.print_todo(p[0], "%s() on %s is not released by up() on every path of %s()" % (op, E, p[0].current_element))

@script:python depends on facts@
E << sem_bal_r.E;
p << sem_bal_r.p;
@@
import json
print("SEM2MUTEX " + json.dumps({"fact": "balanced", "expr": E,
      "func": p[0].current_element, "file": p[0].file, "line": int(p[0].line), "col": int(p[0].column)},
      sort_keys=True))
