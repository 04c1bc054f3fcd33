// SPDX-License-Identifier: GPL-2.0-only
/// Find struct semaphore operations in atomic context: in an interrupt
/// handler registered with request_irq() and friends, a timer, hrtimer or
/// tasklet callback (directly, or one call level deep in a function of the
/// same file), or after spin_lock*, read_lock*, write_lock*,
/// local_irq_disable, local_irq_save, local_bh_disable, preempt_disable or
/// rcu_read_lock with no release of the same lock (or the matching enable) in
/// between.  In a callback, up() and down_trylock() are legal for a semaphore
/// but not for a mutex; a sleeping down() anywhere here is a bug.
/// False negatives: callbacks registered in another file or through an ops
/// table, callers more than one level up, locks taken by a caller or a helper.
/// False positives: the primary handler of request_threaded_irq() is counted
/// even when it only wakes the thread; a lock released through a helper.
///
// Confidence: Moderate
// Copyright: (C) 2026 The sem2mutex authors.
// Comments: Part of sem2mutex; -D facts prints one JSON line per operation.
// Options: --no-includes --include-headers
// Keywords: semaphore, up, down_trylock, interrupt, timer, tasklet, spinlock

virtual context
virtual org
virtual report
virtual facts

@initialize:python@
@@
# (file, callback) -> line of its registration;
# (file, function called by a callback) -> (callback, line)
SEM2MUTEX_CALLBACKS = {}
SEM2MUTEX_CALLEES = {}

def sem2mutex_cb_why(p):
    f = (p[0].file, p[0].current_element)
    if f in SEM2MUTEX_CALLBACKS:
        return "in %s(), an interrupt/timer/tasklet callback registered at line %s" % (
            f[1], SEM2MUTEX_CALLBACKS[f])
    if f in SEM2MUTEX_CALLEES:
        return "called from %s(), an interrupt/timer/tasklet callback registered at line %s" % SEM2MUTEX_CALLEES[f]
    return ""

@sem_atomic_locked exists@
identifier op = {up, down_trylock, down, down_interruptible, down_killable,
                 down_timeout};
expression L, F, E;
position p, q;
@@

(
spin_lock@q(L);
... when != \(spin_unlock(L)\|spin_unlock_irq(L)\|spin_unlock_irqrestore(L, ...)\|spin_unlock_bh(L)\)
|
spin_lock_irq@q(L);
... when != \(spin_unlock(L)\|spin_unlock_irq(L)\|spin_unlock_irqrestore(L, ...)\)
|
spin_lock_irqsave@q(L, F);
... when != \(spin_unlock(L)\|spin_unlock_irq(L)\|spin_unlock_irqrestore(L, ...)\)
|
spin_lock_bh@q(L);
... when != \(spin_unlock(L)\|spin_unlock_bh(L)\)
|
raw_spin_lock@q(L);
... when != \(raw_spin_unlock(L)\|raw_spin_unlock_irq(L)\|raw_spin_unlock_irqrestore(L, ...)\)
|
raw_spin_lock_irqsave@q(L, F);
... when != \(raw_spin_unlock(L)\|raw_spin_unlock_irq(L)\|raw_spin_unlock_irqrestore(L, ...)\)
|
\(read_lock@q(L);\|read_lock_irq@q(L);\|read_lock_bh@q(L);\|read_lock_irqsave@q(L, F);\)
... when != \(read_unlock(L)\|read_unlock_irq(L)\|read_unlock_bh(L)\|read_unlock_irqrestore(L, ...)\)
|
\(write_lock@q(L);\|write_lock_irq@q(L);\|write_lock_bh@q(L);\|write_lock_irqsave@q(L, F);\)
... when != \(write_unlock(L)\|write_unlock_irq(L)\|write_unlock_bh(L)\|write_unlock_irqrestore(L, ...)\)
|
local_irq_save@q(F);
... when != local_irq_restore(F)
|
local_irq_disable@q();
... when != local_irq_enable()
|
local_bh_disable@q();
... when != local_bh_enable()
|
preempt_disable@q();
... when != \(preempt_enable()\|preempt_enable_no_resched()\)
|
rcu_read_lock@q();
... when != rcu_read_unlock()
)
op@p(E, ...)

@sem_atomic_reg@
identifier h;
expression E1, E2;
position r;
@@

(
request_irq@r(E1, h, ...)
|
request_threaded_irq@r(E1, h, ...)
|
request_any_context_irq@r(E1, h, ...)
|
request_percpu_irq@r(E1, h, ...)
|
devm_request_irq@r(E1, E2, h, ...)
|
devm_request_threaded_irq@r(E1, E2, h, ...)
|
devm_request_any_context_irq@r(E1, E2, h, ...)
|
timer_setup@r(E1, h, ...)
|
setup_timer@r(E1, h, ...)
|
tasklet_init@r(E1, h, ...)
|
tasklet_setup@r(E1, h)
|
E1.function@r = h
|
E1->function@r = h
)

@script:python@
h << sem_atomic_reg.h;
r << sem_atomic_reg.r;
@@
SEM2MUTEX_CALLBACKS.setdefault((r[0].file, h), r[0].line)

@sem_atomic_call@
identifier g;
position c;
@@

g@c(...)

@script:python@
g << sem_atomic_call.g;
c << sem_atomic_call.c;
@@
h = (c[0].file, c[0].current_element)
if h in SEM2MUTEX_CALLBACKS and (c[0].file, g) not in SEM2MUTEX_CALLBACKS:
    SEM2MUTEX_CALLEES.setdefault((c[0].file, g), (h[1], SEM2MUTEX_CALLBACKS[h]))

@sem_atomic_cb@
identifier op = {up, down_trylock, down, down_interruptible, down_killable,
                 down_timeout};
expression E;
position p;
@@

op@p(E, ...)

@depends on context@
identifier op = {up, down_trylock, down, down_interruptible, down_killable,
                 down_timeout};
expression E;
position p = {sem_atomic_locked.p, sem_atomic_cb.p};
@@

* op@p(E, ...)

@script:python depends on report@
op << sem_atomic_locked.op;
E << sem_atomic_locked.E;
p << sem_atomic_locked.p;
q << sem_atomic_locked.q;
@@
coccilib.report.print_report(p[0], "%s() on %s in atomic context in %s(): %s" % (op, E, p[0].current_element, "after the lock or irq/preempt disable at line %s" % q[0].line))

@script:python depends on org@
op << sem_atomic_locked.op;
E << sem_atomic_locked.E;
p << sem_atomic_locked.p;
q << sem_atomic_locked.q;
@@
coccilib.org.print_todo(p[0], "%s() on %s in atomic context in %s(): %s" % (op, E, p[0].current_element, "after the lock or irq/preempt disable at line %s" % q[0].line))

@script:python depends on facts@
op << sem_atomic_locked.op;
E << sem_atomic_locked.E;
p << sem_atomic_locked.p;
q << sem_atomic_locked.q;
@@
import json
print("SEM2MUTEX " + json.dumps({"fact": "atomic", "op": op, "expr": E, "func": p[0].current_element, "file": p[0].file, "line": int(p[0].line), "col": int(p[0].column), "why": "after the lock or irq/preempt disable at line %s" % q[0].line}, sort_keys=True))

@script:python depends on report@
op << sem_atomic_cb.op;
E << sem_atomic_cb.E;
p << sem_atomic_cb.p;
@@
why = sem2mutex_cb_why(p)
if why:
    coccilib.report.print_report(p[0], "%s() on %s in atomic context in %s(): %s" % (op, E, p[0].current_element, why))

@script:python depends on org@
op << sem_atomic_cb.op;
E << sem_atomic_cb.E;
p << sem_atomic_cb.p;
@@
why = sem2mutex_cb_why(p)
if why:
    coccilib.org.print_todo(p[0], "%s() on %s in atomic context in %s(): %s" % (op, E, p[0].current_element, why))

@script:python depends on facts@
op << sem_atomic_cb.op;
E << sem_atomic_cb.E;
p << sem_atomic_cb.p;
@@
import json
why = sem2mutex_cb_why(p)
if why:
    print("SEM2MUTEX " + json.dumps({"fact": "atomic", "op": op, "expr": E, "func": p[0].current_element, "file": p[0].file, "line": int(p[0].line), "col": int(p[0].column), "why": why}, sort_keys=True))
