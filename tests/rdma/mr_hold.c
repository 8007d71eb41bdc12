// SPDX-License-Identifier: GPL-2.0-only
/*
 * An RDMA memory region outliving its gpubuf buffer, for gpubuf-info
 * --processes in 46-bench-rdma (tests/tools/rdma-guest.sh): allocate 2 MiB,
 * map it, register the mapping on rxe0 (ibv_reg_mr pins its pages), then
 * unmap it and close every fd. The buffer is released; its pages stay
 * pinned by the MR, which the module counts as held (held_bytes) and no
 * process owns. Writes "ready" to stdout, then waits to be killed; exit
 * deregisters the MR and the pages go.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/gpubuf.h>

#include "rdma_setup.h"

#define HOLD_BYTES	(2u << 20)

int main(void)
{
	int dev = open(GPUBUF_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	struct ibv_context *ctx = rxe_open();
	struct gpubuf_alloc req;
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	void *p;

	if (dev < 0 || !ctx) {
		fprintf(stderr, "mr-hold: %s\n", dev < 0 ? "no /dev/gpubuf" : "no rxe device");
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	memset(&req, 0, sizeof(req));
	req.size = HOLD_BYTES;
	req.numa_node = GPUBUF_NUMA_ANY;
	req.fd_flags = O_RDWR | O_CLOEXEC;
	if (!pd || ioctl(dev, GPUBUF_IOC_ALLOC, &req)) {
		perror("mr-hold: pd or GPUBUF_IOC_ALLOC");
		return 1;
	}
	p = mmap(NULL, HOLD_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, req.fd, 0);
	if (p == MAP_FAILED) {
		perror("mr-hold: mmap");
		return 1;
	}
	mr = ibv_reg_mr(pd, p, HOLD_BYTES, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	if (!mr) {
		perror("mr-hold: ibv_reg_mr");
		return 1;
	}
	munmap(p, HOLD_BYTES);
	close(req.fd);
	close(dev);
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
