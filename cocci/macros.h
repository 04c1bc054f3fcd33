/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Macro hints for spatch: kernel macros that define a function or declare a
 * variable in a way spatch cannot parse without their definition.  Every spatch
 * run of sem2mutex (classify/spatch.py) gives spatch this file after Coccinelle's
 * own standard.h, as its builtin macro file (--macro-file-builtins): given as an
 * extra --macro-file, a macro used as `static NAME(fn) { ... }` is taken for a
 * declaration macro before its definition is tried, and the function is lost.
 *
 * The census (classify/census/macros.py) reads the same definitions, so that both
 * name the function a macro defines, and know the type of a variable a macro
 * declares.  One definition a line, as in standard.h: the form the kernel gives
 * the macro, reduced to what a parse needs.
 *
 * Add a macro here when `make audit` names a function "spatch could not parse
 * NAME()" where NAME is a macro, then check the audit of both trees.
 */

/* include/linux/closure.h (6.8 and later): bcache's closure callbacks */
#define CLOSURE_CALLBACK(name) void name(struct work_struct *ws)
#define closure_type(name, type, member) type *name = container_of(ws, type, member)
