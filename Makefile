# SPDX-License-Identifier: GPL-2.0-only
#
# gpubuf top-level build.
#   make module     build gpubuf.ko against KDIR
#   make check      everything: lint, library tests, the QEMU guest suites
#   make check-kernels  make check, then build and run the guest suites on
#                   the kernels of KERNEL_SUITES (default: trixie sid)
#   make check-debug  make check, then the guest suites on a KASAN, kmemleak,
#                   lockdep and page_owner kernel built here (slow)
#   make demo       gpubuf-bench host/alloc tables (in the QEMU guest when
#                   gpubuf.ko cannot be loaded here)
#   make lint       W=1, sparse and checkpatch --strict over kmod/
#   make install    install the module (and udev files) for KDIR's kernel
#   make lib        build libgpubuf (make -C libgpubuf install to install it)
#   make clean
#
# KDIR defaults to /lib/modules/$(uname -r)/build, or when that does not
# exist to the newest installed /usr/src/linux-headers-*-amd64. DKMS passes
# KVER=<kernel release>, which selects /lib/modules/KVER/build.

KVER ?=
KDIR ?= $(shell scripts/find-kdir.sh $(KVER))
DESTDIR ?=

.PHONY: all module probe lint check check-kernels check-debug demo lib install modules_install clean

all: module

probe:
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

KERNEL_SUITES ?= trixie sid
check-kernels:
	GPUBUF_KERNEL_SUITES="$(KERNEL_SUITES)" tests/check.sh

check-debug:
	GPUBUF_DEBUG_KERNEL=1 tests/check.sh

demo:
	tests/vm/demo.sh

lib:
	$(MAKE) -C libgpubuf

modules_install: module
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=updates modules_install

install: modules_install
	install -D -m 0644 udev/60-gpubuf.rules $(DESTDIR)/usr/lib/udev/rules.d/60-gpubuf.rules
	install -D -m 0644 udev/gpubuf.conf $(DESTDIR)/usr/lib/sysusers.d/gpubuf.conf
	install -D -m 0644 udev/gpubuf-modules-load.conf $(DESTDIR)/usr/lib/modules-load.d/gpubuf.conf
	install -D -m 0644 include/uapi/linux/gpubuf.h $(DESTDIR)/usr/include/linux/gpubuf.h
	install -D -m 0644 man/man4/gpubuf.4 $(DESTDIR)/usr/share/man/man4/gpubuf.4

clean:
	-[ -n "$(KDIR)" ] && [ -d "$(KDIR)" ] && \
		[ -f kmod/gpubuf_compat_probed.h ] && \
		$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	-[ -n "$(KDIR)" ] && [ -d "$(KDIR)" ] && \
		[ -f kmod/gpubuf_compat_probed.h ] && \
		$(MAKE) -C $(KDIR) M=$(CURDIR)/tests/testmod clean
	$(MAKE) -C libgpubuf clean
	rm -rf build kmod/gpubuf_compat_probed.h
