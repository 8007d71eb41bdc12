// SPDX-License-Identifier: MIT
/*
 * gpubuf-info --cdi: a Container Device Interface spec giving a container
 * /dev/gpubuf, for podman, containerd, CRI-O and Kubernetes device plugins
 * (GPUBUF_CDI_DEVICE, "--device gpubuf.org/gpubuf=all"). One device, "all": the module has one
 * node, and every buffer is allocated through it.
 *
 * cdiVersion 0.3.0, the first tagged version, because the spec uses only
 * what it has (deviceNodes with a path): a runtime accepts a spec whose
 * version it knows, and older runtimes (Debian 12's podman 4.3) know fewer.
 * No major or minor: the runtime takes them from the host's node when the
 * container starts, so the spec stays right across module reloads (a misc
 * device's minor is dynamic) and needs no regeneration. The mode is the
 * host's 0660, and the cgroup access "rw" without "m" (a container has no
 * reason to make device nodes); without them runtimes give 0666 and
 * "rwm". With no uid or gid the runtime makes the node the container
 * process's user's (CDI's rule), so that user, root or not, opens it.
 */
#include <stdio.h>

#include <gpubuf.h>

#include "../common/json.h"
#include "cdi.h"

int info_cdi(void)
{
	struct json j;

	json_init(&j, stdout);
	json_obj_begin(&j, NULL);
	json_str(&j, "cdiVersion", "0.3.0");
	json_str(&j, "kind", GPUBUF_CDI_KIND);
	json_arr_begin(&j, "devices");
	json_obj_begin(&j, NULL);
	json_str(&j, "name", GPUBUF_CDI_DEVICE + sizeof(GPUBUF_CDI_KIND));
	json_obj_begin(&j, "containerEdits");
	json_arr_begin(&j, "deviceNodes");
	json_obj_begin(&j, NULL);
	json_str(&j, "path", "/dev/gpubuf");
	json_str(&j, "permissions", "rw");
	json_int(&j, "fileMode", 0660);
	json_obj_end(&j);
	json_arr_end(&j);
	json_obj_end(&j);
	json_obj_end(&j);
	json_arr_end(&j);
	json_obj_end(&j);
	json_finish(&j);
	/* A short write (full disk) must not install a cut spec. */
	if (fflush(stdout) || ferror(stdout)) {
		perror("gpubuf-info: writing the CDI spec");
		return 1;
	}
	return 0;
}
