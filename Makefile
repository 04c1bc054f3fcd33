# SPDX-License-Identifier: GPL-2.0
#
# sem2mutex: sort a kernel's struct semaphore users into mutex, counting and
# completion pools, and migrate them.  `make help` lists the targets.
#
# Every target but setup, clean and distclean takes KERNEL=/path/to/a/kernel/tree
# (default: the Debian 6.1.192 tree that `make setup` unpacks into the work area), or
# TREE=6.12 for the other tree `make setup` unpacks (work/linux-6.12).  A user's tree
# is only read; whatever changes a tree works on a git worktree or a copy under
# $(WORK).  A variable a target does not take, an empty one or a bad value stops make
# in one line; every value reaches a command as one argument (see USER_VARS).

# Debian's interpreter: the one python3-pytest is installed for, whatever else
# (pyenv, a venv) comes first on PATH.
PYTHON ?= /usr/bin/python3

# ---- what a user types: taken as text, checked, and quoted for the shell
#
# The variables a user sets (`make patches ID=...`).  Each is taken as the text typed,
# never expanded by make ($(shell ...) in a value stays text); each reaches a command
# as one argument, quoted by $(call sh,...) when it has a character the shell reads.
USER_VARS := KERNEL TREE WORK TARBALLS JOBS FRESH SUBSYS ID VERIFY SIGNOFF CHECK EXCLUDE \
	ARCH SCENARIOS CONFIG BUILD MODULES BOOT LOG AUDIT JSON OUT RUNS KERNEL_RUNS PARTS \
	BENCH_MS BENCH_NOTE RECORD FIXTURES
_GIVEN := $(foreach v,$(USER_VARS),$(if $(filter command line,$(origin $(v))),$(v)))
_FROM_ENV := $(foreach v,$(USER_VARS),$(if $(filter environment,$(origin $(v))),$(v)))
$(foreach v,$(_GIVEN) $(_FROM_ENV),$(eval override $(v) := $$(value $(v))))
_SAFE := a b c d e f g h i j k l m n o p q r s t u v w x y z A B C D E F G H I J K L M N \
	O P Q R S T U V W X Y Z 0 1 2 3 4 5 6 7 8 9 / . _ - + , : = @ %
# $(call _rest,TEXT,CHARS): TEXT less every one of CHARS
_rest = $(if $(2),$(call _rest,$(subst $(firstword $(2)),,$(1)),$(wordlist 2,999,$(2))),$(1))
# $(call sh,TEXT): TEXT as one shell word (single-quoted unless it is only safe characters)
sh = $(if $(call _rest,$(1),$(_SAFE)),'$(subst ','\'',$(1))',$(1))
# $(call shq,TEXT): TEXT single-quoted, empty or not
shq = '$(subst ','\'',$(1))'
# A value given on the command line must not be empty (KERNEL= alone is a slip)
$(foreach v,$(filter-out BENCH_NOTE,$(_GIVEN)),$(if $(strip $($(v))),,\
	$(error $(v)= is empty: give a value, or leave $(v)= out)))
# The variables each target takes beyond KERNEL=/TREE= (the others are refused)
TARGET_VARS_audit := FRESH
TARGET_VARS_patches := SUBSYS ID VERIFY SIGNOFF
TARGET_VARS_marking := CHECK EXCLUDE
TARGET_VARS_boot-test := ARCH SCENARIOS RECORD
TARGET_VARS_full-kernel := CONFIG ARCH BUILD MODULES BOOT
TARGET_VARS_triage := LOG AUDIT JSON OUT
TARGET_VARS_triage-eval := FIXTURES RECORD
TARGET_VARS_bench := RUNS KERNEL_RUNS PARTS BENCH_MS BENCH_NOTE
TARGET_VARS_test := $(TARGET_VARS_boot-test)
# Targets that work on no tree: KERNEL= and TREE= are refused there
NO_TREE_TARGETS := setup clean distclean
_GOALS := $(or $(MAKECMDGOALS),help)
_TAKEN := KERNEL TREE $(foreach g,$(_GOALS),$(TARGET_VARS_$(g)))
_TAKEN := $(if $(filter $(NO_TREE_TARGETS),$(_GOALS)),$(filter-out KERNEL TREE,$(_TAKEN)),$(_TAKEN))
_TAKES = $(if $(_TAKEN),it takes $(_TAKEN:%=%=),it works on the trees make setup unpacks)
ifeq ($(filter help,$(_GOALS)),)
$(foreach v,$(filter-out WORK TARBALLS JOBS $(_TAKEN),$(_GIVEN)),\
	$(error $(v)=$($(v)): make $(_GOALS) does not use $(v)= ($(_TAKES))))
endif
# $(call yesno,VAR): VAR is 1/yes, 0/no or not given; anything else stops make
yesno = $(if $(filter-out 0 1 no yes,$($(1))),$(error $(1)=$($(1)): give $(1)=1 (or yes) or \
	$(1)=0 (or no)))
# $(call oneof,VAR,VALUES): VAR is one of VALUES or not given
oneof = $(if $(filter-out $(2),$($(1))),$(error $(1)=$($(1)): give one of $(2)))
# $(call number,VAR): VAR is a positive whole number or not given
number = $(if $($(1)),$(if $(call _rest,$($(1)),0 1 2 3 4 5 6 7 8 9)$(filter 0 00 000,$($(1))),\
	$(error $(1)=$($(1)): give a positive whole number)))
$(call number,JOBS)

WORK ?= $(CURDIR)/work
# The trees `make setup` unpacks, one per Debian linux-source-<version> package;
# each has its series in kernel-patches/<version>/ and its audit in reports/.
TREES := 6.1 6.12
PRISTINE := $(WORK)/linux-6.1
TARBALLS ?= /usr/src
ifdef TREE
ifneq ($(filter-out $(TREES),$(TREE))$(word 2,$(TREE)),)
$(error TREE=$(TREE): make setup unpacks no such tree (trees: $(TREES)))
endif
ifneq ($(filter KERNEL,$(_GIVEN) $(_FROM_ENV)),)
$(error TREE=$(TREE) and KERNEL=$(KERNEL): give one of them)
endif
KERNEL ?= $(WORK)/linux-$(TREE)
endif
KERNEL ?= $(PRISTINE)
# KERNEL= or TREE= given: the targets that default to the committed reports
# (evaluate, triage) take the tree's instead
KERNEL_GIVEN := $(if $(TREE)$(filter KERNEL,$(_GIVEN) $(_FROM_ENV)),1)

# The cross compilers of classify/arches.py: a file x86_64 allmodconfig leaves out
# is verified on an architecture that builds it.  On Debian 12 they cost 220 MB of
# downloads, 758 MB on disk and about 2 minutes of `make setup` (measured with distcc).
CROSS_PACKAGES := gcc-arm-linux-gnueabi gcc-aarch64-linux-gnu gcc-mips-linux-gnu \
	gcc-powerpc64le-linux-gnu gcc-m68k-linux-gnu gcc-hppa-linux-gnu gcc-sparc64-linux-gnu
# make boot-test ARCH=arm64: qemu-system-aarch64, and the libc the initramfs helpers
# link statically (the compiler is gcc-aarch64-linux-gnu of CROSS_PACKAGES)
ARM64_BOOT_PACKAGES := libc6-dev-arm64-cross qemu-system-arm
# Everything the project runs, from Debian's archive.  Nothing else is needed.
DEB_PACKAGES := bc binutils bison busybox-static ccache coccinelle cpio flex gcc \
	git libelf-dev libssl-dev linux-source-6.1 linux-source-6.12 make perl python3 python3-pytest \
	python3-pytest-xdist qemu-system-x86 sparse xz-utils xfsprogs btrfs-progs bcache-tools ovmf \
	distcc $(CROSS_PACKAGES) $(ARM64_BOOT_PACKAGES)
# The arm64 initramfs' busybox: Debian's busybox-static:arm64, unpacked (not installed).
ARM64_BUSYBOX := $(WORK)/arm64/busybox

# JOBS=2: make -j of the kernel builds (default: cores + 1), for a shared machine
ifdef JOBS
export SEM2MUTEX_JOBS := $(JOBS)
endif

PREFLIGHT = $(PYTHON) -m classify.preflight --target $@ --kernel $(call sh,$(KERNEL))
K = --kernel $(call sh,$(KERNEL))
PYTEST = $(PYTHON) -m pytest -q -p no:cacheprovider

.PHONY: help setup check test audit evaluate patches reports marking boot-test bitcheck triage \
	triage-eval full-kernel bench clean distclean selftest-control

help:
	@echo "sem2mutex targets (all but setup, clean and distclean take KERNEL=/path/to/kernel/tree,"
	@echo "or TREE=6.1|6.12; a variable a target does not take, or a bad value, stops make):"
	@echo "  setup      install the Debian packages, unpack the 6.1 and 6.12 trees (idempotent)"
	@echo "  check      the fast tests (seconds)"
	@echo "  test       everything CI runs: check, then the kernel build and boot tests"
	@echo "  audit      classify every struct semaphore of KERNEL into a report"
	@echo "  evaluate   the audit against classify/truth/ (labelled by hand): recall, precision"
	@echo "  patches    conversion patches per MAINTAINERS entry (SUBSYS=, ID=, VERIFY=0, SIGNOFF=0)"
	@echo "             in work/patches; writes nothing outside work/"
	@echo "  reports    copy the patch status of work/patches into reports/ and re-render the audit"
	@echo "  marking    regenerate kernel-patches/<version>/0004 (the counting pool marked) from"
	@echo "             the audit (CHECK=1, EXCLUDE=)"
	@echo "  boot-test  build DEBUG_MUTEX_FULL kernels and boot them in QEMU (ARCH=arm64: -M virt)"
	@echo "  selftest-control  the pristine control of the kernel's locking tests: the tree"
	@echo "             without the series, the same config, built and booted (one kernel)"
	@echo "  full-kernel  a DEBUG_MUTEX_FULL + lockdep kernel of your own CONFIG=.config: series"
	@echo "             and marking applied, merged, every requested option checked, built"
	@echo "             (ARCH=x86_64|arm64, BUILD=0, MODULES=1, BOOT=1 boots it in QEMU)"
	@echo "  bitcheck   show that DEBUG_MUTEX_NONE leaves the kernel's .text unchanged"
	@echo "  triage     read a tester's log (LOG=dmesg.txt): each report, its semaphores and what"
	@echo "             that says about the audit (AUDIT=, JSON=1, OUT= writes a runtime record)"
	@echo "  triage-eval  triage against logs labelled by hand: the runtime set's, and syzkaller's"
	@echo "             report fixtures with FIXTURES=<dir>; RECORD=1 updates the committed figures"
	@echo "  bench      sizes, lock contention in QEMU, audit/spatch/kernel times, .text"
	@echo "             of the conversion patches, their verification here and through distcc"
	@echo "             (RUNS=5, PARTS=boots,audit,spatch,kernel,text,boottest,verify,triage)"
	@echo "  clean      remove builds, boot logs and worktrees (keeps the trees)"
	@echo "  distclean  remove the whole work area, the trees included"

setup:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
			grep -q '^install ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then \
		echo "make setup: all $(words $(DEB_PACKAGES)) Debian packages are installed"; \
	else \
		if [ "$$(id -u)" = 0 ]; then sudo=; \
		elif command -v sudo >/dev/null; then sudo=sudo; \
		else echo "make setup: error: need root or sudo to install:$$missing" >&2; exit 1; fi; \
		echo "make setup: installing:" $$missing; \
		$$sudo apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q \
			--no-install-recommends $$missing; \
	fi
	@sh qemu/busybox-arch.sh arm64 $(call sh,$(ARM64_BUSYBOX))
	@for v in $(TREES); do \
		$(PYTHON) -m classify.tree prepare --tarball $(call sh,$(TARBALLS))/linux-source-$$v.tar.xz \
			--dest $(call sh,$(WORK))/linux-$$v || exit 1; done
	@$(PREFLIGHT) spatch sparse qemu-system-x86_64 busybox ccache gcc make flex bison bc cpio git perl \
		qemu-system-aarch64 aarch64-linux-gnu-gcc

# -n auto: one pytest worker per core; most of the fast tests wait on spatch.
check:
	@$(PREFLIGHT)
	$(PYTEST) -n auto -m "not slow" tests

# The slow tests run spatch and git am over the whole tree; then the kernels are
# built and booted.  Both kernel steps are incremental (ccache, persistent O=).
# Most slow tests are one process (spatch, git am, checkpatch): two workers, each
# test file on one of them.  The qemu worktree, which files share, is prepared by one
# process at a time (qemu/source.py), and no test changes it once prepared.
test: check
	@$(PREFLIGHT) spatch sparse qemu-system-x86_64 busybox ccache gcc
	$(PYTEST) -n 2 --dist loadfile -m slow tests
	$(MAKE) boot-test
	$(MAKE) bitcheck

audit:
	@$(PREFLIGHT) spatch
	$(PYTHON) -m classify audit $(K)$(if $(filter 1 yes,$(call yesno,FRESH)$(FRESH)), --fresh)

# The committed audit against the hand-labelled truth file of the same version
# (KERNEL=/TREE=: the audit `make audit` wrote for that tree, against the labels of
# its version): exit 1 when a mutex/completion verdict contradicts a label, 2 when
# there is no audit or no labels for the version.
evaluate:
	$(PYTHON) -m classify.evaluate$(if $(KERNEL_GIVEN), $(K))

# SUBSYS=<path prefix> and/or ID=<semaphore id> choose (default: every mutex and
# completion semaphore); VERIFY=0 skips git am / build / sparse / checkpatch;
# SIGNOFF=0 leaves out Signed-off-by (else git config user.name/user.email, or
# GIT_AUTHOR_NAME/GIT_AUTHOR_EMAIL, must be a real identity).  Writes only under
# work/: the committed reports change with `make reports`.
# Exit status: 0 when at least one patch was made, 1 when nothing could be done.
patches:
	@$(PREFLIGHT) spatch sparse
	$(PYTHON) -m classify patches $(K)$(PATCHES_ARGS)

PATCHES_ARGS = $(call yesno,VERIFY)$(call yesno,SIGNOFF)$(if $(SUBSYS), --subsys \
	$(call sh,$(SUBSYS)))$(if $(ID), $(foreach i,$(ID),--id $(call sh,$(i))))$(if \
	$(filter 0 no,$(VERIFY)), --no-verify)$(if $(filter 0 no,$(SIGNOFF)), --no-signoff)

# Does triage name the right semaphore, and never a wrong one (qemu/triageeval.py)?
# The runtime set's committed logs, and with FIXTURES= syzkaller's Linux report
# fixtures (a checkout's pkg/report/testdata/linux/report), kept apart from the
# project.  RECORD=1 merges the figures into reports/linux-6.1.192/triage-eval.json.
triage-eval:
	@$(call yesno,RECORD)$(PREFLIGHT)
	$(PYTHON) -m qemu triage-eval runtime$(if $(filter 1 yes,$(RECORD)), --out \
		reports/linux-6.1.192/triage-eval.json)
	$(if $(FIXTURES),$(PYTHON) -m qemu triage-eval syzkaller $(call sh,$(FIXTURES))$(if \
		$(filter 1 yes,$(RECORD)), --out reports/linux-6.1.192/triage-eval.json))

# The status `make patches` recorded (work/patches/patches.json) into
# reports/linux-<version>/patches.json, and the audit report re-rendered with it.
reports:
	@$(PREFLIGHT)
	$(PYTHON) -m classify patches $(K) --record

# The series' arch_semaphore marking, generated from reports/linux-<version>/audit.json:
# CHECK=1 then compiles the files it is about with DEBUG_MUTEX_FULL on allmodconfig
# (minutes; x86_64, or the architecture that builds a file: classify/crossbuild.py);
# CHECK=only checks the last marking (work/marking.json) without making it again;
# EXCLUDE=<id> leaves a counting semaphore unmarked (a challenge boot).
marking:
	@$(PREFLIGHT) spatch
	$(PYTHON) -m classify marking $(K)$(call oneof,CHECK,0 1 no yes only)$(if \
		$(filter 1 yes,$(CHECK)), --check)$(if $(filter only,$(CHECK)), \
		--check-only)$(if $(EXCLUDE), $(foreach \
		i,$(EXCLUDE),--exclude $(call sh,$(i))))

# SCENARIOS=runtime: the exercised set (qemu/runtime.py), trust and challenge kernels,
# and reports/linux-<version>/runtime.json for `make audit`.  ARCH=arm64: the standard
# set on qemu-system-aarch64 -M virt (aarch64-linux-gnu-gcc), logs in work/boots/arm64.
BOOT_ARCH = $(or $(ARCH),x86_64)
boot-test:
	@$(call oneof,ARCH,x86_64 arm64)$(PREFLIGHT) --free-gib 4 $(if $(filter arm64,$(ARCH)), \
		qemu-system-aarch64 aarch64-linux-gnu-gcc,qemu-system-x86_64 busybox gcc) ccache \
		make flex bison bc cpio
	$(PYTHON) -m qemu boot-test $(K) --arch $(BOOT_ARCH)$(call yesno,RECORD)$(if $(SCENARIOS), \
		--set $(call sh,$(SCENARIOS)))$(if $(filter 1 yes,$(RECORD)), --record-selftests)

# The pristine control of the kernel's own locking tests (qemu/pristine.py): the
# scenarios with `control = true` booted on the tree without the series, the same
# configuration otherwise; one more kernel, built on demand, never by `make test`.
# Its logs go to reports/linux-<version>/selftest/pristine/ for the trees `make setup`
# unpacks (work/reports/ for another), where boot-test classes each report of the
# series kernel's boots against them.
selftest-control:
	@$(PREFLIGHT) --free-gib 4 qemu-system-x86_64 busybox gcc ccache make flex bison bc cpio
	$(PYTHON) -m qemu selftest-control $(K)

# CONFIG=<your .config> (required; only read).  ARCH= (default: the config's own),
# BUILD=0 stops after the merge and its check, MODULES=1 builds the modules too,
# BOOT=1 boots the image in QEMU to the sem2mutex initramfs.  The O= directory,
# work/build/full-<arch>, is kept: a second run is incremental.
full-kernel:
	@$(if $(CONFIG),,echo "make full-kernel: error: give CONFIG=<your .config>" >&2; exit 2)
	@$(call oneof,ARCH,x86_64 arm64)$(call yesno,BUILD)$(call yesno,MODULES)$(call \
		yesno,BOOT)$(PREFLIGHT) --free-gib 8 ccache make flex bison bc $(if \
		$(filter arm64,$(ARCH)),aarch64-linux-gnu-gcc,gcc)
	$(PYTHON) -m qemu full-kernel $(call sh,$(CONFIG)) $(K)$(if $(ARCH), \
		--arch $(ARCH))$(if $(filter 0 no,$(BUILD)), --no-build)$(if $(filter 1 yes,$(MODULES)), \
		--modules)$(if $(filter 1 yes,$(BOOT)), --boot)

bitcheck:
	@$(PREFLIGHT) --free-gib 4 ccache gcc make flex bison bc
	$(PYTHON) -m qemu bitcheck $(K)

# LOG=<console log or dmesg> (required); AUDIT=<audit.json> (default: the audit of
# KERNEL=/TREE=, the one `make audit` wrote for it, else the committed audit of the
# log's kernel version; the log must be of the audit's version); JSON=1 for machines;
# OUT=<file> writes the boot's runtime record (runtime.json format; never under
# reports/ or kernel-patches/).  Exit 2 when an input is not what it is given as.
triage:
	@$(if $(LOG),,echo "make triage: error: give LOG=<console log or dmesg>" >&2; exit 2)
	$(PYTHON) -m qemu triage $(call sh,$(LOG))$(call yesno,JSON)$(if $(KERNEL_GIVEN), \
		$(K))$(if $(AUDIT), --audit $(call sh,$(AUDIT)))$(if $(filter 1 yes,$(JSON)), \
		--json)$(if $(OUT), --record $(call sh,$(OUT)))

# make bench: everything, about an hour on 2 idle cores (cold kernel builds and one
# whole-tree spatch run dominate).  PARTS=boots,audit,spatch,kernel,text,boottest,verify
# picks parts (text: the .text of the objects the conversion patches touch, before and
# after; it needs `make patches` first; boottest: make boot-test warm, wall time;
# verify: the verification of those patches with an empty ccache, here and through a
# distccd on 127.0.0.1, RUNS times each, about 2 x 30 min on 2 cores for the 25
# patches of 6.1; triage: make triage on a 200 MiB log built in work/bench/triage,
# wall time and peak memory, and /dev/zero, /dev/urandom refused); KERNEL_RUNS= the cold/warm kernel runs; BENCH_NOTE= a remark kept
# with the figures.
RUNS ?= 5
KERNEL_RUNS ?= $(RUNS)
PARTS ?= boots,audit,spatch,kernel,text,boottest,triage
BENCH_MS ?= 1000
BENCH_NOTE ?=
bench:
	@$(call number,RUNS)$(call number,KERNEL_RUNS)$(call number,BENCH_MS)$(PREFLIGHT) \
		--free-gib 4 spatch qemu-system-x86_64 busybox ccache gcc make flex bison bc cpio size
	$(PYTHON) -m qemu.bench $(K) --runs $(RUNS) --parts $(call sh,$(PARTS)) \
		--ms $(BENCH_MS) --kernel-runs $(KERNEL_RUNS) --note $(call shq,$(BENCH_NOTE)) \
		--out $(CURDIR)/reports/bench.json --svg $(CURDIR)/reports/bench.svg \
		--md $(CURDIR)/reports/bench.md

W = $(call sh,$(WORK))
clean:
	rm -rf $(W)/build $(W)/boots $(W)/initramfs $(W)/bench $(W)/reports
	rm -rf $(W)/trees
	for v in $(TREES); do if [ -d $(W)/linux-$$v/.git ]; then \
		git -C $(W)/linux-$$v worktree prune; fi; done

distclean:
	rm -rf $(W)
