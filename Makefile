# SPDX-License-Identifier: GPL-2.0
#
# sem2mutex: sort a kernel's struct semaphore users into mutex, counting and
# completion pools, and migrate them.  `make help` lists the targets.
#
# Every target takes KERNEL=/path/to/a/kernel/tree (default: the Debian 6.1.192
# tree that `make setup` unpacks into the work area), or TREE=6.12 for the other
# tree `make setup` unpacks (work/linux-6.12).  A user's tree is only read;
# whatever changes a tree works on a git worktree or a copy under $(WORK).

# Debian's interpreter: the one python3-pytest is installed for, whatever else
# (pyenv, a venv) comes first on PATH.
PYTHON ?= /usr/bin/python3
WORK ?= $(CURDIR)/work
# The trees `make setup` unpacks, one per Debian linux-source-<version> package;
# each has its series in kernel-patches/<version>/ and its audit in reports/.
TREES := 6.1 6.12
PRISTINE := $(WORK)/linux-6.1
TARBALLS ?= /usr/src
ifdef TREE
ifeq ($(filter $(TREE),$(TREES)),)
$(error TREE=$(TREE): make setup unpacks no such tree (trees: $(TREES)))
endif
KERNEL ?= $(WORK)/linux-$(TREE)
endif
KERNEL ?= $(PRISTINE)

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

PREFLIGHT = $(PYTHON) -m classify.preflight --target $@ --kernel $(KERNEL)
PYTEST = $(PYTHON) -m pytest -q -p no:cacheprovider

.PHONY: help setup check test audit evaluate patches reports marking boot-test bitcheck triage \
	full-kernel bench clean distclean

help:
	@echo "sem2mutex targets (all take KERNEL=/path/to/kernel/tree, or TREE=6.1|6.12):"
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
	@echo "  full-kernel  a DEBUG_MUTEX_FULL + lockdep kernel of your own CONFIG=.config: series"
	@echo "             and marking applied, merged, every requested option checked, built"
	@echo "             (ARCH=x86_64|arm64, BUILD=0, MODULES=1, BOOT=1 boots it in QEMU)"
	@echo "  bitcheck   show that DEBUG_MUTEX_NONE leaves the kernel's .text unchanged"
	@echo "  triage     read a tester's log (LOG=dmesg.txt): each report, its semaphores and what"
	@echo "             that says about the audit (AUDIT=, JSON=1, OUT= writes a runtime record)"
	@echo "  bench      sizes, lock contention in QEMU, audit/spatch/kernel times, .text"
	@echo "             of the conversion patches, their verification here and through distcc"
	@echo "             (RUNS=5, PARTS=boots,audit,spatch,kernel,text,boottest,verify)"
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
	@sh qemu/busybox-arch.sh arm64 $(ARM64_BUSYBOX)
	@for v in $(TREES); do \
		$(PYTHON) -m classify.tree prepare --tarball $(TARBALLS)/linux-source-$$v.tar.xz \
			--dest $(WORK)/linux-$$v || exit 1; done
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
	$(PYTHON) -m classify audit --kernel $(KERNEL) $(if $(FRESH),--fresh)

# The committed audit against the hand-labelled truth file of the same version:
# exit 1 when a mutex/completion verdict contradicts a label.
evaluate:
	$(PYTHON) -m classify.evaluate

# SUBSYS=<path prefix> and/or ID=<semaphore id> choose (default: every mutex and
# completion semaphore); VERIFY=0 skips git am / build / sparse / checkpatch;
# SIGNOFF=0 leaves out Signed-off-by (else git config user.name/user.email, or
# GIT_AUTHOR_NAME/GIT_AUTHOR_EMAIL, must be a real identity).  Writes only under
# work/: the committed reports change with `make reports`.
# Exit status: 0 when at least one patch was made, 1 when nothing could be done.
patches:
	@$(PREFLIGHT) spatch sparse
	$(PYTHON) -m classify patches --kernel $(KERNEL)$(PATCHES_ARGS)

PATCHES_ARGS = $(if $(SUBSYS), --subsys $(SUBSYS))$(foreach i,$(ID), --id $(i))$(if \
	$(filter 0 no,$(VERIFY)), --no-verify)$(if $(filter 0 no,$(SIGNOFF)), --no-signoff)

# The status `make patches` recorded (work/patches/patches.json) into
# reports/linux-<version>/patches.json, and the audit report re-rendered with it.
reports:
	@$(PREFLIGHT)
	$(PYTHON) -m classify patches --kernel $(KERNEL) --record

# The series' arch_semaphore marking, generated from reports/linux-<version>/audit.json:
# CHECK=1 then compiles the files it is about with DEBUG_MUTEX_FULL on allmodconfig
# (minutes; x86_64, or the architecture that builds a file: classify/crossbuild.py);
# CHECK=only checks the last marking (work/marking.json) without making it again;
# EXCLUDE=<id> leaves a counting semaphore unmarked (a challenge boot).
marking:
	@$(PREFLIGHT) spatch
	$(PYTHON) -m classify marking --kernel $(KERNEL)$(if $(filter 1 yes,$(CHECK)), \
		--check)$(if $(filter only,$(CHECK)), --check-only)$(foreach i,$(EXCLUDE), --exclude $(i))

# SCENARIOS=runtime: the exercised set (qemu/runtime.py), trust and challenge kernels,
# and reports/linux-<version>/runtime.json for `make audit`.  ARCH=arm64: the standard
# set on qemu-system-aarch64 -M virt (aarch64-linux-gnu-gcc), logs in work/boots/arm64.
BOOT_ARCH = $(or $(ARCH),x86_64)
boot-test:
	@$(PREFLIGHT) --free-gib 4 $(if $(filter arm64,$(ARCH)),qemu-system-aarch64 \
		aarch64-linux-gnu-gcc,qemu-system-x86_64 busybox gcc) ccache make flex bison bc cpio
	$(PYTHON) -m qemu boot-test --kernel $(KERNEL) --arch $(BOOT_ARCH)$(if $(SCENARIOS), \
		--set $(SCENARIOS))

# CONFIG=<your .config> (required; only read).  ARCH= (default: the config's own),
# BUILD=0 stops after the merge and its check, MODULES=1 builds the modules too,
# BOOT=1 boots the image in QEMU to the sem2mutex initramfs.  The O= directory,
# work/build/full-<arch>, is kept: a second run is incremental.
full-kernel:
	@if [ -z "$(CONFIG)" ]; then echo "make full-kernel: error: give CONFIG=<your .config>" \
		>&2; exit 2; fi
	@$(PREFLIGHT) --free-gib 8 ccache make flex bison bc $(if $(filter arm64,$(ARCH)), \
		aarch64-linux-gnu-gcc,gcc)
	$(PYTHON) -m qemu full-kernel $(abspath $(CONFIG)) --kernel $(KERNEL)$(if $(ARCH), \
		--arch $(ARCH))$(if $(filter 0 no,$(BUILD)), --no-build)$(if $(filter 1 yes,$(MODULES)), \
		--modules)$(if $(filter 1 yes,$(BOOT)), --boot)

bitcheck:
	@$(PREFLIGHT) --free-gib 4 ccache gcc make flex bison bc
	$(PYTHON) -m qemu bitcheck --kernel $(KERNEL)

# LOG=<console log or dmesg> (required); AUDIT=<audit.json> (default: the committed
# audit of the log's kernel version); JSON=1 for machines; OUT=<file> writes the boot's
# runtime record (runtime.json format).  Exit 1 when the log cannot be read.
triage:
	@if [ -z "$(LOG)" ]; then echo "make triage: error: give LOG=<console log or dmesg>" >&2; \
		exit 2; fi
	$(PYTHON) -m qemu triage $(LOG)$(if $(AUDIT), --audit $(AUDIT))$(if $(filter 1 yes,$(JSON)), \
		--json)$(if $(OUT), --record $(OUT))

# make bench: everything, about an hour on 2 idle cores (cold kernel builds and one
# whole-tree spatch run dominate).  PARTS=boots,audit,spatch,kernel,text,boottest,verify
# picks parts (text: the .text of the objects the conversion patches touch, before and
# after; it needs `make patches` first; boottest: make boot-test warm, wall time;
# verify: the verification of those patches with an empty ccache, here and through a
# distccd on 127.0.0.1, RUNS times each, about 2 x 30 min on 2 cores for the 25
# patches of 6.1); KERNEL_RUNS= the cold/warm kernel runs; BENCH_NOTE= a remark kept
# with the figures.
RUNS ?= 5
KERNEL_RUNS ?= $(RUNS)
PARTS ?= boots,audit,spatch,kernel,text,boottest
BENCH_MS ?= 1000
BENCH_NOTE ?=
bench:
	@$(PREFLIGHT) --free-gib 4 spatch qemu-system-x86_64 busybox ccache gcc make flex bison bc cpio size
	$(PYTHON) -m qemu.bench --kernel $(KERNEL) --runs $(RUNS) --parts $(PARTS) \
		--ms $(BENCH_MS) --kernel-runs $(KERNEL_RUNS) --note "$(BENCH_NOTE)" \
		--out $(CURDIR)/reports/bench.json --svg $(CURDIR)/reports/bench.svg \
		--md $(CURDIR)/reports/bench.md

clean:
	rm -rf $(WORK)/build $(WORK)/boots $(WORK)/initramfs $(WORK)/bench $(WORK)/reports
	rm -rf $(WORK)/trees
	for v in $(TREES); do if [ -d $(WORK)/linux-$$v/.git ]; then \
		git -C $(WORK)/linux-$$v worktree prune; fi; done

distclean:
	rm -rf $(WORK)
