// SPDX-License-Identifier: GPL-2.0-only
/// Find struct semaphores whose address is handed to other code: passed as an
/// argument to a function that is not part of the semaphore API, or stored
/// with "X = &E".  The receiving code may down() or up() the semaphore where
/// this file cannot see it, so its class cannot be decided from this file.
/// The semaphore is recognised by its name, the last identifier of E: one of
/// the comma-separated names in the environment variable SEM2MUTEX_NAMES (the
/// sem2mutex census sets it), or, when that is unset, any name containing
/// "sem": false positives on other objects so named, false negatives on
/// semaphores named otherwise.
///
// Confidence: Moderate
// Copyright: (C) 2026 The sem2mutex authors.
// Comments: Part of sem2mutex; -D facts prints one JSON line per candidate.
// Options: --no-includes --include-headers
// Keywords: semaphore, pointer, escape

virtual context
virtual org
virtual report
virtual facts

@initialize:python@
@@
import os
import re

def sem2mutex_last_name(e):
    names = re.findall(r"[A-Za-z_]\w*", re.sub(r"\[[^\]]*\]", "", e))
    return names[-1] if names else ""

SEM2MUTEX_NAMES = set(filter(None, os.environ.get("SEM2MUTEX_NAMES", "").split(",")))

def sem2mutex_semlike(e):
    last = sem2mutex_last_name(e)
    if SEM2MUTEX_NAMES:
        return last in SEM2MUTEX_NAMES
    return "sem" in last.lower()

@sem_escape_r@
identifier f !~ "^(sema_init|down|down_interruptible|down_killable|down_trylock|down_timeout|up|sizeof|typeof|memset|memcpy|lockdep_set_class|lockdep_set_class_and_name|lockdep_init_map|DEBUG_LOCKS_WARN_ON|WARN_ON|BUG_ON|offsetof)$";
expression E : script:python() { sem2mutex_semlike(E) };
position p;
@@

f@p(..., &E, ...)

@sem_escape_a@
expression E : script:python() { sem2mutex_semlike(E) };
expression X;
position p;
@@

X = &E@p

@depends on context@
expression E;
position p = {sem_escape_r.p, sem_escape_a.p};
@@

* &E@p

@script:python depends on report@
E << sem_escape_r.E;
p << sem_escape_r.p;
@@
coccilib.report.print_report(p[0], "address of semaphore %s handed to other code in %s()" % (E, p[0].current_element))

@script:python depends on report@
E << sem_escape_a.E;
p << sem_escape_a.p;
@@
coccilib.report.print_report(p[0], "address of semaphore %s handed to other code in %s()" % (E, p[0].current_element))

@script:python depends on org@
E << sem_escape_r.E;
p << sem_escape_r.p;
@@
coccilib.org.print_todo(p[0], "address of semaphore %s handed to other code in %s()" % (E, p[0].current_element))

@script:python depends on org@
E << sem_escape_a.E;
p << sem_escape_a.p;
@@
coccilib.org.print_todo(p[0], "address of semaphore %s handed to other code in %s()" % (E, p[0].current_element))

@script:python depends on facts@
E << sem_escape_r.E;
p << sem_escape_r.p;
f << sem_escape_r.f;
@@
import json
print("SEM2MUTEX " + json.dumps({"fact": "escape", "expr": E, "name": sem2mutex_last_name(E), "to": f + "()",
      "func": p[0].current_element, "file": p[0].file, "line": int(p[0].line), "col": int(p[0].column)},
      sort_keys=True))
@script:python depends on facts@
E << sem_escape_a.E;
X << sem_escape_a.X;
p << sem_escape_a.p;
@@
import json
print("SEM2MUTEX " + json.dumps({"fact": "escape", "expr": E, "name": sem2mutex_last_name(E), "to": "an assignment",
      "lhs": X, "func": p[0].current_element, "file": p[0].file, "line": int(p[0].line),
      "col": int(p[0].column)}, sort_keys=True))
