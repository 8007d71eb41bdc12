// SPDX-License-Identifier: MIT
/*
 * gpubuf-info --prometheus: the module's counters and limits in
 * Prometheus' text exposition format, for node_exporter's textfile
 * collector (the packages' timer writes them there every 30 seconds). Only
 * sysfs is read: no device is opened and no GPU runtime loaded, so it is
 * cheap and runs without the gpubuf group. None of the module's counters
 * is kept per NUMA node, so there is no node label. With a file name the
 * text is written there through textfile_replace(): whole or not at all,
 * and never through a link someone else planted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpubuf.h>

#include "../common/sysinfo.h"
#include "prometheus.h"
#include "textfile.h"

struct prom_metric {
	const char *name;	/* Prometheus name */
	const char *type;	/* gauge or counter */
	const char *path;	/* sysfs file */
	const char *help;
};

static const struct prom_metric prom_metrics[] = {
	{ "gpubuf_live_buffers", "gauge", GPUBUF_SYSFS_CLASS "/live_buffers",
	  "Buffers allocated and not yet released." },
	{ "gpubuf_live_bytes", "gauge", GPUBUF_SYSFS_CLASS "/live_bytes",
	  "Bytes of those buffers." },
	{ "gpubuf_peak_bytes", "gauge", GPUBUF_SYSFS_CLASS "/peak_bytes",
	  "Highest gpubuf_live_bytes since the module was loaded." },
	{ "gpubuf_alloc_failures_total", "counter",
	  GPUBUF_SYSFS_CLASS "/failed_allocs",
	  "Allocations that passed validation and got no buffer." },
	{ "gpubuf_held_bytes", "gauge", GPUBUF_SYSFS_CLASS "/held_bytes",
	  "Bytes of released buffers a GPU or RDMA driver still pins." },
	{ "gpubuf_held_buffers", "gauge", GPUBUF_SYSFS_CLASS "/held_buffers",
	  "Released buffers with pages a driver still pins." },
	{ "gpubuf_reserve_ready_bytes", "gauge",
	  GPUBUF_SYSFS_CLASS "/reserve_ready_bytes",
	  "Zeroed 2 MiB pages waiting in the reserve, bytes." },
	{ "gpubuf_reserve_zeroing_bytes", "gauge",
	  GPUBUF_SYSFS_CLASS "/reserve_zeroing_bytes",
	  "Reserve pages back from buffers being zeroed, bytes." },
	{ "gpubuf_reserve_used_bytes", "gauge",
	  GPUBUF_SYSFS_CLASS "/reserve_used_bytes",
	  "Reserve pages lent to buffers, live or held, bytes." },
	{ "gpubuf_reserve_shrunk_bytes_total", "counter",
	  GPUBUF_SYSFS_CLASS "/reserve_shrunk_bytes",
	  "Reserve pages given back under memory pressure since load, bytes." },
	{ "gpubuf_max_buffer_bytes", "gauge",
	  GPUBUF_SYSFS_PARAMS "/max_buffer_bytes",
	  "The module's limit on one buffer, bytes." },
	{ "gpubuf_max_total_bytes", "gauge",
	  GPUBUF_SYSFS_PARAMS "/max_total_bytes",
	  "The module's limit on all buffers and held pages, bytes." },
	{ "gpubuf_reserve_target_bytes", "gauge",
	  GPUBUF_SYSFS_PARAMS "/reserve_bytes",
	  "The reserve's target size (reserve_bytes), bytes." },
};

/* Label values: only the characters Prometheus would escape are dropped. */
static void prom_label(char *s)
{
	for (; *s; s++)
		if (*s == '"' || *s == '\\' || *s == '\n')
			*s = '_';
}

/* The metrics text on f; a write error shows in ferror(f). */
static void prom_print(FILE *f)
{
	char module[64] = "", lib[32];
	uint64_t v;
	int loaded = !sys_read_u64(GPUBUF_SYSFS_PARAMS "/max_buffer_bytes", &v);

	if (sys_read_str("/sys/module/gpubuf/version", module, sizeof(module)))
		snprintf(module, sizeof(module), "%s", loaded ? "unknown" : "none");
	module[strcspn(module, "\n")] = '\0';
	prom_label(module);
	snprintf(lib, sizeof(lib), "%d.%d.%d", gpubuf_version_major(),
		 gpubuf_version_minor(), gpubuf_version_patch());
	fprintf(f, "# HELP gpubuf_module_loaded Whether gpubuf.ko is loaded; without it there are no other gpubuf metrics.\n"
		"# TYPE gpubuf_module_loaded gauge\n"
		"gpubuf_module_loaded %d\n", loaded);
	fprintf(f, "# HELP gpubuf_info The library's release and the loaded module's.\n"
		"# TYPE gpubuf_info gauge\n"
		"gpubuf_info{library=\"%s\",module=\"%s\"} 1\n", lib, module);
	if (!loaded) {
		fprintf(f, "# gpubuf.ko is not loaded: no module counters.\n");
		return;
	}
	for (size_t i = 0; i < sizeof(prom_metrics) / sizeof(prom_metrics[0]);
	     i++) {
		const struct prom_metric *m = &prom_metrics[i];

		if (sys_read_u64(m->path, &v))
			continue;	/* a module older than the counter */
		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", m->name,
			m->help, m->name, m->type, m->name,
			(unsigned long long)v);
	}
}

/*
 * Exit status 1 when the text could not be written whole (a full disk, a
 * refused directory): a file is then left as it was, stdout's reader
 * sees the error.
 */
int info_prometheus(const char *file)
{
	char why[512], *text = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	if (!file) {
		prom_print(stdout);
		if (fflush(stdout) || ferror(stdout)) {
			perror("gpubuf-info: writing the metrics");
			return 1;
		}
		return 0;
	}
	f = open_memstream(&text, &len);
	if (!f) {
		perror("gpubuf-info: open_memstream");
		return 1;
	}
	prom_print(f);
	if (ferror(f) | fclose(f)) {
		fprintf(stderr, "gpubuf-info: formatting the metrics: %s\n",
			strerror(errno));
		free(text);
		return 1;
	}
	/* 0644: node_exporter runs as another account and only reads. */
	err = textfile_replace(file, text, len, 0644, why, sizeof(why));
	free(text);
	if (err) {
		fprintf(stderr, "gpubuf-info: --prometheus=%s: %s\n", file, why);
		return 1;
	}
	return 0;
}
