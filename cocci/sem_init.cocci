// SPDX-License-Identifier: GPL-2.0-only
/// List the initial counts of struct semaphores: sema_init(E, C),
/// DEFINE_SEMAPHORE(x) (count 1, Linux up to 6.3), DEFINE_SEMAPHORE(x, C)
/// (Linux 6.4 and later) and __SEMAPHORE_INITIALIZER(x, C).  A count of 1 is a
/// candidate mutex, 0 a candidate completion, more a counting semaphore.
/// Symbolic counts are printed as written; sem2mutex resolves the macros it
/// can.  Initialisers inside designated struct initialisers may be missed
/// when spatch cannot parse them; the sem2mutex census finds them by grep.
///
// Confidence: High
// Copyright: (C) 2026 The sem2mutex authors.
// Comments: Part of sem2mutex; -D facts prints one JSON line per initialiser.
// Options: --no-includes --include-headers
// Keywords: semaphore, sema_init, DEFINE_SEMAPHORE, __SEMAPHORE_INITIALIZER

virtual context
virtual org
virtual report
virtual facts

@sem_init_call@
expression E, C;
position p;
@@

sema_init@p(E, C)

@sem_init_define@
declarer name DEFINE_SEMAPHORE;
identifier x;
expression list es;
position p;
@@

DEFINE_SEMAPHORE@p(x, es);

@sem_init_static@
expression x, C;
position p;
@@

__SEMAPHORE_INITIALIZER@p(x, C)

@depends on context@
expression E, C;
@@

* sema_init(E, C)

@script:python depends on report@
E << sem_init_call.E;
C << sem_init_call.C;
p << sem_init_call.p;
@@
coccilib.report.print_report(p[0], "semaphore %s initialised with count %s" % (E, C))

@script:python depends on report@
x << sem_init_define.x;
es << sem_init_define.es;
p << sem_init_define.p;
@@
coccilib.report.print_report(p[0], "semaphore %s defined with count %s" % (x, str(es).strip() or "1"))

@script:python depends on report@
x << sem_init_static.x;
C << sem_init_static.C;
p << sem_init_static.p;
@@
coccilib.report.print_report(p[0], "semaphore %s initialised with count %s" % (x, C))

@script:python depends on org@
E << sem_init_call.E;
C << sem_init_call.C;
p << sem_init_call.p;
@@
coccilib.org.print_todo(p[0], "semaphore %s initialised with count %s" % (E, C))

@script:python depends on facts@
E << sem_init_call.E;
C << sem_init_call.C;
p << sem_init_call.p;
@@
import json
print("SEM2MUTEX " + json.dumps({"fact": "init", "form": "sema_init", "expr": str(E), "count": str(C),
      "func": p[0].current_element, "file": p[0].file, "line": int(p[0].line), "col": int(p[0].column)}, sort_keys=True))

@script:python depends on facts@
x << sem_init_define.x;
es << sem_init_define.es;
p << sem_init_define.p;
@@
import json
print("SEM2MUTEX " + json.dumps({"fact": "init", "form": "DEFINE_SEMAPHORE", "expr": str(x), "count": str(es).strip() or "1",
      "func": p[0].current_element, "file": p[0].file, "line": int(p[0].line), "col": int(p[0].column)}, sort_keys=True))

@script:python depends on facts@
x << sem_init_static.x;
C << sem_init_static.C;
p << sem_init_static.p;
@@
import json
print("SEM2MUTEX " + json.dumps({"fact": "init", "form": "__SEMAPHORE_INITIALIZER", "expr": str(x), "count": str(C),
      "func": p[0].current_element, "file": p[0].file, "line": int(p[0].line), "col": int(p[0].column)}, sort_keys=True))
