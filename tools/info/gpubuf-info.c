// SPDX-License-Identifier: MIT
/*
 * gpubuf-info: what gpubuf sees on this machine. Versions, backend, the
 * module's limits and counters, GPU runtimes, Vulkan devices (vkinfo.c)
 * and DRM devices, with --map
 * how a buffer of a given size gets mapped, and with --topology every
 * device's NUMA node and link (topology.c). See gpubuf-info(1). Always
 * exits 0 after reporting (2 on a usage error).
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <gpubuf.h>

#include "../common/drmdev.h"
#include "../common/gpuprobe.h"
#include "../common/json.h"
#include "../common/sysinfo.h"
#include "cdi.h"
#include "processes.h"
#include "prometheus.h"
#include "topology.h"
#include "vkinfo.h"

static const char *const limit_names[] = {
	"max_buffer_bytes", "max_total_bytes", "reserve_bytes",
};
static const char *const counter_names[] = {
	"live_buffers", "live_bytes", "peak_bytes", "failed_allocs",
	"held_bytes", "held_buffers", "reserve_ready_bytes",
	"reserve_zeroing_bytes", "reserve_used_bytes", "reserve_shrunk_bytes",
};
#define NR_LIMITS	3
#define NR_COUNTERS	10

struct info {
	struct gpubuf_ctx *ctx;
	char open_error[256];
	const char *backend;
	int have_driver;
	struct gpubuf_version drv;
	char kernel[160];
	int emulated;
	char emulated_why[256];
	int module_loaded;		/* /sys/module/gpubuf exists */
	int have_limit[NR_LIMITS];
	uint64_t limit[NR_LIMITS];
	int have_counter[NR_COUNTERS];
	uint64_t counter[NR_COUNTERS];
	struct gpu_probe cuda, hsa;
	struct vk_listing vk;
	struct drm_card cards[DRMDEV_MAX];
	int nr_cards;			/* negative errno: no /dev/dri */
	uint64_t map_size;		/* --map: bytes asked for, 0 none */
	int map_err;			/* gpubuf_alloc() or smaps error */
	uint64_t map_bytes;		/* the buffer's size */
	uint64_t map_rss, map_pmd;	/* resident, of which PMD-mapped */
	int map_aligned;		/* address 2 MiB aligned */
};

#define PMD_BYTES	(2ULL << 20)

static void info_usage(FILE *f)
{
	fputs("usage: gpubuf-info [--json] [--map SIZE | --topology | --processes |\n"
	      "                   --prometheus[=FILE] | --cdi] [-h|--help]\n"
	      "  --json     one JSON document on stdout (default: text)\n"
	      "  --map SIZE allocate a SIZE buffer (64M, 1G, ...) and report how\n"
	      "             much of its mapping 2 MiB (PMD) entries hold\n"
	      "  --topology every CUDA, HSA, Vulkan, DRM and RDMA device: PCI\n"
	      "             address, NUMA node, local CPUs, PCIe link; node distances\n"
	      "  --processes every process holding gpubuf memory (fds, mappings,\n"
	      "             what its /dev/gpubuf files allocated) and the bytes held\n"
	      "             after release that no process owns\n"
	      "  --prometheus the module's counters and limits in Prometheus' text\n"
	      "             format, for node_exporter's textfile collector; with\n"
	      "             =FILE, FILE is replaced whole, never through a symlink,\n"
	      "             in a directory only its owner (us or root) may write\n"
	      "  --cdi      a Container Device Interface spec (JSON) giving containers\n"
	      "             /dev/gpubuf as " GPUBUF_CDI_DEVICE "\n"
	      "  -h, --help this text\n"
	      "Environment: GPUBUF_BACKEND=module|memfd|auto selects the backend.\n"
	      "Exit status: 0 after reporting, 2 on a usage error.\n", f);
}

/*
 * Allocate a buffer as any caller would (gpubuf_alloc() maps and populates
 * it), write to every page (kernels before 5.14 cannot populate), and read
 * its mapping's page-table make-up from /proc/self/smaps.
 */
static void info_map(struct info *in)
{
	struct gpubuf *buf;
	size_t off;

	if (!in->ctx) {
		in->map_err = -ENODEV;
		return;
	}
	if (in->map_size > SIZE_MAX) {
		in->map_err = -EOVERFLOW;
		return;
	}
	in->map_err = gpubuf_alloc(in->ctx, (size_t)in->map_size, NULL, &buf);
	if (in->map_err)
		return;
	in->map_bytes = gpubuf_size(buf);
	for (off = 0; off < gpubuf_size(buf); off += 4096)
		((volatile char *)gpubuf_ptr(buf))[off] = 0;
	in->map_aligned = !((uintptr_t)gpubuf_ptr(buf) & (PMD_BYTES - 1));
	in->map_err = sys_pmd_mapped(gpubuf_ptr(buf), gpubuf_size(buf),
				     &in->map_rss, &in->map_pmd);
	gpubuf_unref(buf);
}

static void info_collect(struct info *in)
{
	char path[256];
	uint64_t dummy;
	int i;

	if (gpubuf_open_err(&in->ctx, GPUBUF_OPEN_ALLOW_MEMFD, in->open_error,
			    sizeof(in->open_error))) {
		in->ctx = NULL;
		in->backend = "none";
	} else if (gpubuf_backend(in->ctx) == GPUBUF_BACKEND_MODULE) {
		in->backend = "module";
		in->have_driver = !gpubuf_driver_version(in->ctx, &in->drv);
	} else {
		in->backend = "memfd";
	}
	sys_kernel(in->kernel, sizeof(in->kernel));
	in->emulated = sys_emulated(in->emulated_why, sizeof(in->emulated_why));
	in->module_loaded = !sys_read_u64(GPUBUF_SYSFS_PARAMS "/max_buffer_bytes",
					  &dummy);
	for (i = 0; i < NR_LIMITS; i++) {
		snprintf(path, sizeof(path), GPUBUF_SYSFS_PARAMS "/%s",
			 limit_names[i]);
		in->have_limit[i] = !sys_read_u64(path, &in->limit[i]);
	}
	for (i = 0; i < NR_COUNTERS; i++) {
		snprintf(path, sizeof(path), GPUBUF_SYSFS_CLASS "/%s",
			 counter_names[i]);
		in->have_counter[i] = !sys_read_u64(path, &in->counter[i]);
	}
	gpu_probe_cuda(&in->cuda);
	gpu_probe_hsa(&in->hsa);
	vk_list(&in->vk);
	in->nr_cards = drm_card_list(in->cards, DRMDEV_MAX);
	if (in->map_size)
		info_map(in);
}

static const char *info_na(const struct info *in)
{
	return in->module_loaded ? "n/a" : "n/a (module not loaded)";
}

static void text_probe(const struct gpu_probe *p)
{
	printf("%-22s ", p->name);
	if (!p->found)
		printf("unavailable: %s\n", p->reason);
	else if (p->usable && p->kernels >= 0)
		printf("%s version %s, %d device(s)%s%s, %s, kernels: %s%s%s\n",
		       p->lib, p->version[0] ? p->version : "?",
		       p->device_count, p->device0[0] ? ", first: " : "",
		       p->device0, p->arch[0] ? p->arch : "?",
		       p->kernels ? "yes" : "no (", p->kernels ? "" :
		       p->kernels_why, p->kernels ? "" : ")");
	else if (p->usable)
		printf("%s version %s, %d device(s)%s%s\n", p->lib,
		       p->version[0] ? p->version : "?", p->device_count,
		       p->device0[0] ? ", first: " : "", p->device0);
	else
		printf("%s version %s, unusable: %s\n", p->lib,
		       p->version[0] ? p->version : "?", p->reason);
}

static void info_text(const struct info *in)
{
	int i;

	printf("%-22s %d.%d.%d (compiled against %s, ABI %d)\n", "library",
	       gpubuf_version_major(), gpubuf_version_minor(),
	       gpubuf_version_patch(), GPUBUF_VERSION_STRING,
	       GPUBUF_ABI_VERSION);
	printf("%-22s %s%s%s\n", "backend", in->backend,
	       in->ctx ? "" : ": ", in->ctx ? "" : in->open_error);
	if (in->have_driver)
		printf("%-22s %u.%u.%u, ABI %u..%u\n", "driver", in->drv.major,
		       in->drv.minor, in->drv.patch, in->drv.abi_min,
		       in->drv.abi);
	else
		printf("%-22s %s\n", "driver", info_na(in));
	printf("%-22s %s\n", "kernel", in->kernel);
	if (in->emulated)
		printf("%-22s %s\n", "emulated", in->emulated_why);
	for (i = 0; i < NR_LIMITS; i++) {
		if (in->have_limit[i])
			printf("%-22s %llu\n", limit_names[i],
			       (unsigned long long)in->limit[i]);
		else
			printf("%-22s %s\n", limit_names[i], info_na(in));
	}
	for (i = 0; i < NR_COUNTERS; i++) {
		if (in->have_counter[i])
			printf("%-22s %llu\n", counter_names[i],
			       (unsigned long long)in->counter[i]);
		else
			printf("%-22s %s\n", counter_names[i], info_na(in));
	}
	text_probe(&in->cuda);
	text_probe(&in->hsa);
	vk_list_text(&in->vk);
	if (in->nr_cards <= 0)
		printf("%-22s none\n", "drm");
	for (i = 0; i < in->nr_cards; i++)
		printf("%-22s %s %s %d.%d.%d\n", "drm", in->cards[i].path,
		       in->cards[i].driver, in->cards[i].major,
		       in->cards[i].minor, in->cards[i].patch);
	if (!in->map_size)
		return;
	if (in->map_err)
		printf("%-22s %llu bytes: %s\n", "mapping",
		       (unsigned long long)in->map_size,
		       gpubuf_strerror(in->map_err));
	else
		printf("%-22s %llu bytes, %s: %.1f%% in 2 MiB (PMD) entries, %.1f%% resident\n",
		       "mapping", (unsigned long long)in->map_bytes,
		       in->map_aligned ? "2 MiB-aligned" : "not 2 MiB-aligned",
		       100.0 * in->map_pmd / in->map_bytes,
		       100.0 * in->map_rss / in->map_bytes);
}

static void json_probe(struct json *j, const struct gpu_probe *p)
{
	json_obj_begin(j, p->name);
	json_str(j, "library", p->lib);
	json_bool(j, "found", p->found);
	json_bool(j, "usable", p->usable);
	if (p->version[0])
		json_str(j, "version", p->version);
	else
		json_null(j, "version");
	if (p->driver_version)
		json_int(j, "driver_version", p->driver_version);
	if (p->device_count >= 0)
		json_int(j, "device_count", p->device_count);
	if (p->device0[0])
		json_str(j, "device0", p->device0);
	if (p->kernels >= 0) {
		json_str(j, "device0_arch", p->arch);
		json_bool(j, "device0_kernels", p->kernels);
		if (!p->kernels)
			json_str(j, "device0_kernels_why", p->kernels_why);
	}
	if (!p->usable)
		json_str(j, "reason", p->reason);
	json_obj_end(j);
}

static void json_sysfs(struct json *j, const char *key, const char *const *names,
		       const int *have, const uint64_t *val, int n)
{
	int i;

	json_obj_begin(j, key);
	for (i = 0; i < n; i++) {
		if (have[i])
			json_u64(j, names[i], val[i]);
		else
			json_null(j, names[i]);
	}
	json_obj_end(j);
}

static void json_mapping(struct json *j, const struct info *in)
{
	json_obj_begin(j, "mapping");
	json_u64(j, "size_requested", in->map_size);
	if (in->map_err) {
		json_str(j, "error", gpubuf_strerror(in->map_err));
	} else {
		json_u64(j, "size_bytes", in->map_bytes);
		json_bool(j, "aligned_2mib", in->map_aligned);
		json_u64(j, "resident_bytes", in->map_rss);
		json_u64(j, "pmd_mapped_bytes", in->map_pmd);
		json_dbl(j, "pmd_mapped_pct", 100.0 * in->map_pmd /
					      in->map_bytes);
	}
	json_obj_end(j);
}

static void info_json(const struct info *in)
{
	char v[32];
	struct json j;
	int i;

	json_init(&j, stdout);
	json_obj_begin(&j, NULL);
	json_str(&j, "tool", "gpubuf-info");
	json_obj_begin(&j, "library");
	snprintf(v, sizeof(v), "%d.%d.%d", gpubuf_version_major(),
		 gpubuf_version_minor(), gpubuf_version_patch());
	json_str(&j, "version", v);
	json_str(&j, "version_compiled", GPUBUF_VERSION_STRING);
	json_int(&j, "abi", GPUBUF_ABI_VERSION);
	json_obj_end(&j);
	json_str(&j, "backend", in->backend);
	if (!in->ctx)
		json_str(&j, "backend_error", in->open_error);
	if (in->have_driver) {
		json_obj_begin(&j, "driver");
		snprintf(v, sizeof(v), "%u.%u.%u", in->drv.major,
			 in->drv.minor, in->drv.patch);
		json_str(&j, "version", v);
		json_int(&j, "abi", in->drv.abi);
		json_int(&j, "abi_min", in->drv.abi_min);
		json_obj_end(&j);
	} else {
		json_null(&j, "driver");
	}
	json_bool(&j, "module_loaded", in->module_loaded);
	json_str(&j, "kernel", in->kernel);
	json_bool(&j, "emulated", in->emulated);
	json_sysfs(&j, "limits", limit_names, in->have_limit, in->limit,
		   NR_LIMITS);
	json_sysfs(&j, "counters", counter_names, in->have_counter,
		   in->counter, NR_COUNTERS);
	json_obj_begin(&j, "runtimes");
	json_probe(&j, &in->cuda);
	json_probe(&j, &in->hsa);
	json_obj_end(&j);
	vk_list_json(&j, &in->vk);
	json_arr_begin(&j, "drm_devices");
	for (i = 0; i < in->nr_cards; i++) {
		json_obj_begin(&j, NULL);
		json_str(&j, "path", in->cards[i].path);
		json_str(&j, "driver", in->cards[i].driver);
		snprintf(v, sizeof(v), "%d.%d.%d", in->cards[i].major,
			 in->cards[i].minor, in->cards[i].patch);
		json_str(&j, "version", v);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	if (in->map_size)
		json_mapping(&j, in);
	json_obj_end(&j);
	json_finish(&j);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "map", required_argument, NULL, 'm' },
		{ "topology", no_argument, NULL, 't' },
		{ "prometheus", optional_argument, NULL, 'p' },
		{ "processes", no_argument, NULL, 'P' },
		{ "cdi", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t map_size = 0;
	const char *prom_file = NULL;
	struct info in;
	int c, json = 0, topology = 0, prometheus = 0, processes = 0, cdi = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'm':
			if (parse_size(optarg, &map_size)) {
				fprintf(stderr, "ERROR: --map: not a size: '%s'\n",
					optarg);
				info_usage(stderr);
				return 2;
			}
			break;
		case 't':
			topology = 1;
			break;
		case 'p':
			prometheus = 1;
			if (optarg && !*optarg) {
				fprintf(stderr, "ERROR: --prometheus=: an empty file name\n");
				info_usage(stderr);
				return 2;
			}
			prom_file = optarg;
			break;
		case 'P':
			processes = 1;
			break;
		case 'c':
			cdi = 1;
			break;
		case 'h':
			info_usage(stdout);
			return 0;
		default:
			fprintf(stderr, "ERROR: unknown option '%s'\n",
				argv[optind - 1]);
			info_usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ERROR: unexpected argument '%s'\n", argv[optind]);
		info_usage(stderr);
		return 2;
	}
	if (topology + prometheus + processes + cdi + !!map_size > 1 ||
	    ((prometheus || cdi) && json)) {
		fprintf(stderr, "ERROR: --map, --topology, --processes, --prometheus and --cdi are separate reports (--prometheus and --cdi have no --json)\n");
		info_usage(stderr);
		return 2;
	}
	if (prometheus)
		return info_prometheus(prom_file);
	if (cdi)
		return info_cdi();
	if (processes)
		return info_processes(json);
	if (topology)
		return info_topology(json);
	memset(&in, 0, sizeof(in));
	in.map_size = map_size;
	info_collect(&in);
	if (!in.ctx)
		fprintf(stderr, "note: gpubuf_open: %s\n", in.open_error);
	if (json)
		info_json(&in);
	else
		info_text(&in);
	gpubuf_close(in.ctx);
	return 0;
}
