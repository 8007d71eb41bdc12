// SPDX-License-Identifier: MIT
/*
 * Run inside a container by make check-install (tests/install/guest.sh),
 * linked statically against the installed libgpubuf.a: open the module
 * backend, allocate 4 MiB, fill it through the library's mapping and read
 * it back through a second mapping of the buffer's dma-buf fd (the same
 * pages, as a GPU importer would see them). Prints what it found; on
 * failure the library's message. Exit 0 when all holds, 3 when
 * gpubuf_open() fails with -ENOENT (no device given), 1 otherwise.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <gpubuf.h>

#define CHECK_BYTES	(4u << 20)

int main(void)
{
	struct gpubuf_ctx *ctx;
	struct gpubuf *buf;
	char msg[256];
	struct stat st;
	uint32_t *p, *q;
	int err;

	err = gpubuf_open_err(&ctx, 0, msg, sizeof(msg));
	if (err) {
		printf("gpubuf_open: %d (%s): %s\n", err, gpubuf_strerror(err), msg);
		return err == -ENOENT ? 3 : 1;
	}
	if (!stat("/dev/gpubuf", &st))
		printf("/dev/gpubuf: mode %o uid %u gid %u\n",
		       (unsigned int)st.st_mode & 07777, (unsigned int)st.st_uid,
		       (unsigned int)st.st_gid);
	err = gpubuf_alloc(ctx, CHECK_BYTES, NULL, &buf);
	if (err) {
		printf("gpubuf_alloc: %s\n", gpubuf_strerror(err));
		return 1;
	}
	p = gpubuf_ptr(buf);
	for (uint32_t i = 0; i < CHECK_BYTES / 4; i++)
		p[i] = i * 2654435761u;
	q = mmap(NULL, CHECK_BYTES, PROT_READ, MAP_SHARED, gpubuf_fd(buf), 0);
	if (q == MAP_FAILED) {
		printf("mmap of the dma-buf fd: errno %d\n", errno);
		return 1;
	}
	for (uint32_t i = 0; i < CHECK_BYTES / 4; i++)
		if (q[i] != i * 2654435761u) {
			printf("word %u differs through the dma-buf fd\n", i);
			return 1;
		}
	printf("ok: backend %s, %u bytes written and read back through the dma-buf fd\n",
	       gpubuf_backend(ctx) == GPUBUF_BACKEND_MODULE ? "module" : "memfd",
	       CHECK_BYTES);
	munmap(q, CHECK_BYTES);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return 0;
}
