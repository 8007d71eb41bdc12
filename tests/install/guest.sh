#!/bin/sh
# SPDX-License-Identifier: MIT
# The check-install steps, run as root inside the booted Debian system by
# gpubuf-check.service from the second disk (mounted at $d). Each result is
# a line "ok - ..." or "not ok - ..." (numbered by the host) in $d/out/tap.
# Usage: guest.sh STEP...   (the host's step.sh sets VERSION and KVER)
set -u
d=/run/gpubuf-check
out=$d/out
state=/var/lib/gpubuf-check
mkdir -p "$out" "$state"
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8

# Results also go to stdout, which the service sends to the console log.
ok() { echo "ok - $*" | tee -a "$out/tap"; }
no() { echo "not ok - $*" | tee -a "$out/tap"; }
note() { echo "# $*" | tee -a "$out/tap"; }
# result DESCRIPTION COMMAND...: ok when the command succeeds; otherwise
# not ok with the command's output.
result() {
	desc=$1
	shift
	if "$@" >"$out/last.log" 2>&1; then
		ok "$desc"
	else
		no "$desc"
		sed 's/^/#   /' "$out/last.log" | tail -n 20 >>"$out/tap"
	fi
}
# Every path outside the volatile trees, to compare before and after.
list_files() {
	find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run \
		-o -path /tmp -o -path /var/tmp -o -path /var/log \
		-o -path /var/cache -o -path /var/lib/apt -o -path /var/lib/dpkg \
		-o -path /var/lib/systemd -o -path /var/lib/dhcp -o -path "$state" \
		-o -path /root -o -path /home \) -prune -o -print | sort
}

step_snapshot() {
	list_files >"$state/before.list"
	ok "snapshot of $(wc -l <"$state/before.list") paths before installing"
}

# What install left behind: paths that are new since the snapshot, not
# owned by a package and not the updated kernel's own (its initrd and
# module indexes are generated, not packaged).
leftovers() {
	list_files >"$state/after.list"
	# Packages list /lib, /bin and /sbin paths; with merged /usr, find
	# sees them under /usr.
	cat /var/lib/dpkg/info/*.list |
		sed -e p -e 's#^/\(lib\|lib64\|bin\|sbin\)\(/\|$\)#/usr/\1\2#' |
		sort -u >"$state/owned.list"
	# python3, which python3-gpubuf depends on and apt's purge leaves
	# installed, writes its configuration and the standard library's byte
	# code when it is installed: its own, not gpubuf's (gpubuf's package
	# lives in /usr/lib/python3/dist-packages, which stays checked).
	comm -13 "$state/before.list" "$state/after.list" |
		comm -23 - "$state/owned.list" |
		grep -v -F -e "${NEW_KVER:-no-new-kernel}" |
		grep -v -E '^/etc/python3(/|$)|^/usr/lib/python3\.[0-9]+/(.*/)?__pycache__(/|$)' |
		kept_state || true
}

# State that packages which stay installed after the purge keep by design:
# ca-certificates' generated certificate links and configuration (it came
# with python3's Recommends and stays when something installed recommends
# it), and DKMS's module-signing key, which dkms (installed before gpubuf)
# makes at its first build once openssl is there. Left out only while that
# package is still installed.
kept_state() {
	pattern='^$'
	installed ca-certificates &&
		pattern="$pattern|^/etc/ssl/certs(/|\$)|^/etc/ca-certificates\.conf\$|^/usr/local/share/ca-certificates(/|\$)"
	installed dkms && pattern="$pattern|^/var/lib/dkms/mok\.(key|pub)\$"
	grep -v -E "$pattern"
}

installed() {
	dpkg-query -W -f '${Status}' "$1" 2>/dev/null | grep -qx 'install ok installed'
}

step_install_debs() {
	set -- $PACKAGES
	result "apt-get installs the $# packages offline, Recommends included ($PACKAGES; DKMS builds gpubuf for $(uname -r))" \
		apt-get install -y "$d"/debs/*.deb
	for p in $PACKAGES; do
		result "$p is installed" sh -c "dpkg-query -W -f '\${Status}' $p | grep -qx 'install ok installed'"
	done
	cp "$out/last.log" "$out/install-debs.log"
	grep -E 'Building for|Installing to|Creating group' \
		"$out/install-debs.log" | sed 's/^/# /' >>"$out/tap"
}

# Checks on the booted system: how = dkms (packages, dkms-install) or
# make (make install).
step_checks() {
	how=$1
	kver=$(uname -r)
	# After the kernel update the host must have booted the new kernel.
	want=${NEW_KVER:-$KVER}
	result "booted kernel is $want" test "$kver" = "$want"
	if [ "$how" = dkms ]; then
		result "dkms status: gpubuf/$VERSION installed for $kver" \
			sh -c "dkms status -m gpubuf -v $VERSION -k $kver | grep -E ': installed'"
	fi
	path=$(modinfo -n gpubuf 2>/dev/null)
	case $how in
	dkms) want=/lib/modules/$kver/updates/dkms/ ;;
	*) want=/lib/modules/$kver/updates/ ;;
	esac
	result "gpubuf.ko for $kver is in $want ($path)" \
		sh -c "case '$path' in $want*) exit 0;; esac; exit 1"
	result "modinfo version is $VERSION" \
		sh -c "test \"\$(modinfo -F version gpubuf)\" = $VERSION"
	# By syslog identifier: this early, systemd-modules-load may log
	# through the kernel's log, which carries no unit name.
	result "gpubuf was loaded at boot by systemd-modules-load" \
		sh -c "grep -q '^gpubuf ' /proc/modules &&
			journalctl -b --no-pager -t systemd-modules-load |
			tee $out/modules-load.txt |
			grep -q \"Inserted module 'gpubuf'\""
	result "sysfs counters readable (live_buffers, live_bytes, peak_bytes, failed_allocs)" \
		sh -c 'for c in live_buffers live_bytes peak_bytes failed_allocs; do
			v=$(cat /sys/class/misc/gpubuf/$c) && echo "$c=$v" &&
			case $v in *[!0-9]*|"") exit 1;; esac; done'
	result "/dev/gpubuf is root:gpubuf 0660" \
		sh -c 'test "$(stat -c "%U:%G %a" /dev/gpubuf)" = "root:gpubuf 660"'
	usermod -aG gpubuf alice
	result "alice (group gpubuf) runs gpubuf-info on the module backend" \
		sh -c 'runuser -u alice -- gpubuf-info >'"$out"'/info.txt 2>&1 &&
			grep -E "^backend +module" '"$out"'/info.txt &&
			grep -E "^driver +$VERSION" '"$out"'/info.txt'
	result "alice runs a short gpubuf-bench host" \
		runuser -u alice -- gpubuf-bench host --sizes 64K --reps 2 \
			--warmup 0 --rep-bytes 1M
	result "the bench's buffers show in peak_bytes" \
		sh -c 'test "$(cat /sys/class/misc/gpubuf/peak_bytes)" -gt 0'
	result "pkg-config --cflags --libs gpubuf builds and runs the README example as alice" \
		runuser -u alice -- sh -c "cd /tmp && cc -o matrix_dlpack \
			$d/examples/matrix_dlpack.c \$(pkg-config --cflags --libs gpubuf) &&
			GPUBUF_BACKEND=module ./matrix_dlpack"
	if [ "$how" = dkms ]; then
		python_checks
		prometheus_checks
		cdi_checks
	fi
	# gpubuf-info reports the refusal as its backend line; the example,
	# which needs the device, fails with it.
	result "bob (not in the group) gets EACCES naming group gpubuf" \
		sh -c "runuser -u bob -- gpubuf-info >$out/bob.txt 2>&1;
			grep -E \"^backend +none: open /dev/gpubuf: permission denied: .*'gpubuf' \\(usermod -aG gpubuf USER\" $out/bob.txt &&
			! runuser -u bob -- env GPUBUF_BACKEND=module /tmp/matrix_dlpack >$out/bob-example.txt 2>&1 &&
			grep -F 'permission denied' $out/bob-example.txt"
}

# python3-gpubuf as its users use it: alice on the module backend with
# NumPy (a Recommends) and DLPack, bob refused with the library's message.
python_checks() {
	result "alice: import gpubuf, a matrix through NumPy and back through DLPack, on the module backend" \
		runuser -u alice -- python3 -c '
import gpubuf, numpy as np
ctx = gpubuf.open("module")
assert ctx.backend == "module", ctx.backend
m = ctx.empty((64, 48), dtype="float32")
a = np.asarray(m)
a[:] = np.arange(64 * 48, dtype=np.float32).reshape(64, 48)
s = m[8:40, 4:20]
d = np.from_dlpack(s)
assert d.shape == (32, 16) and d[0, 0] == 8 * 48 + 4, (d.shape, d[0, 0])
a[8, 4] = -1.0
assert d[0, 0] == -1.0, "DLPack tensor is not the same memory"
assert m.fd is not None
print("gpubuf", gpubuf.library_version(), "numpy", np.__version__, "sum", float(d.sum()))'
	result "bob (not in the group): gpubuf.Error EACCES naming group gpubuf, through Python" \
		sh -c "runuser -u bob -- python3 -c '
import errno, gpubuf
try:
    gpubuf.open(\"module\")
except gpubuf.Error as e:
    assert e.errno == errno.EACCES, e.errno
    print(e)
    raise SystemExit(0)
raise SystemExit(\"opened\")' >$out/bob-python.txt 2>&1 &&
			grep -F \"'gpubuf' (usermod -aG gpubuf USER\" $out/bob-python.txt"
}

# gpubuf-tools' timer, enabled by the package, writes the textfile that
# Debian's prometheus-node-exporter (in the image, on 127.0.0.1:9100 with
# its default textfile directory) serves; purge removes the file
# (leftovers). The scrape's gpubuf lines go to the log.
prometheus_checks() {
	prom=/var/lib/prometheus/node-exporter/gpubuf.prom
	result "gpubuf-prometheus.timer is enabled and active (the package's doing)" \
		sh -c 'systemctl is-enabled gpubuf-prometheus.timer &&
			systemctl is-active gpubuf-prometheus.timer'
	# The timer's own run this boot (10 s after it, then every 30 s):
	# the service exited 0 and the file is newer than the boot.
	result "the timer ran gpubuf-prometheus.service this boot: $prom, module loaded" \
		sh -c 'boot=$(($(date +%s) - $(cut -d. -f1 /proc/uptime)))
			i=0
			until [ "$(systemctl show -P ExecMainExitTimestampMonotonic gpubuf-prometheus.service)" != 0 ] &&
				[ -f '"$prom"' ] && [ "$(stat -c %Y '"$prom"')" -ge "$boot" ]; do
				i=$((i + 1)); [ $i -le 90 ] || exit 1; sleep 1
			done
			systemctl show -p ExecMainStatus -p Result gpubuf-prometheus.service
			[ "$(systemctl show -P ExecMainStatus gpubuf-prometheus.service)" = 0 ] &&
			grep -qx "gpubuf_module_loaded 1" '"$prom"''
	# Refreshed now, after the bench above: peak_bytes is the module's.
	systemctl start gpubuf-prometheus.service
	result "node_exporter on 127.0.0.1:9100 serves gpubuf's metrics: loaded, release $VERSION, peak_bytes as sysfs has it, no textfile error" \
		python3 - "$out/scrape.txt" "$VERSION" <<'PY'
import sys, time, urllib.request
for i in range(60):
    try:
        text = urllib.request.urlopen("http://127.0.0.1:9100/metrics", timeout=10).read().decode()
        break
    except OSError as e:
        err = e
        time.sleep(1)
else:
    raise SystemExit("no scrape: %s" % err)
lines = [l for l in text.splitlines() if l.startswith(("gpubuf_", "node_textfile_scrape_error"))]
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
# node_exporter writes large values in exponent form: compare numbers.
val = dict(l.rsplit(" ", 1) for l in lines)
assert float(val["gpubuf_module_loaded"]) == 1, lines
assert float(val['gpubuf_info{library="%s",module="%s"}' % (sys.argv[2], sys.argv[2])]) == 1, lines
assert float(val["node_textfile_scrape_error"]) == 0, lines
peak = int(open("/sys/class/misc/gpubuf/peak_bytes").read())
assert peak > 0 and float(val["gpubuf_peak_bytes"]) == peak, (peak, lines)
PY
	[ -f "$out/scrape.txt" ] && sed 's/^/#   scrape: /' "$out/scrape.txt" >>"$out/tap"
	prometheus_attack_checks
	# Without node_exporter's directory the service does nothing.
	systemctl stop gpubuf-prometheus.timer
	mv /var/lib/prometheus/node-exporter /var/lib/prometheus/node-exporter.away
	result "without /var/lib/prometheus/node-exporter the service skips (its condition) and writes nothing" \
		sh -c 'systemctl start gpubuf-prometheus.service &&
			[ "$(systemctl show -P ConditionResult gpubuf-prometheus.service)" = no ] &&
			[ ! -e /var/lib/prometheus/node-exporter ]'
	mv /var/lib/prometheus/node-exporter.away /var/lib/prometheus/node-exporter
	systemctl start gpubuf-prometheus.timer
}

# Issue 49, item 1: /var/lib/prometheus belongs to prometheus, the account
# node_exporter runs as, so it can swap node-exporter/ for a directory of
# its own and plant links there; the unit that wrote through a shell's
# "> gpubuf.prom.tmp" then wrote root's output wherever they pointed. The
# victim is one the old unit's sandbox left writable: the kernel's
# core_pattern (no ProtectKernelTunables). The unit must leave it alone,
# fail saying why, and write the file again once the directory is root's.
# A link planted in root's own directory (a stale one) is replaced, never
# written through.
prometheus_wait_run() {
	# The timer's next run after $1 (ExecMainExitTimestampMonotonic),
	# finished: a starting run reads 0 there, and activating.
	i=0
	while v=$(systemctl show -P ExecMainExitTimestampMonotonic gpubuf-prometheus.service)
		[ "$v" = "$1" ] || [ "$v" = 0 ] ||
		[ "$(systemctl show -P ActiveState gpubuf-prometheus.service)" = activating ]; do
		i=$((i + 1))
		[ $i -le 60 ] || { echo "the timer did not run in 60 s"; return 1; }
		sleep 1
	done
	journalctl -b --no-pager -u gpubuf-prometheus.service | tail -n 4
}
prometheus_swapped() {
	cat "$out/attack.log"
	[ "$(stat -c %U "$ne")" = prometheus ] && [ -L "$ne/gpubuf.prom.tmp" ]
}
prometheus_refused() {
	prometheus_wait_run "$1" || return 1
	[ "$(cat /proc/sys/kernel/core_pattern)" = "$pattern" ] &&
		[ "$(readlink "$ne/gpubuf.prom.tmp")" = /proc/sys/kernel/core_pattern ] &&
		[ "$(readlink "$ne/gpubuf.prom")" = /proc/sys/kernel/core_pattern ] &&
		[ "$(systemctl show -P Result gpubuf-prometheus.service)" = exit-code ] &&
		journalctl -b --no-pager -u gpubuf-prometheus.service |
		grep -q "refusing $ne: it belongs to uid"
}
prometheus_rewritten() {
	prometheus_wait_run "$1" || return 1
	ls -la "$ne"
	[ "$(systemctl show -P ExecMainStatus gpubuf-prometheus.service)" = 0 ] &&
		[ ! -L "$ne/gpubuf.prom" ] && [ -f "$ne/gpubuf.prom" ] &&
		[ "$(stat -c '%U %a' "$ne/gpubuf.prom")" = "root 644" ] &&
		grep -qx "gpubuf_module_loaded 1" "$ne/gpubuf.prom" &&
		[ "$(cat "$ne/victim.prom")" = "root-owned, not metrics" ] &&
		[ "$(readlink "$ne/gpubuf.prom.tmp")" = victim.prom ] &&
		! ls -A "$ne" | grep -q '^\.gpubuf'
}
prometheus_attack_checks() {
	ne=/var/lib/prometheus/node-exporter
	pattern=$(cat /proc/sys/kernel/core_pattern)
	echo "root-owned, not metrics" >"$ne/victim.prom"
	runuser -u prometheus -- sh -c "mv $ne $ne.real && mkdir $ne &&
		ln -s /proc/sys/kernel/core_pattern $ne/gpubuf.prom.tmp &&
		ln -s /proc/sys/kernel/core_pattern $ne/gpubuf.prom" >"$out/attack.log" 2>&1
	result "prometheus (node_exporter's account) swapped node-exporter/ for its own, with links to core_pattern" \
		prometheus_swapped
	t=$(systemctl show -P ExecMainExitTimestampMonotonic gpubuf-prometheus.service)
	result "the timer's next run refuses the swapped directory: core_pattern unchanged, the links untouched, the unit failed saying why" \
		prometheus_refused "$t"
	rm -rf "$ne"
	mv "$ne.real" "$ne"
	systemctl reset-failed gpubuf-prometheus.service
	# Links in root's own directory: the old unit wrote through the .tmp one.
	ln -s victim.prom "$ne/gpubuf.prom.tmp"
	ln -sf victim.prom "$ne/gpubuf.prom"
	t=$(systemctl show -P ExecMainExitTimestampMonotonic gpubuf-prometheus.service)
	result "with root's directory back, the timer's next run writes gpubuf.prom as a file of its own (root, 0644); links planted there wrote nothing" \
		prometheus_rewritten "$t"
	rm -f "$ne/victim.prom" "$ne/gpubuf.prom.tmp"
}

# CDI: the spec gpubuf-dkms installs in /etc/cdi is the one gpubuf-info
# --cdi writes; Debian's podman gives the device to a container that asks
# for it and not to one that does not. The image is built offline: a
# tarball holding cdi_check, linked statically against the installed
# libgpubuf.a. podman keeps its storage under /run; what podman itself
# makes elsewhere (its cache in /var/lib/containers, the netavark and CNI
# locks in /etc/containers/networks and /etc/cni/net.d) goes after the
# test.
cdi_checks() {
	podman="podman --root /run/gpubuf-podman/root --runroot /run/gpubuf-podman/run --storage-driver vfs"
	image=localhost/gpubuf-cdi-check
	# What podman keeps of its own outside /run (its blob cache, the
	# netavark and CNI locks), to remove what this test made of it
	# afterwards.
	find /etc/containers /etc/cni /var/lib/containers 2>/dev/null | sort >"$state/podman-before.list"
	result "/etc/cdi/gpubuf.json is what gpubuf-info --cdi writes" \
		sh -c 'gpubuf-info --cdi | cmp - /etc/cdi/gpubuf.json'
	rm -rf /tmp/cdi-root
	mkdir -p /tmp/cdi-root
	result "cdi_check builds statically against the installed libgpubuf.a (pkg-config --static)" \
		sh -c "cc -static -O2 -o /tmp/cdi-root/cdi-check $d/cdi_check.c \$(pkg-config --static --cflags --libs gpubuf)"
	result "podman import: an image holding only the static cdi_check" \
		sh -c "tar -C /tmp/cdi-root -c . | $podman import - $image"
	result "podman run --device gpubuf.org/gpubuf=all: the container allocates, maps and reads back a buffer on the module backend" \
		sh -c "$podman run --rm --network=none --device gpubuf.org/gpubuf=all $image /cdi-check >$out/cdi-with.txt 2>&1;
			rc=\$?; cat $out/cdi-with.txt; [ \$rc = 0 ] && grep -q '^ok: backend module' $out/cdi-with.txt"
	# The spec's mode, not the runtime's 0666; owned by the container's
	# user (root here, and a non-root one below).
	result "the container's /dev/gpubuf is 0660, the container user's" \
		grep -q '^/dev/gpubuf: mode 660 uid 0 gid 0$' "$out/cdi-with.txt"
	result "podman run --user 1000:1000 --device gpubuf.org/gpubuf=all: that user owns the node (0660) and allocates" \
		sh -c "$podman run --rm --network=none --user 1000:1000 --device gpubuf.org/gpubuf=all $image /cdi-check >$out/cdi-user.txt 2>&1;
			rc=\$?; cat $out/cdi-user.txt; [ \$rc = 0 ] &&
			grep -q '^/dev/gpubuf: mode 660 uid 1000 gid 1000$' $out/cdi-user.txt &&
			grep -q '^ok: backend module' $out/cdi-user.txt"
	result "podman run without the device: -ENOENT, the message naming the CDI device to ask for" \
		sh -c "$podman run --rm --network=none $image /cdi-check >$out/cdi-without.txt 2>&1;
			rc=\$?; cat $out/cdi-without.txt; [ \$rc = 3 ] &&
			grep -F 'this container was not given the device (podman run --device gpubuf.org/gpubuf=all)' $out/cdi-without.txt"
	sed 's/^/#   container: /' "$out/cdi-with.txt" "$out/cdi-user.txt" "$out/cdi-without.txt" >>"$out/tap" 2>/dev/null
	$podman rmi -a -f >/dev/null 2>&1
	rm -rf /run/gpubuf-podman /tmp/cdi-root
	find /etc/containers /etc/cni /var/lib/containers 2>/dev/null | sort |
		comm -13 "$state/podman-before.list" - | sort -r |
		while IFS= read -r p; do rm -rf "$p"; done
}

step_kernel_update() {
	result "apt-get install -t bookworm-backports linux-image-amd64 linux-headers-amd64 (offline)" \
		apt-get install -y --no-download -t bookworm-backports \
			linux-image-amd64 linux-headers-amd64
	cp "$out/last.log" "$out/kernel-update.log"
	new=$(ls /lib/modules | sort -V | tail -n 1)
	echo "$new" >"$out/new-kver"
	result "the update is a newer kernel ($new, was $(uname -r))" \
		test "$new" != "$(uname -r)"
	result "DKMS built and installed gpubuf for $new by itself" \
		sh -c "dkms status -m gpubuf -v $VERSION -k $new | grep -E ': installed' &&
			ls /lib/modules/$new/updates/dkms/gpubuf.ko*"
}

step_remove_debs() {
	# As a user removes a package entirely: with what it pulled in
	# (python3, NumPy and theirs), whose generated files go with them.
	set -- $PACKAGES
	result "apt-get purge --autoremove removes the $# packages and what they pulled in" \
		apt-get purge -y --autoremove $PACKAGES
	cp "$out/last.log" "$out/remove-debs.log"
	result "no gpubuf package is left in dpkg's database" \
		sh -c '! dpkg -l "*gpubuf*" 2>/dev/null | grep -E "^(ii|rc)"'
	common_gone
}

common_gone() {
	result "dkms knows no gpubuf" sh -c '! dkms status | grep -i gpubuf'
	result "no gpubuf.ko under /lib/modules" \
		sh -c 'test -z "$(find /lib/modules -name "gpubuf.ko*")"'
	result "/usr/src/gpubuf-$VERSION and /var/lib/dkms/gpubuf are gone" \
		sh -c "test ! -e /usr/src/gpubuf-$VERSION -a ! -e /var/lib/dkms/gpubuf"
	left=$(leftovers)
	if [ -z "$left" ]; then
		ok "nothing left behind: no new path outside packages since the snapshot"
	else
		no "nothing left behind: no new path outside packages since the snapshot"
		echo "$left" | sed 's/^/#   left: /' >>"$out/tap"
	fi
	getent group gpubuf >/dev/null &&
		note "group gpubuf stays, as system groups do (sysusers.d)"
}

step_make_install() {
	rm -rf /root/gpubuf
	cp -r "$d/src" /root/gpubuf
	result "make install from the source tree (builds the module for $(uname -r), library and tools)" \
		make -C /root/gpubuf install
	cp "$out/last.log" "$out/make-install.log"
}

step_make_uninstall() {
	result "make uninstall" make -C /root/gpubuf uninstall
	cp "$out/last.log" "$out/make-uninstall.log"
	rmmod gpubuf 2>/dev/null
	common_gone
}

step_dkms_install() {
	result "make dkms-install: DKMS builds and installs gpubuf for $(uname -r)" \
		make -C /root/gpubuf dkms-install
	cp "$out/last.log" "$out/dkms-install.log"
	result "dkms status: gpubuf/$VERSION installed" \
		sh -c "dkms status -m gpubuf -v $VERSION -k $(uname -r) | grep -E ': installed'"
	result "modprobe gpubuf loads DKMS's module and udev hands /dev/gpubuf to group gpubuf" \
		sh -c 'modprobe gpubuf && udevadm settle &&
			case "$(modinfo -n gpubuf)" in
			/lib/modules/*/updates/dkms/*) ;; *) exit 1 ;; esac &&
			test "$(stat -c "%U:%G %a" /dev/gpubuf)" = "root:gpubuf 660"'
	result "make dkms-uninstall" make -C /root/gpubuf dkms-uninstall
	rmmod gpubuf 2>/dev/null
	common_gone
}

for s in "$@"; do
	note "step $s"
	case $s in
	snapshot) step_snapshot ;;
	install-debs) step_install_debs ;;
	checks-dkms) step_checks dkms ;;
	checks-make) step_checks make ;;
	kernel-update) step_kernel_update ;;
	remove-debs) step_remove_debs ;;
	make-install) step_make_install ;;
	make-uninstall) step_make_uninstall ;;
	dkms-install) step_dkms_install ;;
	*) no "unknown step $s" ;;
	esac
done
echo done >"$out/done"
