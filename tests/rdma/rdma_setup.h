/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Soft-RoCE set-up for the RDMA suite: load the modules, bring up an
 * Ethernet device, bind rxe0 to it. Each step returns 0 or -1 with the
 * reason in @why, so the test can print it as a "not ok" line's cause.
 */
#ifndef GPUBUF_RDMA_SETUP_H
#define GPUBUF_RDMA_SETUP_H

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define RXE_NAME	"rxe0"
/* QEMU's user network hands the guest this address. */
#define RXE_IPV4	"10.0.2.15/24"

struct why {
	char text[1024];
};

static inline int why_set(struct why *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->text, sizeof(w->text), fmt, ap);
	va_end(ap);
	return -1;
}

static inline void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Run a shell command; on failure, its exit status and output are the reason. */
static inline int run_cmd(struct why *w, const char *cmd)
{
	char out[512] = "", full[512];
	size_t len = 0, n;
	FILE *f;
	int st;

	snprintf(full, sizeof(full), "%s 2>&1", cmd);
	f = popen(full, "r");
	if (!f)
		return why_set(w, "%s: popen: %s", cmd, strerror(errno));
	while ((n = fread(out + len, 1, sizeof(out) - 1 - len, f)) > 0)
		len += n;
	out[len] = 0;
	st = pclose(f);
	if (st == 0)
		return 0;
	return why_set(w, "'%s' failed (wait status %d): %s", cmd, st, out);
}

/*
 * Whether the running kernel has a module @name: 0 not in modules.dep,
 * 1 listed but its file is absent (the guest carries only the modules it
 * was given), 2 present.
 */
static inline int module_available(const char *name)
{
	struct utsname u;
	char dir[128], line[1024], want[96];
	struct stat st;
	FILE *f;
	int found = 0;

	if (uname(&u))
		return 0;
	snprintf(dir, sizeof(dir), "/lib/modules/%s", u.release);
	snprintf(line, sizeof(line), "%s/modules.dep", dir);
	f = fopen(line, "r");
	if (!f)
		return 0;
	snprintf(want, sizeof(want), "/%s.ko", name);
	while (!found && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':'), *hit, path[1200];
		size_t end;

		if (!colon)
			continue;
		*colon = 0;
		hit = strstr(line, want);
		if (!hit)
			continue;
		/* ".ko" or ".ko.xz" must end the file name. */
		end = strlen(want);
		if (hit[end] && hit[end] != '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, line);
		found = stat(path, &st) == 0 ? 2 : 1;
	}
	fclose(f);
	return found;
}

static inline int module_loaded(const char *name)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "/sys/module/%s", name);
	return stat(path, &st) == 0;
}

static inline int load_module(struct why *w, const char *name)
{
	char cmd[128];

	if (module_loaded(name))
		return 0;
	if (module_available(name) != 2)
		return why_set(w, "module %s is neither loaded nor present "
			       "(the guest carries it when tests/check.sh names it "
			       "in GPUBUF_VM_MODULES)", name);
	snprintf(cmd, sizeof(cmd), "modprobe %s", name);
	return run_cmd(w, cmd);
}

/* The first Ethernet device other than lo, into @dev; 0 when found. */
static inline int find_ether(char *dev, size_t len)
{
	DIR *d = opendir("/sys/class/net");
	struct dirent *e;
	int ret = -1;

	if (!d)
		return -1;
	while (ret && (e = readdir(d))) {
		char path[300];
		unsigned int type = 0;
		FILE *f;

		if (e->d_name[0] == '.' || !strcmp(e->d_name, "lo"))
			continue;
		snprintf(path, sizeof(path), "/sys/class/net/%s/type", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		/* ARPHRD_ETHER: rxe binds only to Ethernet devices. */
		if (fscanf(f, "%u", &type) == 1 && type == 1 &&
		    strlen(e->d_name) < len) {
			strcpy(dev, e->d_name);
			ret = 0;
		}
		fclose(f);
	}
	closedir(d);
	return ret;
}

static inline int has_ipv4(const char *dev)
{
	struct ifaddrs *all, *a;
	int found = 0;

	if (getifaddrs(&all))
		return 0;
	for (a = all; a; a = a->ifa_next)
		found |= a->ifa_addr && a->ifa_addr->sa_family == AF_INET &&
			 !strcmp(a->ifa_name, dev);
	freeifaddrs(all);
	return found;
}

/* An RDMA device whose name starts with "rxe", opened; NULL when none. */
static inline struct ibv_context *rxe_open(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	if (!list)
		return NULL;
	for (i = 0; list[i] && !ctx; i++)
		if (!strncmp(ibv_get_device_name(list[i]), "rxe", 3))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

static inline int rxe_present(void)
{
	struct ibv_context *ctx = rxe_open();

	if (!ctx)
		return 0;
	ibv_close_device(ctx);
	return 1;
}

/*
 * Bind rxe0 to the guest's Ethernet device unless an rxe device exists.
 * crc32_generic first: rxe of 6.1 asks the crypto API for crc32, which a
 * guest without udev cannot autoload (rdma link add then fails ENOENT);
 * kernels whose rxe uses the crc32 library do not ship it.
 */
static inline int rxe_setup(struct why *w)
{
	char dev[64], cmd[256];
	int i;

	if (rxe_present())
		return 0;
	if (module_available("crc32_generic") && load_module(w, "crc32_generic"))
		return -1;
	if (load_module(w, "rdma_rxe") || load_module(w, "ib_uverbs"))
		return -1;
	if (find_ether(dev, sizeof(dev))) {
		if (module_available("e1000") && load_module(w, "e1000"))
			return -1;
		/* Up to 30 s, only a missing NIC takes that long. */
		for (i = 0; i < 300 && find_ether(dev, sizeof(dev)); i++)
			sleep_ms(100);
		if (i == 300)
			return why_set(w, "no Ethernet device in the guest "
				       "(tests/vm/run.sh adds an e1000 NIC with GPUBUF_VM_NIC=1)");
	}
	snprintf(cmd, sizeof(cmd), "ip link set %s up", dev);
	if (run_cmd(w, cmd))
		return -1;
	/* An IPv4 address gives a RoCE v2 GID that routes on any kernel. */
	if (!has_ipv4(dev)) {
		snprintf(cmd, sizeof(cmd), "ip addr add %s dev %s", RXE_IPV4, dev);
		if (run_cmd(w, cmd))
			return -1;
	}
	snprintf(cmd, sizeof(cmd), "rdma link add %s type rxe netdev %s", RXE_NAME, dev);
	if (run_cmd(w, cmd))
		return -1;
	/* uverbs creates /dev/infiniband/uverbsN asynchronously (up to 30 s). */
	for (i = 0; i < 300 && !rxe_present(); i++)
		sleep_ms(100);
	if (!rxe_present())
		return why_set(w, "'%s' succeeded but libibverbs lists no rxe device "
			       "(provider librxe or /etc/libibverbs.d/rxe.driver missing?)", cmd);
	return 0;
}

#endif /* GPUBUF_RDMA_SETUP_H */
