// SPDX-License-Identifier: GPL-2.0-only
/// List every struct semaphore operation -- sema_init, down, down_interruptible,
/// down_killable, down_trylock, down_timeout and up -- with the function it is
/// in.  The operation is recognised by the API name, not by the type of its
/// argument (type inference depends on which headers are parsed), so a file
/// that defines its own function called up() or down() gives false positives;
/// sem2mutex resolves every argument against its census of semaphores.
/// Operations inside functions that spatch cannot parse are missed: the
/// sem2mutex census, which is grep based, names them.
///
// Confidence: High
// Copyright: (C) 2026 The sem2mutex authors.
// Comments: Part of sem2mutex; -D facts prints one JSON line per operation.
// Options: --no-includes --include-headers
// Keywords: semaphore, down, up, sema_init

virtual context
virtual org
virtual report
virtual facts

@sem_ops_r@
identifier op = {sema_init, down, down_interruptible, down_killable,
                 down_trylock, down_timeout, up};
expression E;
position p;
@@

op@p(E, ...)

@depends on context@
identifier op = {sema_init, down, down_interruptible, down_killable,
                 down_trylock, down_timeout, up};
expression E;
@@

* op(E, ...)

@script:python depends on report@
op << sem_ops_r.op;
E << sem_ops_r.E;
p << sem_ops_r.p;
@@
coccilib.report.print_report(p[0], "%s() on %s in %s()" % (op, E, p[0].current_element))

@script:python depends on org@
op << sem_ops_r.op;
E << sem_ops_r.E;
p << sem_ops_r.p;
@@
coccilib.org.print_todo(p[0], "%s() on %s in %s()" % (op, E, p[0].current_element))

@script:python depends on facts@
op << sem_ops_r.op;
E << sem_ops_r.E;
p << sem_ops_r.p;
@@
import json
print("SEM2MUTEX " + json.dumps({"fact": "op", "op": op, "expr": E,
      "func": p[0].current_element, "file": p[0].file, "line": int(p[0].line), "col": int(p[0].column)},
      sort_keys=True))
