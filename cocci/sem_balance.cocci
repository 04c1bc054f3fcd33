// SPDX-License-Identifier: GPL-2.0-only
/// Find struct semaphore acquisitions (down, down_interruptible, down_killable,
/// down_trylock) that are not released by up() on the same expression on every
/// path of the same function -- the first requirement for a semaphore to be a
/// mutex.  Recognised acquisition forms, each proved by a rule of its own:
/// "down(E);", "if (down_xxx(E)) S", "ret = down_xxx(E); if (ret) S",
/// "T ret = down_xxx(E); ... if (ret) S" (S the failure branch: return, goto,
/// or anything that does not reach up(E)), and "if (!down_trylock(E)) {... up(E);}"
/// or "if (down_trylock(E) == 0) {...}".  up() may sit at a label that every
/// path reaches (goto unwind).  Other forms (loops around the down, a test of a
/// copy of ret, ...) are reported as not provably released: false positives,
/// never false negatives, by design.  Lock helpers that return with the
/// semaphore held, and semaphores used as completions, are reported too: that
/// is what they are.
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

// Why one rule per form, not one rule with a disjunction of the forms: "..."
// is a shortest path, so spatch guards the "..." after a disjunction with "not
// the LAST statement of any branch".  For "ret = down_xxx(E); if (ret) S" that
// is "if (ret) S" with ret bound in no other branch: any "if (x) S" (and by the
// isos "if (x != NULL)", "if (x != 0)").  Under forall one such test between
// down(E) and up(E) fails the AU, so the "down(E);" branch matched nothing.

// down(E); ... up(E);
@sem_bal_down forall@
expression E;
position p;
@@

down@p(E);
... when != E
    when strict
up(E);

// if (down_xxx(E)) S ... up(E);  (S: the failure branch, not followed)
@sem_bal_if forall@
expression E;
statement S;
position p;
@@

if (\(down_interruptible@p\|down_killable@p\|down_trylock@p\)(E)) S
... when != E
    when strict
up(E);

// ret = down_xxx(E); if (ret) S ... up(E);
// Two rules: the test found first, then the "..." from it.  The "..." after
// "if@q (ret) S" is guarded by that statement; with q bound it is this very
// test, not a later "if (ret)" on a reused ret inside the critical section.
@sem_bal_assign_test@
expression E;
identifier ret;
statement S;
position p, q;
@@

ret = \(down_interruptible@p\|down_killable@p\)(E);
if@q (\(ret\|ret < 0\)) S

@sem_bal_assign forall@
expression sem_bal_assign_test.E;
identifier sem_bal_assign_test.ret;
statement S;
position sem_bal_assign_test.p, sem_bal_assign_test.q;
position pb;
@@

ret = \(down_interruptible@p@pb\|down_killable@p@pb\)(E);
if@q (\(ret\|ret < 0\)) S
... when != E
    when strict
up(E);

// ret = down_xxx(E); if (ret) S else { ... up(E); ... }: the success path is the
// else branch (bnx2x_prev_mark_path), and every path through it releases.
@sem_bal_assign_else forall@
expression E;
identifier ret;
statement S;
position pb;
@@

ret = \(down_interruptible@pb\|down_killable@pb\)(E);
if (\(ret\|ret < 0\)) S else {
  ... when != E
      when strict
  up(E);
  ...
}

// if (down_xxx(E)) S else { ... up(E); ... }
@sem_bal_if_else forall@
expression E;
statement S;
position pb;
@@

if (\(down_interruptible@pb\|down_killable@pb\|down_trylock@pb\)(E)) S else {
  ... when != E
      when strict
  up(E);
  ...
}

// T ret = down_xxx(E); ... if (ret) S ... up(E);  (same two steps)
@sem_bal_decl_test@
expression E;
identifier ret;
type T;
statement S;
position p, q;
@@

T ret = \(down_interruptible@p\|down_killable@p\)(E);
... when != ret
    when != E
if@q (\(ret\|ret < 0\)) S

@sem_bal_decl forall@
expression sem_bal_decl_test.E;
identifier sem_bal_decl_test.ret;
type sem_bal_decl_test.T;
statement S;
position sem_bal_decl_test.p, sem_bal_decl_test.q;
position pb;
@@

T ret = \(down_interruptible@p@pb\|down_killable@p@pb\)(E);
... when != ret
    when != E
    when strict
if@q (\(ret\|ret < 0\)) S
... when != E
    when strict
up(E);

// if (!down_trylock(E)) { ... up(E); ... }  -- held in the true branch only
@sem_bal_trylock forall@
expression E;
position p;
@@

if (\(!down_trylock@p(E)\|down_trylock@p(E) == 0\)) {
... when != E
    when strict
up(E);
...
}

@sem_unbal_r@
identifier op = {down, down_interruptible, down_killable, down_trylock};
expression E;
position p != {sem_bal_down.p, sem_bal_if.p, sem_bal_assign.pb, sem_bal_decl.pb,
               sem_bal_trylock.p, sem_bal_assign_else.pb, sem_bal_if_else.pb};
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
E << sem_bal_down.E;
p << sem_bal_down.p;
@@
import json
print("SEM2MUTEX " + json.dumps({"fact": "balanced", "expr": E,
      "func": p[0].current_element, "file": p[0].file, "line": int(p[0].line), "col": int(p[0].column)},
      sort_keys=True))

@script:python depends on facts@
E << sem_bal_if.E;
p << sem_bal_if.p;
@@
import json
print("SEM2MUTEX " + json.dumps({"fact": "balanced", "expr": E,
      "func": p[0].current_element, "file": p[0].file, "line": int(p[0].line), "col": int(p[0].column)},
      sort_keys=True))

@script:python depends on facts@
E << sem_bal_assign_test.E;
p << sem_bal_assign.pb;
@@
import json
print("SEM2MUTEX " + json.dumps({"fact": "balanced", "expr": E,
      "func": p[0].current_element, "file": p[0].file, "line": int(p[0].line), "col": int(p[0].column)},
      sort_keys=True))

@script:python depends on facts@
E << sem_bal_decl_test.E;
p << sem_bal_decl.pb;
@@
import json
print("SEM2MUTEX " + json.dumps({"fact": "balanced", "expr": E,
      "func": p[0].current_element, "file": p[0].file, "line": int(p[0].line), "col": int(p[0].column)},
      sort_keys=True))

@script:python depends on facts@
E << sem_bal_trylock.E;
p << sem_bal_trylock.p;
@@
import json
print("SEM2MUTEX " + json.dumps({"fact": "balanced", "expr": E,
      "func": p[0].current_element, "file": p[0].file, "line": int(p[0].line), "col": int(p[0].column)},
      sort_keys=True))

@script:python depends on facts@
E << sem_bal_assign_else.E;
p << sem_bal_assign_else.pb;
@@
import json
print("SEM2MUTEX " + json.dumps({"fact": "balanced", "expr": E,
      "func": p[0].current_element, "file": p[0].file, "line": int(p[0].line), "col": int(p[0].column)},
      sort_keys=True))

@script:python depends on facts@
E << sem_bal_if_else.E;
p << sem_bal_if_else.pb;
@@
import json
print("SEM2MUTEX " + json.dumps({"fact": "balanced", "expr": E,
      "func": p[0].current_element, "file": p[0].file, "line": int(p[0].line), "col": int(p[0].column)},
      sort_keys=True))
