// SPDX-License-Identifier: MIT
/*
 * Machine facts for the tools' headers. Files under /proc and /sys are read
 * once each; a missing file is an answer ("n/a"), never an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "sysinfo.h"

/* From <numaif.h>, which needs libnuma-dev; the values are ABI. */
#define SYSINFO_MPOL_F_NODE	(1 << 0)
#define SYSINFO_MPOL_F_ADDR	(1 << 1)

int sys_read_str(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if (!len)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

int sys_read_u64(const char *path, uint64_t *val)
{
	char buf[64], *end;
	unsigned long long v;
	int err;

	err = sys_read_str(path, buf, sizeof(buf));
	if (err)
		return err;
	errno = 0;
	v = strtoull(buf, &end, 0);
	if (errno || end == buf)
		return -EINVAL;
	*val = v;
	return 0;
}

void sys_kernel(char *buf, size_t len)
{
	struct utsname u;

	if (uname(&u) < 0) {
		snprintf(buf, len, "n/a");
		return;
	}
	snprintf(buf, len, "%s %s %s", u.sysname, u.release, u.machine);
}

/* The first line of /proc/cpuinfo starting with key, value part only. */
static int sys_cpuinfo_field(const char *key, char *buf, size_t len)
{
	char line[512];
	size_t klen = strlen(key);
	FILE *f;
	int found = 0;

	f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, key, klen) || !colon)
			continue;
		colon++;
		while (*colon == ' ' || *colon == '\t')
			colon++;
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(buf, len, "%s", colon);
		found = 1;
		break;
	}
	fclose(f);
	return found;
}

void sys_cpu_model(char *buf, size_t len)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	char model[256];

	if (!sys_cpuinfo_field("model name", model, sizeof(model)) &&
	    !sys_cpuinfo_field("cpu model", model, sizeof(model)))
		snprintf(model, sizeof(model), "n/a");
	snprintf(buf, len, "%s (%ld online)", model, n);
}

int sys_emulated(char *why, size_t len)
{
	char buf[256];

	if (!sys_read_str("/sys/class/dmi/id/sys_vendor", buf, sizeof(buf)) &&
	    strstr(buf, "QEMU")) {
		snprintf(why, len, "DMI sys_vendor is %s", buf);
		return 1;
	}
	if (sys_cpuinfo_field("model name", buf, sizeof(buf)) &&
	    strstr(buf, "QEMU")) {
		snprintf(why, len, "CPU model is %s", buf);
		return 1;
	}
	return 0;
}

int sys_meminfo(const char *field, uint64_t *val)
{
	char line[256];
	size_t flen = strlen(field);
	int err = -ENOENT;
	FILE *f;

	f = fopen("/proc/meminfo", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;
		char unit[8] = "";

		if (strncmp(line, field, flen) || line[flen] != ':')
			continue;
		if (sscanf(line + flen + 1, "%llu %7s", &v, unit) < 1)
			break;
		*val = strcmp(unit, "kB") ? v : v * 1024;
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

int sys_numa_node_of(const void *addr)
{
	int node = -1;

	if (syscall(SYS_get_mempolicy, &node, NULL, 0UL, addr,
		    SYSINFO_MPOL_F_NODE | SYSINFO_MPOL_F_ADDR) < 0)
		return -1;
	return node;
}

void sys_numa_online(char *buf, size_t len)
{
	if (sys_read_str("/sys/devices/system/node/online", buf, len))
		snprintf(buf, len, "n/a");
}

int sys_pmd_mapped(const void *addr, size_t len, uint64_t *rss,
		   uint64_t *pmd)
{
	static const char *const pmd_keys[] = {
		"FilePmdMapped:", "ShmemPmdMapped:", "AnonHugePages:",
	};
	unsigned long start, end, a = (unsigned long)addr;
	unsigned long long kb;
	int in = 0, found = 0;
	char line[512];
	size_t i;
	FILE *f;

	*rss = *pmd = 0;
	f = fopen("/proc/self/smaps", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		/* A mapping's first line: "start-end perms ...". */
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = start < a + len && end > a;
			found |= in;
			continue;
		}
		if (!in)
			continue;
		if (sscanf(line, "Rss: %llu kB", &kb) == 1)
			*rss += kb * 1024;
		for (i = 0; i < sizeof(pmd_keys) / sizeof(pmd_keys[0]); i++)
			if (!strncmp(line, pmd_keys[i], strlen(pmd_keys[i])) &&
			    sscanf(line + strlen(pmd_keys[i]), "%llu", &kb) == 1)
				*pmd += kb * 1024;
	}
	fclose(f);
	return found ? 0 : -ENOENT;
}

int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end || !v)
		return -EINVAL;
	if (v > UINT64_MAX >> shift)
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}
