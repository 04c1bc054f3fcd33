// SPDX-License-Identifier: GPL-2.0-only
/// Find down_trylock() and down_timeout() on struct semaphores.  Neither maps
/// one to one onto the mutex API: down_trylock() returns 0 on success where
/// mutex_trylock() returns 1, and mutexes have no timed lock, so a semaphore
/// taken with down_timeout() stays a semaphore.  No false positives, except
/// files that define their own functions of these names.
///
// Confidence: High
// Copyright: (C) 2026 The sem2mutex authors.
// Comments: Part of sem2mutex; -D facts prints one JSON line per use.
// Options: --no-includes --include-headers
// Keywords: semaphore, down_trylock, down_timeout

virtual context
virtual org
virtual report
virtual facts

@sem_tt_r@
identifier op = {down_trylock, down_timeout};
expression E;
position p;
@@

op@p(E, ...)

@depends on context@
identifier op = {down_trylock, down_timeout};
expression E;
@@

* op(E, ...)

@script:python depends on report@
op << sem_tt_r.op;
E << sem_tt_r.E;
p << sem_tt_r.p;
@@
msg = {"down_trylock": "inverted return value against mutex_trylock()",
       "down_timeout": "no mutex equivalent: stays a semaphore"}[op]
coccilib.report.print_report(p[0], "%s() on %s in %s(): %s" % (op, E, p[0].current_element, msg))

@script:python depends on org@
op << sem_tt_r.op;
E << sem_tt_r.E;
p << sem_tt_r.p;
@@
coccilib.org.print_todo(p[0], "%s() on %s in %s()" % (op, E, p[0].current_element))

@script:python depends on facts@
op << sem_tt_r.op;
E << sem_tt_r.E;
p << sem_tt_r.p;
@@
import json
print("SEM2MUTEX " + json.dumps({"fact": op, "expr": E,
      "func": p[0].current_element, "file": p[0].file, "line": int(p[0].line), "col": int(p[0].column)}, sort_keys=True))
