// SPDX-License-Identifier: GPL-2.0-only
/// Mark ONE struct semaphore, chosen by its sem2mutex id, as a real counting
/// semaphore: struct semaphore -> struct arch_semaphore (kernel-patches 0001).
/// With CONFIG_DEBUG_MUTEX_FULL every struct semaphore that is not marked
/// becomes a debug mutex; the marked ones stay counting semaphores.
///
/// Only types change, never a call: the semaphore API takes both types.
/// Changed are the declaration (global, static, local, struct member, also an
/// array of them, with or without an initializer), DEFINE_SEMAPHORE(x) ->
/// DEFINE_ARCH_SEMAPHORE(x) (DEFINE_SEMAPHORE(x, n) of Linux 6.4 and later ->
/// DEFINE_ARCH_SEMAPHORE(x, n)), and the local pointers that hold its address,
/// so that a DEBUG_MUTEX_FULL build still has one type per semaphore:
///   struct semaphore *p = &X;  or  p = &X;   -> struct arch_semaphore *p
///   a function of the file returning such a p -> returns struct arch_semaphore *
///   a local that receives that function's result -> struct arch_semaphore *
/// (net/rxrpc/call_object.c: rxrpc_get_call_slot()).
///
/// The semaphore is chosen with -D sem=ID (or the environment variable
/// SEM2MUTEX_SEM), ID being a sem2mutex id: "[path:]tag.member" for a member of
/// struct tag ("tag.outer.member" for a member of its anonymous struct member
/// outer), "[path:]name" for a global or static, "[path:]name@func" for a
/// local of func.  No other semaphore is touched, not even one of the same
/// name in another struct.  The selection code is the one of sem_to_mutex.cocci
/// (spatch has no include path relative to the script, so it is repeated).
///
/// All or nothing, per file: the file is left unchanged, and report mode (and
/// patch mode, on stderr) says why, when the address of the chosen semaphore
/// goes anywhere else than the semaphore API and the local pointers above
/// (another function's parameter, a struct field): that place must take a
/// struct arch_semaphore * too, by hand.
/// Known limits: a struct declared in a header is marked only when the header
/// is among the files spatch is given; a pointer is followed through one
/// function return, not through parameters.
///
// Confidence: High
// Copyright: (C) 2026 The sem2mutex authors.
// Comments: Part of sem2mutex; needs -D sem=ID, without it nothing matches.
// Options: --no-includes --include-headers
// Keywords: semaphore, arch_semaphore, DEFINE_ARCH_SEMAPHORE, DEBUG_MUTEX_FULL

virtual patch
virtual context
virtual org
virtual report

@initialize:python@
@@
import os
import re
import sys

S2A = {"kind": "", "tag": "", "outer": "", "name": "", "func": "", "path": "",
       "id": "", "mode": ""}

def s2a_select(spec):
    spec = (spec or "").strip()
    if not spec:
        return
    S2A["id"] = spec
    path, sep, rest = spec.rpartition(":")
    S2A["path"] = path if sep else ""
    m = re.fullmatch(r"(\w+)\.(?:(\w+)\.)?(\w+)", rest)
    if m:
        S2A.update(kind="member", tag=m.group(1), outer=m.group(2) or "",
                   name=m.group(3), path="")
        return
    m = re.fullmatch(r"(\w+)(?:@(\w+))?", rest)
    if m:
        S2A.update(kind="var", name=m.group(1), func=m.group(2) or "")
        return
    sys.stderr.write("sem_to_arch: cannot read the semaphore id %r\n" % spec)

s2a_select(os.environ.get("SEM2MUTEX_SEM", ""))

def s2a_member(m):
    return S2A["kind"] == "member" and not S2A["outer"] and m == S2A["name"]

# a member of an anonymous struct member: "tag.outer.name" (mlx5_cmd.vars.sem)
def s2a_inner(m):
    return S2A["kind"] == "member" and S2A["outer"] != "" and m == S2A["name"]

def s2a_outer(o):
    return S2A["kind"] == "member" and o == S2A["outer"]

def s2a_tag(t):
    return S2A["kind"] == "member" and t == S2A["tag"]

def s2a_type(t):
    return S2A["kind"] == "member" and re.sub(r"\s+", "", t) == "struct" + S2A["tag"]

def s2a_var(x):
    return S2A["kind"] == "var" and x == S2A["name"]

def s2a_file(p):
    # after a rule modified a function, spatch matches its reparsed copy
    # /tmp/cocci_small_output-<pid>-<hex>-<basename>
    return re.sub(r"^.*/cocci_small_output-\d+-[0-9a-f]+-", "", p[0].file)

def s2a_here(p):
    if S2A["kind"] != "var":
        return True
    f = s2a_file(p)
    if S2A["path"] and f != p[0].file:
        f, path = os.path.basename(f), os.path.basename(S2A["path"])
    else:
        path = S2A["path"]
    if path and not (f == path or f.endswith("/" + path)):
        return False
    return not S2A["func"] or p[0].current_element == S2A["func"]

# Per file: the addresses of the chosen semaphore that a rule accounted for,
# and the refusals.
S2A_SEEN = set()
S2A_REFUSED = {}
# The functions returning a pointer to it (followed into their callers).
S2A_RETURNING = set()

def s2a_key(p):
    return (os.path.basename(s2a_file(p)), p[0].line, p[0].column)

def s2a_refuse(p, why):
    refused = S2A_REFUSED.setdefault(os.path.basename(s2a_file(p)), {})
    if s2a_key(p) in refused:
        return
    f = p[0].current_element
    where = " in %s()," % f if f and f != "something_else" else ""
    msg = "semaphore %s not marked:%s %s" % (S2A["id"], where, why)
    refused[s2a_key(p)] = msg
    if S2A["mode"] == "report":
        coccilib.report.print_report(p[0], msg)
    elif S2A["mode"] == "org":
        coccilib.org.print_todo(p[0], msg)
    elif S2A["mode"] == "patch":
        sys.stderr.write("sem_to_arch: %s:%s: %s\n" % (p[0].file, p[0].line, msg))

def s2a_go(p):
    return s2a_here(p) and not S2A_REFUSED.get(os.path.basename(s2a_file(p)))

def s2a_note(p, what):
    if not s2a_go(p):
        return
    if S2A["mode"] == "report":
        coccilib.report.print_report(p[0], "semaphore %s: %s" % (S2A["id"], what))
    elif S2A["mode"] == "org":
        coccilib.org.print_todo(p[0], "semaphore %s: %s" % (S2A["id"], what))

@initialize:python@
sem << virtual.sem;
@@
s2a_select(sem)

@script:python depends on patch@
@@
S2A["mode"] = "patch"

@script:python depends on report@
@@
S2A["mode"] = "report"

@script:python depends on org@
@@
S2A["mode"] = "org"

// ---------------------------------------------------------------- the address
// Where &X may go: the semaphore API, and local pointers (followed below).

@s2a_addr@
identifier m : script:python() { s2a_member(m) };
type T : script:python() { s2a_type(T) };
T *P;
T S;
identifier x : script:python() { s2a_var(x) };
position q : script:python() { s2a_here(q) };
@@

\(&P->m@q\|&S.m@q\|&x@q\)

@s2a_api@
identifier m : script:python() { s2a_member(m) };
type T : script:python() { s2a_type(T) };
T *P;
T S;
identifier x : script:python() { s2a_var(x) };
identifier op = {sema_init, down, down_interruptible, down_killable,
                 down_trylock, down_timeout, up};
position q : script:python() { s2a_here(q) };
@@

op(&\(P->m@q\|S.m@q\|x@q\), ...)

@s2a_alias@
identifier m : script:python() { s2a_member(m) };
type T : script:python() { s2a_type(T) };
T *P;
T S;
identifier x : script:python() { s2a_var(x) };
identifier p;
position q : script:python() { s2a_here(q) };
@@

(
struct semaphore *p = &\(P->m@q\|S.m@q\|x@q\);
|
struct arch_semaphore *p = &\(P->m@q\|S.m@q\|x@q\);
|
p = &\(P->m@q\|S.m@q\|x@q\)
)

@script:python@
q << s2a_api.q;
@@
S2A_SEEN.add(s2a_key(q))

@script:python@
q << s2a_alias.q;
@@
S2A_SEEN.add(s2a_key(q))

@script:python@
q << s2a_addr.q;
@@
if s2a_key(q) not in S2A_SEEN:
    s2a_refuse(q, "its address goes elsewhere than the semaphore API or a local "
               "pointer; that place must take a struct arch_semaphore * too")

// ---------------------------------------------------------------- report

@s2a_decl_r depends on report || org@
identifier tag : script:python() { s2a_tag(tag) };
identifier m : script:python() { s2a_member(m) };
identifier i : script:python() { s2a_inner(i) };
identifier o : script:python() { s2a_outer(o) };
identifier x : script:python() { s2a_var(x) };
identifier v;
expression N, I;
position p : script:python() { s2a_here(p) };
@@

(
struct tag { ... struct semaphore m@p; ... };
|
struct tag { ... struct semaphore m@p; ... } v;
|
struct tag { ... struct semaphore m@p[N]; ... };
|
struct tag { ... struct semaphore m@p[N]; ... } v;
|
struct tag { ... struct { ... struct semaphore i@p; ... } o; ... };
|
struct semaphore x@p;
|
struct semaphore x@p = I;
|
struct semaphore x@p[N];
)

@script:python@
p << s2a_decl_r.p;
@@
s2a_note(p, "struct semaphore becomes struct arch_semaphore")

@s2a_define_r depends on report || org@
declarer name DEFINE_SEMAPHORE;
identifier x : script:python() { s2a_var(x) };
position p : script:python() { s2a_here(p) };
@@

DEFINE_SEMAPHORE@p(x, ...);

@script:python@
p << s2a_define_r.p;
@@
s2a_note(p, "DEFINE_SEMAPHORE() becomes DEFINE_ARCH_SEMAPHORE()")

@depends on context@
position p = {s2a_decl_r.p, s2a_define_r.p};
identifier x;
@@

* x@p

// ---------------------------------------------------------------- patch
// Only when nothing was refused in the file (s2a_go).

@s2a_decl depends on patch@
identifier tag : script:python() { s2a_tag(tag) };
identifier m : script:python() { s2a_member(m) };
identifier i : script:python() { s2a_inner(i) };
identifier o : script:python() { s2a_outer(o) };
identifier x : script:python() { s2a_var(x) };
identifier v;
expression N, I;
position p : script:python() { s2a_go(p) };
@@

(
struct tag { ...
- struct semaphore m@p;
+ struct arch_semaphore m;
  ... };
|
struct tag { ...
- struct semaphore m@p;
+ struct arch_semaphore m;
  ... } v;
|
struct tag { ...
- struct semaphore m@p[N];
+ struct arch_semaphore m[N];
  ... };
|
struct tag { ...
- struct semaphore m@p[N];
+ struct arch_semaphore m[N];
  ... } v;
|
struct tag { ...
  struct { ...
- struct semaphore i@p;
+ struct arch_semaphore i;
  ... } o;
  ... };
|
- struct semaphore x@p;
+ struct arch_semaphore x;
|
- struct semaphore
+ struct arch_semaphore
  x@p = I;
|
- struct semaphore x@p[N];
+ struct arch_semaphore x[N];
)

@s2a_def depends on patch@
declarer name DEFINE_SEMAPHORE, DEFINE_ARCH_SEMAPHORE;
identifier x : script:python() { s2a_var(x) };
expression C;
position p : script:python() { s2a_go(p) };
@@

(
- DEFINE_SEMAPHORE@p(x);
+ DEFINE_ARCH_SEMAPHORE(x);
|
- DEFINE_SEMAPHORE@p(x, C);
+ DEFINE_ARCH_SEMAPHORE(x, C);
)

// The local pointers that hold its address, the functions that return one of
// them, and the locals that receive such a function's result.

@s2a_ptr depends on patch@
identifier m : script:python() { s2a_member(m) };
type T : script:python() { s2a_type(T) };
T *P;
T S;
identifier x : script:python() { s2a_var(x) };
identifier f, p;
position q : script:python() { s2a_go(q) };
@@

f(...) {
  ... when any
(
- struct semaphore *p = &P->m@q;
+ struct arch_semaphore *p = &P->m;
|
- struct semaphore *p = &S.m@q;
+ struct arch_semaphore *p = &S.m;
|
- struct semaphore *p = &x@q;
+ struct arch_semaphore *p = &x;
|
- struct semaphore *p;
+ struct arch_semaphore *p;
  <+... p = \(&P->m@q\|&S.m@q\|&x@q\) ...+>
)
  ... when any
}

@s2a_ret depends on patch@
identifier s2a_ptr.f, s2a_ptr.p;
position r;
@@

- struct semaphore *
+ struct arch_semaphore *
  f@r(...) { <... return \(p\|<+... p ...+>\); ...> }

@script:python@
f << s2a_ptr.f;
r << s2a_ret.r;
@@
S2A_RETURNING.add(f)

@s2a_caller depends on patch@
identifier f : script:python() { f in S2A_RETURNING };
identifier g, r;
@@

g(...) {
  ... when any
- struct semaphore *r;
+ struct arch_semaphore *r;
  <+... r = f(...) ...+>
}
