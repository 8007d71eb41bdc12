# SPDX-License-Identifier: GPL-2.0-only
#
# gpubuf top-level build.
#   make module     build gpubuf.ko against KDIR
#   make check      everything: lint, library tests, the QEMU guest suites
#   make check-kernels  make check, then build and run the guest suites on
#                   the kernels of KERNEL_SUITES (default: bullseye trixie sid)
#   make check-debug  make check, then the guest suites on a KASAN, kmemleak,
#                   lockdep and page_owner kernel built here (slow)
#   make check-cluster  two QEMU guests on a private link: Open MPI over UCX
#                   on soft-RoCE between gpubuf buffers, the distributed GEMM
#                   example, gpubuf-bench rdma and perftest's ib_write_bw
#   make stress     gpubuf_stress in the QEMU guest: 8 threads for
#                   STRESS_MINUTES (default 5) or STRESS_SECONDS of alloc, mmap,
#                   sync, vgem import, fork and free, rmmod attempts, a
#                   memory-limited cgroup, and the reserve resized, holding
#                   pinned chunks and shrunk by the kernel's reclaim
#   make fuzz       the ioctl and syscall fuzzer in the QEMU guest, the reserve
#                   resized, shrunk and holding pinned chunks: FUZZ_CALLS
#                   (1000000), FUZZ_SEED, FUZZ_THREADS (4); FUZZ_SYSROOT=DIR
#                   boots the kernel of a root file system instead (e.g. the
#                   debug kernel's /var/tmp/gpubuf-debug-kernel/root)
#   make demo       gpubuf-bench host/alloc tables (in the QEMU guest when
#                   gpubuf.ko cannot be loaded here)
#   make lint       W=1, sparse and checkpatch --strict over kmod/
#   make install    everything: the module for KDIR's kernel, libgpubuf
#                   (shared and static, gpubuf.h, gpubuf.pc), gpubuf-bench,
#                   gpubuf-info, the man pages, the udev rule, the sysusers
#                   and modules-load.d files; DESTDIR, PREFIX (/usr/local),
#                   LIBDIR, BINDIR, INCLUDEDIR, MANDIR are honoured
#   make uninstall  remove what make install installed (same variables)
#   make dkms-install    as make install, but the module's source goes to
#                   /usr/src/gpubuf-VERSION and DKMS builds it for every kernel
#   make dkms-uninstall  remove it from DKMS and what dkms-install installed
#   make deb        Debian packages (gpubuf-dkms, libgpubuf0, libgpubuf-dev,
#                   gpubuf-tools, python3-gpubuf) in build/deb, checked by
#                   lintian
#   make check-install  boot a Debian 12 system in QEMU and install gpubuf
#                   as a user would: packages, DKMS, a kernel update (slow)
#   make lib        build libgpubuf
#   make python     the Python extension (bindings/python) against this
#                   tree's libgpubuf, in build/python/lib (PYTHONPATH)
#   make install-python  install the extension for PYTHON (/usr/bin/python3)
#                   into PYTHON_SITEDIR (PREFIX/lib/python3.X/dist-packages),
#                   built against the installed libgpubuf (pkg-config) or,
#                   without one, this tree's headers; DESTDIR is honoured
#   make uninstall-python  remove it again
#   make check-deps the Debian packages each target installs, proved in a
#                   fresh debootstrapped Debian 12 (root; slow)
#   make clean
#
# Each target first installs the Debian packages it needs when run as root
# (scripts/install-deps.sh TARGET; without root it names what is missing):
# the targets below through "deps", the check, demo and deb scripts
# themselves.
#
# KDIR defaults to /lib/modules/$(uname -r)/build, or when that does not
# exist to the newest installed /usr/src/linux-headers-*-amd64. DKMS passes
# KVER=<kernel release>, which selects /lib/modules/KVER/build.

KVER ?=
KDIR ?= $(shell scripts/find-kdir.sh $(KVER))
DESTDIR ?=
# Sub-makes run in other directories (kbuild in KDIR): a relative DESTDIR
# would land in each of them.
override DESTDIR := $(if $(DESTDIR),$(abspath $(DESTDIR)))
VERSION := $(strip $(shell cat VERSION))
# KVER, else KDIR's, else the running kernel's (uninstall after the
# headers are gone).
KERNEL_RELEASE = $(or $(KVER),$(shell scripts/kernel-release.sh \
	$(KDIR) 2>/dev/null),$(shell uname -r))

PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
# Debian's interpreter, where python3-numpy and python3-torch install.
PYTHON ?= /usr/bin/python3
PYTHON_SITEDIR ?= $(PREFIX)/lib/$(shell $(PYTHON) -c 'import sys; print("python%d.%d" % sys.version_info[:2])' 2>/dev/null)/dist-packages
BINDIR ?= $(PREFIX)/bin
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
# udev, systemd-sysusers and systemd-modules-load read only these, whatever
# PREFIX is.
UDEVRULESDIR ?= /usr/lib/udev/rules.d
SYSUSERSDIR ?= /usr/lib/sysusers.d
MODULESLOADDIR ?= /usr/lib/modules-load.d
DKMS_SRCDIR ?= /usr/src/gpubuf-$(VERSION)

# What DKMS (and the gpubuf-dkms package) needs to build the module.
DKMS_SOURCES := Kbuild Makefile dkms.conf VERSION \
	$(filter-out kmod/gpubuf_compat_probed.h,$(wildcard kmod/*.c kmod/*.h)) \
	include/uapi/linux/gpubuf.h scripts/find-kdir.sh scripts/kernel-release.sh \
	scripts/kbuild-clean.sh \
	scripts/kernel-compat-probe.sh $(wildcard scripts/compat-probes/*.c)

SUBMAKE_DIRS := PREFIX=$(PREFIX) LIBDIR=$(LIBDIR) BINDIR=$(BINDIR) \
	INCLUDEDIR=$(INCLUDEDIR) MANDIR=$(MANDIR) DESTDIR=$(DESTDIR)
SYSTEM_FILES := $(UDEVRULESDIR)/60-gpubuf.rules $(SYSUSERSDIR)/gpubuf.conf \
	$(MODULESLOADDIR)/gpubuf.conf $(INCLUDEDIR)/linux/gpubuf.h \
	$(MANDIR)/man4/gpubuf.4

.PHONY: all deps module probe lint check check-kernels check-debug check-install \
	check-deps check-cluster fuzz stress demo lib python install-python uninstall-python \
	install uninstall modules_install install-module \
	uninstall-module install-userspace uninstall-userspace dkms-source \
	dkms-install dkms-uninstall dkms-not-packaged post-install deb clean

all: module

# Once, before anything else of this make, for the targets asked for
# (default: module); sub-makes for internal targets have nothing to add.
# DKMS's copy of the source (DKMS_SOURCES) has no installer: dkms itself
# depends on the compiler and make.
DEPS_GOALS := module probe lib python install-python uninstall-python lint install \
	uninstall dkms-install dkms-uninstall
deps:
	@goals='$(if $(MAKECMDGOALS),$(filter $(DEPS_GOALS),$(MAKECMDGOALS)),module)'; \
	if [ -n "$$goals" ] && [ -f scripts/install-deps.sh ]; then KVER='$(KVER)' \
		KDIR='$(if $(filter file,$(origin KDIR)),,$(KDIR))' \
		scripts/install-deps.sh $$goals; fi

# KDIR is looked up again after deps, which may have installed headers.
probe: deps
	@if [ -z "$(KDIR)" ] || [ ! -d "$(KDIR)" ]; then \
		echo "gpubuf: no kernel build directory (KDIR='$(KDIR)');" \
		     "install linux-headers-amd64 or pass KDIR=" >&2; exit 1; fi
	scripts/kernel-compat-probe.sh $(KDIR) kmod/gpubuf_compat_probed.h

module: probe
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

lint: probe
	tests/lint-kmod.sh $(KDIR)

check:
	tests/check.sh

KERNEL_SUITES ?= bullseye trixie sid
check-kernels:
	GPUBUF_KERNEL_SUITES="$(KERNEL_SUITES)" tests/check.sh

check-debug:
	GPUBUF_DEBUG_KERNEL=1 tests/check.sh

check-cluster:
	KDIR="$(KDIR)" tests/cluster/run.sh

FUZZ_CALLS ?= 1000000
fuzz:
	KDIR="$(KDIR)" FUZZ_CALLS="$(FUZZ_CALLS)" tests/fuzz/run.sh

STRESS_MINUTES ?= 5
STRESS_SECONDS ?= $(shell echo $$(($(STRESS_MINUTES) * 60)))
stress:
	STRESS_SECONDS=$(STRESS_SECONDS) tests/stress/run.sh

demo:
	tests/vm/demo.sh

lib: deps
	$(MAKE) -C libgpubuf

python: deps
	PYTHON=$(PYTHON) bindings/python/run-tests.sh build $(CURDIR)/build/python
	@echo "gpubuf: PYTHONPATH=$(CURDIR)/build/python/lib $(PYTHON) -c 'import gpubuf'"

PY_BUILD := $(CURDIR)/build/python-install
install-python: deps
	$(MAKE) -C libgpubuf
	rm -rf $(PY_BUILD)
	cd bindings/python && $(PYTHON) setup.py -q build --build-base $(PY_BUILD)/build \
		--build-lib $(PY_BUILD)/lib && rm -rf gpubuf.egg-info
	install -d $(DESTDIR)$(PYTHON_SITEDIR)/gpubuf
	install -m 0644 $(PY_BUILD)/lib/gpubuf/__init__.py $(PY_BUILD)/lib/gpubuf/__init__.pyi \
		$(PY_BUILD)/lib/gpubuf/py.typed $(PY_BUILD)/lib/gpubuf/safetensors.py \
		$(DESTDIR)$(PYTHON_SITEDIR)/gpubuf/
	install -m 0755 $(PY_BUILD)/lib/gpubuf/_gpubuf*.so $(DESTDIR)$(PYTHON_SITEDIR)/gpubuf/

uninstall-python: deps
	rm -rf $(DESTDIR)$(PYTHON_SITEDIR)/gpubuf

check-install:
	tests/install/check-install.sh

check-deps:
	tests/deps-bare.sh

deb:
	scripts/build-deb.sh

# post-install last, also under make -j.
install: install-module install-userspace
	$(MAKE) post-install
uninstall: uninstall-module uninstall-userspace
	$(MAKE) post-install

# The module goes to /lib/modules/KVER/updates (DESTDIR is kbuild's
# INSTALL_MOD_PATH); depmod on a live system.
modules_install install-module: module
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=updates \
		INSTALL_MOD_PATH=$(DESTDIR) modules_install
	if [ -z "$(DESTDIR)" ]; then depmod -a $(KERNEL_RELEASE); fi

uninstall-module: deps
	rm -f $(DESTDIR)/lib/modules/$(KERNEL_RELEASE)/updates/gpubuf.ko*
	-rmdir $(DESTDIR)/lib/modules/$(KERNEL_RELEASE)/updates 2>/dev/null
	if [ -z "$(DESTDIR)" ]; then depmod -a $(KERNEL_RELEASE); fi

install-userspace: deps
	$(MAKE) -C libgpubuf install $(SUBMAKE_DIRS)
	$(MAKE) -C tools install $(SUBMAKE_DIRS)
	install -D -m 0644 udev/60-gpubuf.rules $(DESTDIR)$(UDEVRULESDIR)/60-gpubuf.rules
	install -D -m 0644 udev/gpubuf.conf $(DESTDIR)$(SYSUSERSDIR)/gpubuf.conf
	install -D -m 0644 udev/gpubuf-modules-load.conf $(DESTDIR)$(MODULESLOADDIR)/gpubuf.conf
	install -D -m 0644 include/uapi/linux/gpubuf.h $(DESTDIR)$(INCLUDEDIR)/linux/gpubuf.h
	install -D -m 0644 man/man4/gpubuf.4 $(DESTDIR)$(MANDIR)/man4/gpubuf.4

uninstall-userspace: deps
	$(MAKE) -C libgpubuf uninstall $(SUBMAKE_DIRS)
	$(MAKE) -C tools uninstall $(SUBMAKE_DIRS)
	rm -f $(addprefix $(DESTDIR),$(SYSTEM_FILES))
	-rmdir $(addprefix $(DESTDIR),$(INCLUDEDIR)/linux $(MANDIR)/man4) 2>/dev/null

# On a live system (no DESTDIR): the gpubuf group before udev needs it,
# the loader cache, udev's rules. A loaded gpubuf keeps running; the group
# stays after uninstall, as Debian packages leave system groups.
post-install:
	@if [ -z "$(DESTDIR)" ]; then \
		if [ -f $(SYSUSERSDIR)/gpubuf.conf ]; then \
			if command -v systemd-sysusers >/dev/null; then \
				systemd-sysusers $(SYSUSERSDIR)/gpubuf.conf; \
			elif ! getent group gpubuf >/dev/null; then \
				groupadd --system gpubuf; fi; fi; \
		if command -v ldconfig >/dev/null; then ldconfig; fi; \
		if command -v udevadm >/dev/null && [ -d /run/udev ]; then \
			udevadm control --reload; \
			udevadm trigger --subsystem-match=misc --sysname-match=gpubuf; fi; \
	fi

# The module's source as DKMS and the gpubuf-dkms package install it.
dkms-source:
	rm -rf $(DESTDIR)$(DKMS_SRCDIR)
	install -d $(DESTDIR)$(DKMS_SRCDIR)
	cp --parents -t $(DESTDIR)$(DKMS_SRCDIR) $(DKMS_SOURCES)

# Not over the gpubuf-dkms package's copy of the same source.
DKMS_OWNED = $(shell dpkg -S $(DKMS_SRCDIR) 2>/dev/null | cut -d: -f1)
dkms-install dkms-uninstall: dkms-not-packaged
dkms-not-packaged: deps
	@if [ -n "$(DKMS_OWNED)" ]; then echo "gpubuf: $(DKMS_SRCDIR) belongs to package $(DKMS_OWNED); use apt to install or remove it" >&2; exit 1; fi

dkms-install:
	@command -v dkms >/dev/null || { echo "gpubuf: dkms-install needs dkms (apt-get install dkms)" >&2; exit 1; }
	-dkms remove -m gpubuf -v $(VERSION) --all >/dev/null 2>&1
	$(MAKE) dkms-source DESTDIR=
	dkms add -m gpubuf -v $(VERSION)
	dkms install -m gpubuf -v $(VERSION) $(if $(KVER),-k $(KVER))
	$(MAKE) install-userspace post-install

dkms-uninstall:
	-dkms remove -m gpubuf -v $(VERSION) --all
	rm -rf $(DKMS_SRCDIR)
	$(MAKE) uninstall-userspace post-install

clean:
	-[ -n "$(KDIR)" ] && [ -d "$(KDIR)" ] && \
		[ -f kmod/gpubuf_compat_probed.h ] && \
		scripts/kbuild-clean.sh $(KDIR)
	-[ -n "$(KDIR)" ] && [ -d "$(KDIR)" ] && [ -d tests/testmod ] && \
		[ -f kmod/gpubuf_compat_probed.h ] && \
		$(MAKE) -C $(KDIR) M=$(CURDIR)/tests/testmod clean
	[ ! -d libgpubuf ] || $(MAKE) -C libgpubuf clean
	rm -rf build kmod/gpubuf_compat_probed.h
