// SPDX-License-Identifier: GPL-2.0-only
/// Convert ONE struct semaphore, chosen by its sem2mutex id, that is used as a
/// completion (starts at 0, one side waits with down*(), the other signals
/// with up(); the seed's sx8, ide and loop patterns) into a struct completion:
/// the declaration -> struct completion, DEFINE_SEMAPHORE(x, 0) (Linux 6.4
/// and later) -> DECLARE_COMPLETION(x), sema_init(&x, 0) -> init_completion,
/// up -> complete, down -> wait_for_completion, down_trylock(E) ->
/// !try_wait_for_completion(E) (!down_trylock(E) -> try_wait_for_completion(E);
/// down_trylock() returns 0 on success, try_wait_for_completion() true).
///
/// down_interruptible and down_killable return -EINTR, while
/// wait_for_completion_interruptible and _killable return -ERESTARTSYS.  In a
/// condition ("if (down_interruptible(E))", "if (!...)") only zero or not
/// matters and the call is renamed; where the value is stored or returned
/// ("ret = down_interruptible(E);", "int ret = ...;", "return ...;") it is
/// rewritten as "wait_for_completion_interruptible(E) ? -EINTR : 0" so the
/// value passed on stays -EINTR (a maintainer may prefer -ERESTARTSYS: that is
/// a change of behaviour, left to them).  Where the stored value is only
/// tested afterwards, the toolkit drops the mapping again
/// (classify/convert/tested.py).  Any other form is refused.
/// down_timeout(E, J) returns 0 on success and -ETIME on timeout, while
/// wait_for_completion_timeout() returns 0 on timeout: "if (down_timeout(E,
/// J))" and "if (!down_timeout(E, J))" become the negated test, and a stored or
/// returned value becomes "wait_for_completion_timeout(E, J) ? 0 : -ETIME", the
/// value down_timeout() gave.
///
/// The semaphore is chosen with -D sem=ID (or the environment variable
/// SEM2MUTEX_SEM), ID being a sem2mutex id: "[path:]tag.member" for a member of
/// struct tag, "[path:]name" for a global or static, "[path:]name@func" for a
/// local of func.  A member is recognised through the type spatch infers for
/// the expression before "->" or "."; no other semaphore is touched, not even
/// one of the same name in another struct.
///
/// All or nothing, per file: the file is left unchanged, and report mode (and
/// patch mode, on stderr) says why, when the chosen semaphore has a use this
/// script does not convert: a count other than 0 (DEFINE_SEMAPHORE(x) of
/// Linux 6.1 starts at 1), a form of down_timeout() or down_interruptible()
/// named above, an array, its address stored in a pointer or passed to a
/// function other than the semaphore API, any other use, or a member access
/// whose base type spatch cannot infer.
///
/// The includes are left alone, as in sem_to_mutex: sem2mutex adds
/// <linux/completion.h> where the completion is declared and drops
/// <linux/semaphore.h> where no semaphore is left (classify/convert/finish.py).
/// Known limits: a struct declared in a header is converted only when the
/// header is among the files spatch is given; a global shadowed by a local of
/// the same name is not detected.
///
// Confidence: High
// Copyright: (C) 2026 The sem2mutex authors.
// Comments: Part of sem2mutex; needs -D sem=ID, without it nothing matches.
// Options: --no-includes --include-headers
// Keywords: semaphore, completion, complete, wait_for_completion, sema_init

virtual patch
virtual context
virtual org
virtual report

@initialize:python@
@@
import os
import re
import sys

S2M = {"kind": "", "tag": "", "name": "", "func": "", "path": "", "id": ""}

def s2m_select(spec):
    spec = (spec or "").strip()
    if not spec:
        return
    S2M["id"] = spec
    path, sep, rest = spec.rpartition(":")
    S2M["path"] = path if sep else ""
    rest = rest.replace("()", "")
    m = re.fullmatch(r"(\w+)\.(\w+)", rest)
    if m:
        S2M.update(kind="member", tag=m.group(1), name=m.group(2), path="")
        return
    m = re.fullmatch(r"(\w+)(?:@(\w+))?", rest)
    if m:
        S2M.update(kind="var", name=m.group(1), func=m.group(2) or "")
        return
    sys.stderr.write("sem_to_completion: cannot read the semaphore id %r\n" % spec)

s2m_select(os.environ.get("SEM2MUTEX_SEM", ""))

def s2m_member(m):
    return S2M["kind"] == "member" and m == S2M["name"]

def s2m_tag(t):
    return S2M["kind"] == "member" and t == S2M["tag"]

def s2m_type(t):
    return S2M["kind"] == "member" and re.sub(r"\s+", "", t) == "struct" + S2M["tag"]

def s2m_other_type(t):
    t = re.sub(r"\s+", "", t)
    return t.startswith(("struct", "union")) and t != "struct" + S2M["tag"]

def s2m_var(x):
    return S2M["kind"] == "var" and x == S2M["name"]

def s2m_here(p):
    if S2M["kind"] != "var":
        return True
    f = s2m_file(p)
    if S2M["path"] and f != p[0].file:
        f, path = os.path.basename(f), os.path.basename(S2M["path"])
    else:
        path = S2M["path"]
    if path and not (f == path or f.endswith("/" + path)):
        return False
    return not S2M["func"] or p[0].current_element == S2M["func"]

S2M_NEW = {"sema_init": "init_completion", "down": "wait_for_completion",
           "down_interruptible": "wait_for_completion_interruptible",
           "down_killable": "wait_for_completion_killable",
           "down_timeout": "!wait_for_completion_timeout",
           "down_trylock": "!try_wait_for_completion", "up": "complete"}

# Per file: the uses of the chosen semaphore that a rule has accounted for,
# the member accesses whose base type is known, and the refusals.
S2M_SEEN = set()
S2M_TYPED = set()
S2M_COND = set()
S2M_VALUE = set()
S2M_TAKEN = set()
S2M_REFUSED = {}

def s2m_file(p):
    # after a rule modified a function, spatch matches its reparsed copy
    # /tmp/cocci_small_output-<pid>-<hex>-<basename>
    return re.sub(r"^.*/cocci_small_output-\d+-[0-9a-f]+-", "", p[0].file)

def s2m_key(p):
    return (os.path.basename(s2m_file(p)), p[0].line, p[0].column)

def s2m_where(p):
    f = p[0].current_element
    return " in %s()" % f if f and f != "something_else" and f != S2M["name"] else ""

def s2m_refuse(p, why):
    refused = S2M_REFUSED.setdefault(os.path.basename(s2m_file(p)), {})
    if s2m_key(p) in refused:
        return
    where = s2m_where(p)
    msg = "semaphore %s not converted:%s %s" % (S2M["id"], where and where + ",", why)
    refused[s2m_key(p)] = msg
    mode = S2M.get("mode", "")
    if mode == "report":
        coccilib.report.print_report(p[0], msg)
    elif mode == "org":
        coccilib.org.print_todo(p[0], msg)
    elif mode == "patch":
        sys.stderr.write("sem_to_completion: %s:%s: %s\n" % (p[0].file, p[0].line, msg))

def s2m_go(p):
    return s2m_here(p) and not S2M_REFUSED.get(os.path.basename(s2m_file(p)))

@initialize:python@
sem << virtual.sem;
@@
s2m_select(sem)

@script:python depends on patch@
@@
S2M["mode"] = "patch"

@script:python depends on report@
@@
S2M["mode"] = "report"

@script:python depends on org@
@@
S2M["mode"] = "org"

// ---------------------------------------------------------------- uses
// Every use of the chosen semaphore must be accounted for by one of the rules
// below, else the file is refused (all modes).

@s2m_use@
identifier m : script:python() { s2m_member(m) };
type T : script:python() { s2m_type(T) };
T *P;
T S;
position q;
@@

\(P->m@q\|S.m@q\)

@script:python@
q << s2m_use.q;
@@
S2M_TYPED.add(s2m_key(q))

// Initialised to 1 and taken at once (iwpm's nlmsg_request: "sema_init(&s, 1);
// down(&s);"): it starts at 0, and the pair becomes init_completion().
@s2m_taken@
expression E;
position p1, p2;
@@

sema_init@p1(E, 1);
down@p2(E);

@script:python@
p1 << s2m_taken.p1;
p2 << s2m_taken.p2;
@@
S2M_TAKEN.add(s2m_key(p1))
S2M_TAKEN.add(s2m_key(p2))

@s2m_call@
identifier m : script:python() { s2m_member(m) };
type T : script:python() { s2m_type(T) };
T *P;
T S;
identifier x : script:python() { s2m_var(x) };
identifier op = {down, down_interruptible, down_killable, down_trylock, up};
identifier top = {down_timeout};
expression C, J;
position q : script:python() { s2m_here(q) };
position p;
@@

(
op@p(&\(P->m@q\|S.m@q\|x@q\))
|
top@p(&\(P->m@q\|S.m@q\|x@q\), J)
|
sema_init@p(&\(P->m@q\|S.m@q\|x@q\), C)
)

@script:python@
q << s2m_call.q;
p << s2m_call.p;
C << s2m_call.C = "";
@@
S2M_SEEN.add(s2m_key(q))
if C and C.strip() != "0" and not (C.strip() == "1" and s2m_key(p) in S2M_TAKEN):
    s2m_refuse(p, "sema_init() with count %s, not 0: not a completion" % C)

// The forms in which a call whose value matters is converted: a condition
// (all three), a stored or returned value (all three).
@s2m_cond@
identifier op = {down_interruptible, down_killable, down_timeout};
expression list es;
statement S1, S2;
position p;
@@

(
if (op@p(es)) S1 else S2
|
if (op@p(es)) S1
|
if (!op@p(es)) S1 else S2
|
if (!op@p(es)) S1
)

@script:python@
p << s2m_cond.p;
@@
S2M_COND.add(s2m_key(p))

@s2m_value@
identifier op = {down_interruptible, down_killable, down_timeout};
expression list es;
expression R;
identifier v;
type V;
position p;
@@

(
R = op@p(es);
|
V v = op@p(es);
|
return op@p(es);
)

@script:python@
p << s2m_value.p;
@@
S2M_VALUE.add(s2m_key(p))

@s2m_timeout@
identifier m : script:python() { s2m_member(m) };
type T : script:python() { s2m_type(T) };
T *P;
T S;
identifier x : script:python() { s2m_var(x) };
identifier op = {down_interruptible, down_killable, down_timeout};
position q : script:python() { s2m_here(q) };
position p : script:python() { s2m_key(p) not in S2M_COND and s2m_key(p) not in S2M_VALUE };
@@

op@p(&\(P->m@q\|S.m@q\|x@q\), ...)

@script:python@
p << s2m_timeout.p;
op << s2m_timeout.op;
@@
s2m_refuse(p, "%s() in a form this script does not convert" % op)

@s2m_define@
declarer name DEFINE_SEMAPHORE;
identifier x : script:python() { s2m_var(x) };
expression list es;
position p : script:python() { s2m_here(p) };
position q;
@@

DEFINE_SEMAPHORE@p(x@q, es);

@script:python@
p << s2m_define.p;
q << s2m_define.q;
es << s2m_define.es;
@@
S2M_SEEN.add(s2m_key(q))
if str(es).strip() != "0":
    s2m_refuse(p, "DEFINE_SEMAPHORE() with count %s, not 0: not a completion" % (str(es).strip() or "1"))

// Its address stored in a pointer or handed to other code.
@s2m_addr@
identifier m : script:python() { s2m_member(m) };
type T : script:python() { s2m_type(T) };
T *P;
T S;
identifier x : script:python() { s2m_var(x) };
identifier v, f;
type V;
expression X;
position q : script:python() { s2m_here(q) };
@@

(
V v = &\(P->m@q\|S.m@q\|x@q\);
|
X = &\(P->m@q\|S.m@q\|x@q\)
|
f(..., &\(P->m@q\|S.m@q\|x@q\), ...)
)

@script:python@
q << s2m_addr.q;
v << s2m_addr.v = "";
X << s2m_addr.X = "";
f << s2m_addr.f = "";
@@
if s2m_key(q) not in S2M_SEEN:
    S2M_SEEN.add(s2m_key(q))
    if f:
        s2m_refuse(q, "its address is passed to %s(); convert it by hand" % f)
    else:
        s2m_refuse(q, "its address is stored in %s; convert it by hand" % (v or X))

@s2m_other@
identifier m : script:python() { s2m_member(m) };
type T : script:python() { s2m_type(T) };
T *P;
T S;
identifier x : script:python() { s2m_var(x) };
position q : script:python() { s2m_here(q) and s2m_key(q) not in S2M_SEEN };
@@

\(P->m@q\|S.m@q\|x@q\)

@script:python@
q << s2m_other.q;
@@
s2m_refuse(q, "a use this script does not convert")

@s2m_array@
identifier tag : script:python() { s2m_tag(tag) };
identifier m : script:python() { s2m_member(m) };
identifier x : script:python() { s2m_var(x) };
identifier v;
expression N;
position p : script:python() { s2m_here(p) };
@@

(
struct tag { ... struct semaphore m@p[N]; ... };
|
struct tag { ... struct semaphore m@p[N]; ... } v;
|
struct semaphore x@p[N];
)

@script:python@
p << s2m_array.p;
@@
s2m_refuse(p, "an array of semaphores; convert it by hand")

@s2m_initializer@
identifier x : script:python() { s2m_var(x) };
expression I;
position p : script:python() { s2m_here(p) };
@@

struct semaphore x@p = I;

@script:python@
p << s2m_initializer.p;
@@
s2m_refuse(p, "a static initializer; convert it by hand")

// Accesses to a member of the chosen name through a base whose type spatch
// does not know: it cannot tell whether that is the chosen semaphore.
@s2m_other_typed@
identifier m : script:python() { s2m_member(m) };
type T : script:python() { s2m_other_type(T) };
T *P;
T S;
position q;
@@

\(P->m@q\|S.m@q\)

@script:python@
q << s2m_other_typed.q;
@@
S2M_TYPED.add(s2m_key(q))

@s2m_untyped@
identifier m : script:python() { s2m_member(m) };
expression E;
position q : script:python() { s2m_key(q) not in S2M_TYPED };
@@

\(E->m@q\|E.m@q\)

@script:python@
q << s2m_untyped.q;
E << s2m_untyped.E;
@@
s2m_refuse(q, "spatch cannot infer the type of %s, so it cannot tell whether this is the chosen semaphore" % re.sub(r"\s+", "", E))

// The declaration, for the report.
@s2m_decl_r@
identifier tag : script:python() { s2m_tag(tag) };
identifier m : script:python() { s2m_member(m) };
identifier x : script:python() { s2m_var(x) };
identifier v;
position p : script:python() { s2m_here(p) };
@@

(
struct tag { ... struct semaphore m@p; ... };
|
struct tag { ... struct semaphore m@p; ... } v;
|
struct semaphore x@p;
)

// ---------------------------------------------------------------- context

@depends on context@
position p = {s2m_call.p};
identifier op;
@@

* op@p(...)

// ---------------------------------------------------------------- report

@script:python depends on report@
p << s2m_call.p;
op << s2m_call.op = "";
top << s2m_call.top = "";
@@
op = op or top or "sema_init"
new, value = S2M_NEW[op], ""
if s2m_key(p) in S2M_TAKEN:
    new, value = "init_completion", " (initialised to 1 and taken at once: it starts at 0)"
if s2m_key(p) in S2M_VALUE and op == "down_timeout":
    new, value = "wait_for_completion_timeout", " ? 0 : -ETIME, the value passed on stays -ETIME"
elif s2m_key(p) in S2M_VALUE:
    value = " ? -EINTR : 0, the value passed on stays -EINTR"
if s2m_go(p):
    coccilib.report.print_report(p[0], "semaphore %s: %s() becomes %s()%s%s" % (
        S2M["id"], op, new, value, s2m_where(p)))

@script:python depends on report@
p << s2m_decl_r.p;
@@
if s2m_go(p):
    coccilib.report.print_report(p[0], "semaphore %s: struct semaphore becomes struct completion" % S2M["id"])

@script:python depends on report@
p << s2m_define.p;
@@
if s2m_go(p):
    coccilib.report.print_report(p[0], "semaphore %s: DEFINE_SEMAPHORE() becomes DECLARE_COMPLETION()" % S2M["id"])

@script:python depends on org@
p << s2m_call.p;
op << s2m_call.op = "";
top << s2m_call.top = "";
@@
op = op or top or "sema_init"
if s2m_go(p):
    coccilib.org.print_todo(p[0], "semaphore %s: %s() becomes %s()%s" % (
        S2M["id"], op, S2M_NEW[op], s2m_where(p)))

// ---------------------------------------------------------------- patch
// Only when nothing was refused in the file (s2m_go).  The calls first: a
// position cannot be inherited over a rule that modifies the file.

@s2m_ops depends on patch@
position s2m_call.p;
position p2 : script:python() { s2m_go(p2) };
position pc : script:python() { s2m_go(pc) and s2m_key(pc) in S2M_COND };
position pv : script:python() { s2m_go(pv) and s2m_key(pv) in S2M_VALUE };
expression E, J;
@@

(
- sema_init@p@p2(E, 0)
+ init_completion(E)
|
- down@p@p2(E)
+ wait_for_completion(E)
|
- down_interruptible@p@pc(E)
+ wait_for_completion_interruptible(E)
|
- down_interruptible@p@pv(E)
+ wait_for_completion_interruptible(E) ? -EINTR : 0
|
- down_killable@p@pc(E)
+ wait_for_completion_killable(E)
|
- down_killable@p@pv(E)
+ wait_for_completion_killable(E) ? -EINTR : 0
|
- !down_timeout@p@pc(E, J)
+ wait_for_completion_timeout(E, J)
|
- down_timeout@p@pc(E, J)
+ !wait_for_completion_timeout(E, J)
|
- down_timeout@p@pv(E, J)
+ wait_for_completion_timeout(E, J) ? 0 : -ETIME
|
- !down_trylock@p@p2(E)
+ try_wait_for_completion(E)
|
- down_trylock@p@p2(E)
+ !try_wait_for_completion(E)
|
- up@p@p2(E)
+ complete(E)
)

// sema_init(E, 1) then down(E), converted above to wait_for_completion(E):
// the pair is an initialisation to 0.
@s2m_taken_init depends on patch@
expression E;
@@

- sema_init(E, 1);
- wait_for_completion(E);
+ init_completion(E);

@s2m_decl depends on patch@
identifier tag : script:python() { s2m_tag(tag) };
identifier m : script:python() { s2m_member(m) };
identifier x : script:python() { s2m_var(x) };
identifier v;
position p : script:python() { s2m_go(p) };
@@

(
struct tag { ...
- struct semaphore m@p;
+ struct completion m;
  ... };
|
struct tag { ...
- struct semaphore m@p;
+ struct completion m;
  ... } v;
|
- struct semaphore x@p;
+ struct completion x;
)

@s2m_def depends on patch@
declarer name DEFINE_SEMAPHORE, DECLARE_COMPLETION;
identifier x : script:python() { s2m_var(x) };
position p : script:python() { s2m_go(p) };
@@

- DEFINE_SEMAPHORE@p(x, 0);
+ DECLARE_COMPLETION(x);
