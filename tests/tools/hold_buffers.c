// SPDX-License-Identifier: MIT
/*
 * A process holding gpubuf memory, for gpubuf-info --processes in the
 * guest (tests/tools/guest.sh). "hold-buffers fds": 1 MiB (asked for on
 * node 0) and 3 MiB allocated through one open /dev/gpubuf, the first
 * kept by its fd, the second by a mapping only. "hold-buffers pinned": 2 MiB allocated,
 * pinned by the test pin probe as an RDMA MR would pin it, then unmapped
 * and closed: released, its pages held by the pin, owned by no process.
 * Each writes "ready" to stdout, then waits to be killed.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/gpubuf.h>

#include "../testmod/gpubuf_pinprobe.h"

static int alloc(int dev, uint64_t size, int node)
{
	struct gpubuf_alloc req;

	memset(&req, 0, sizeof(req));
	req.size = size;
	req.numa_node = node;
	req.fd_flags = O_RDWR | O_CLOEXEC;
	return ioctl(dev, GPUBUF_IOC_ALLOC, &req) ? -1 : req.fd;
}

int main(int argc, char **argv)
{
	int dev = open("/dev/gpubuf", O_RDWR | O_CLOEXEC), a, b;
	void *p;

	if (argc != 2 || dev < 0)
		return 2;
	if (!strcmp(argv[1], "fds")) {
		a = alloc(dev, 1 << 20, 0);
		b = alloc(dev, 3 << 20, GPUBUF_NUMA_ANY);
		if (a < 0 || b < 0)
			return 1;
		p = mmap(NULL, 3 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, b, 0);
		if (p == MAP_FAILED)
			return 1;
		close(b);
	} else if (!strcmp(argv[1], "pinned")) {
		struct pinprobe_req req = { .len = 2 << 20,
					    .op = PINPROBE_OP_PIN_HOLD };
		int probe = open(PINPROBE_DEVICE_PATH, O_RDWR | O_CLOEXEC);

		a = alloc(dev, 2 << 20, GPUBUF_NUMA_ANY);
		if (a < 0 || probe < 0)
			return 1;
		p = mmap(NULL, 2 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, a, 0);
		if (p == MAP_FAILED)
			return 1;
		req.addr = (uintptr_t)p;
		if (ioctl(probe, PINPROBE_IOC_RUN, &req))
			return 1;
		munmap(p, 2 << 20);
		close(a);
	} else {
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
