/* SPDX-License-Identifier: MIT */
/*
 * Facts about the machine and the gpubuf module that both tools print:
 * kernel, CPU, emulation, memory, NUMA placement, module parameters and
 * counters. Every reader returns 0 or a negative errno and never prints.
 */
#ifndef GPUBUF_TOOLS_SYSINFO_H
#define GPUBUF_TOOLS_SYSINFO_H

#include <stddef.h>
#include <stdint.h>

#define GPUBUF_SYSFS_PARAMS	"/sys/module/gpubuf/parameters"
#define GPUBUF_SYSFS_CLASS	"/sys/class/misc/gpubuf"

/*
 * A size as the tools take it: "4096", "64K", "1M", "2GiB", "1GB" (powers
 * of 1024 either way). 0, -EINVAL (not a size, or zero) or -ERANGE.
 */
int parse_size(const char *s, uint64_t *out);
int sys_read_str(const char *path, char *buf, size_t len);
int sys_read_u64(const char *path, uint64_t *val);
void sys_kernel(char *buf, size_t len);
void sys_cpu_model(char *buf, size_t len);
/* 1 and a reason in why when running under QEMU, else 0. */
int sys_emulated(char *why, size_t len);
/* A /proc/meminfo field in bytes (kB fields scaled, counts as is). */
int sys_meminfo(const char *field, uint64_t *val);
/* NUMA node of the page at addr, or -1 when unknown. */
int sys_numa_node_of(const void *addr);
/* Online NUMA nodes as the kernel lists them ("0", "0-1"), or "n/a". */
void sys_numa_online(char *buf, size_t len);
/*
 * How [addr, addr + len) of this process is mapped, from /proc/self/smaps:
 * bytes with page-table entries (Rss) and, of those, bytes mapped with PMD
 * entries (2 MiB on x86-64: FilePmdMapped + ShmemPmdMapped +
 * AnonHugePages), summed over the mappings that overlap the range.
 * -ENOENT when no mapping overlaps it.
 */
int sys_pmd_mapped(const void *addr, size_t len, uint64_t *rss,
		   uint64_t *pmd);

#endif
