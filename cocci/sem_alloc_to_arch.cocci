// SPDX-License-Identifier: GPL-2.0-only
/// Mark a semaphore allocated at run time as a real counting semaphore:
/// every struct semaphore of the chosen functions and file-scope pointers
/// becomes struct arch_semaphore (kernel-patches 0001): the pointers'
/// declarations, their casts and the sizeof of the allocation alike.
///
/// Such a semaphore has no declaration: a file kmalloc()s it, sema_init()s it
/// through a pointer and passes it around as an untyped handle, which other
/// functions of the file cast back (drivers/acpi/osl.c:
/// acpi_os_create_semaphore() and the three functions taking its
/// acpi_handle).  They must change together, so the choice is the whole
/// family that sem2mutex's audit found (classify/allocated.py):
///   -D sem=PATH:NAME,NAME,...
/// each NAME a function of PATH or a pointer declared at its file scope.
/// Nothing outside those is touched, not even another struct semaphore of
/// the same file.  All or nothing: when a chosen function takes a struct
/// semaphore * parameter, its callers (in other files too) would have to
/// change with it, so the file is left as it is and report mode (and patch
/// mode, on stderr) says why.
///
// Confidence: High
// Copyright: (C) 2026 The sem2mutex authors.
// Comments: Part of sem2mutex; needs -D sem=PATH:NAMES, without it nothing matches.
// Options: --no-includes --include-headers
// Keywords: semaphore, arch_semaphore, kmalloc, DEBUG_MUTEX_FULL

virtual patch
virtual context
virtual org
virtual report

@initialize:python@
@@
import os
import re
import sys

SA2A = {"spec": "", "path": "", "names": set(), "mode": ""}
# the files left as they are (a chosen function takes a struct semaphore *)
SA2A_REFUSED = set()

def sa2a_select(spec):
    spec = (spec or "").strip()
    if not spec:
        return
    path, sep, names = spec.rpartition(":")
    if not (sep and path and names):
        sys.stderr.write("sem_alloc_to_arch: cannot read %r: want PATH:NAME,...\n" % spec)
        return
    SA2A["spec"] = spec
    SA2A["path"] = path
    SA2A["names"] = {n for n in names.split(",") if n}

sa2a_select(os.environ.get("SEM2MUTEX_SEM", ""))

def sa2a_file(p):
    # after a rule modified a function, spatch matches its reparsed copy
    return re.sub(r"^.*/cocci_small_output-\d+-[0-9a-f]+-", "", p[0].file)

def sa2a_here(p):
    f = sa2a_file(p)
    path = SA2A["path"]
    if not (f == path or f.endswith("/" + path) or
            os.path.basename(f) == os.path.basename(path)):
        return False
    # current_element: the function, or the name a file-scope declaration declares
    return p[0].current_element in SA2A["names"]

@initialize:python@
sem << virtual.sem;
@@
sa2a_select(sem)

@script:python depends on patch@
@@
SA2A["mode"] = "patch"

@script:python depends on report@
@@
SA2A["mode"] = "report"

@script:python depends on org@
@@
SA2A["mode"] = "org"

// a chosen function whose signature would change: the file is refused
@param@
identifier f, x;
position p;
@@
(
f(..., struct semaphore@p *x, ...) { ... }
|
struct semaphore@p *f(...) { ... }
)

@script:python depends on param@
p << param.p;
f << param.f;
@@
if sa2a_here(p) and sa2a_file(p) not in SA2A_REFUSED:
    SA2A_REFUSED.add(sa2a_file(p))
    msg = ("allocated semaphore %s not marked: %s() takes or returns a struct "
           "semaphore *, so its callers would have to change too: mark them by hand"
           % (SA2A["spec"], f))
    if SA2A["mode"] == "report":
        coccilib.report.print_report(p[0], msg)
    elif SA2A["mode"] == "org":
        coccilib.org.print_todo(p[0], msg)
    elif SA2A["mode"] == "patch":
        sys.stderr.write("sem_alloc_to_arch: %s:%s: %s\n" % (p[0].file, p[0].line, msg))

@r@
position p;
@@
struct semaphore@p

@script:python depends on r@
p << r.p;
@@
if sa2a_file(p) in SA2A_REFUSED or not sa2a_here(p):
    cocci.include_match(False)

@depends on patch@
position r.p;
@@
- struct semaphore@p
+ struct arch_semaphore

@depends on context@
position r.p;
@@
* struct semaphore@p

@script:python depends on report || org@
p << r.p;
@@
msg = ("allocated semaphore %s: struct semaphore becomes struct arch_semaphore"
       % SA2A["spec"])
if SA2A["mode"] == "report":
    coccilib.report.print_report(p[0], msg)
else:
    coccilib.org.print_todo(p[0], msg)
