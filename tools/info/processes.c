// SPDX-License-Identifier: MIT
/*
 * gpubuf-info --processes: lsof for gpubuf. For every process: its open
 * files of /dev/gpubuf and what they allocated (their fdinfo keys
 * gpubuf-buffers and gpubuf-bytes), and the gpubuf buffers it holds through
 * dma-buf fds or mappings, each counted once, with their bytes. Then the
 * module's totals: live bytes, and bytes a driver still pins after their
 * buffer was released, which no process owns any more.
 *
 * A dma-buf fd is gpubuf's when its fdinfo says exp_name gpubuf (the
 * exporter's name, which nobody else can set). A mapping is matched by the
 * dma-buf's inode to such an fd, anywhere; one whose fd is closed
 * everywhere only by an inode the dma-buf core's debugfs list
 * (/sys/kernel/debug/dma_buf/bufinfo, root) gives exp_name gpubuf: the name
 * in maps ("/dmabuf:gpubuf") is anybody's to set with DMA_BUF_SET_NAME, so
 * it proves nothing, and such mappings are only counted as unconfirmed
 * without debugfs. Other users' processes need root: those whose fd
 * directory or maps were refused are counted and said.
 *
 * A buffer's node and chunks are not in its fdinfo: that file is the
 * dma-buf core's, which gives exporters no say in it. They come from
 * GPUBUF_IOC_INFO on a copy of the process's fd (pidfd_getfd(2), which
 * needs ptrace rights over it: root), closed again at once. The process is
 * pinned by a pidfd before its fds are read, and the fd is looked at
 * again right before the copy: only a dma-buf of the inode just seen is
 * taken, and a copy that is anything else is closed unused.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <gpubuf.h>

#include "../common/json.h"
#include "../common/sysinfo.h"
#include "processes.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open		434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd		438
#endif
#ifndef DMA_BUF_MAGIC
#define DMA_BUF_MAGIC		0x444d4142	/* "DMAB" */
#endif
#define PROC_BUFINFO	"/sys/kernel/debug/dma_buf/bufinfo"

struct proc_buf {
	unsigned long ino;
	uint64_t size;
	int by_fd, by_map;
	int have_info;			/* GPUBUF_IOC_INFO answered */
	struct gpubuf_info info;
};

struct proc_row {
	int pid;
	char comm[32];
	int dev_files;			/* open /dev/gpubuf */
	long long alloc_buffers, alloc_bytes;
	int fds, mappings;		/* gpubuf dma-buf fds, mappings */
	int nr, cap;			/* distinct buffers held, room */
	int cut;			/* out of memory for the list */
	int unconfirmed;		/* "gpubuf" mappings debugfs could not confirm */
	int unreadable;			/* its fds or maps were refused */
	struct proc_buf *buf;
	struct proc_row *next;
};

/* The number after "key:" in an fdinfo file; -1 when absent. */
static long long fdinfo_num(const char *text, const char *key)
{
	size_t len = strlen(key);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (!strncmp(p, key, len) && p[len] == ':')
			return strtoll(p + len + 1, NULL, 0);
	return -1;
}

static int proc_read(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

static struct proc_buf *proc_hold(struct proc_row *r, unsigned long ino,
				   uint64_t size)
{
	for (int i = 0; i < r->nr; i++)
		if (r->buf[i].ino == ino) {
			if (!r->buf[i].size)
				r->buf[i].size = size;
			return &r->buf[i];
		}
	if (r->nr == r->cap) {
		int cap = r->cap ? 2 * r->cap : 8;
		struct proc_buf *more = realloc(r->buf, cap * sizeof(*more));

		if (!more) {
			r->cut = 1;
			return NULL;
		}
		r->buf = more;
		r->cap = cap;
	}
	r->buf[r->nr] = (struct proc_buf){ .ino = ino, .size = size };
	return &r->buf[r->nr++];
}

/*
 * GPUBUF_IOC_INFO on the buffer behind the process's fd: a copy of the
 * fd through its pidfd, asked through dev (our /dev/gpubuf), closed.
 */
static void proc_info(struct proc_buf *b, int pidfd, const char *path,
		      int fd, int dev)
{
	struct statfs sfs;
	struct stat st;
	int copy;

	if (!b || b->have_info || pidfd < 0 || dev < 0)
		return;
	/*
	 * The process may have closed fd and opened another file there
	 * since: installing that one here could run its ->flush at our
	 * close, or move a socket into our cgroup's classes. Look again
	 * at the last moment; the copy is checked as well.
	 */
	if (stat(path, &st) || st.st_ino != b->ino)
		return;
	copy = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	if (copy < 0)
		return;
	if (!fstatfs(copy, &sfs) && sfs.f_type == DMA_BUF_MAGIC &&
	    !fstat(copy, &st) && st.st_ino == b->ino) {
		memset(&b->info, 0, sizeof(b->info));
		b->info.fd = copy;
		b->have_info = !ioctl(dev, GPUBUF_IOC_INFO, &b->info);
	}
	close(copy);
}

/* -1 when the fd directory could not be read (not ours: ptrace rights). */
static int proc_fds(struct proc_row *r, const char *pid, int dev)
{
	char dir[64], path[320], link[256], text[1024];
	struct dirent *e;
	int pidfd = -1;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%s/fd", pid);
	/* Pinned first: the fds read below are this process's. */
	if (dev >= 0)
		pidfd = (int)syscall(SYS_pidfd_open, r->pid, 0);
	d = opendir(dir);
	if (!d) {
		if (pidfd >= 0)
			close(pidfd);
		return errno == ENOENT ? 0 : -1;	/* ENOENT: it exited */
	}
	while ((e = readdir(d))) {
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		snprintf(path, sizeof(path), "/proc/%s/fdinfo/%s", pid,
			 e->d_name);
		if (!strcmp(link, "/dev/gpubuf")) {
			r->dev_files++;
			if (!proc_read(path, text, sizeof(text)) &&
			    fdinfo_num(text, "gpubuf-buffers") >= 0) {
				r->alloc_buffers += fdinfo_num(text, "gpubuf-buffers");
				r->alloc_bytes += fdinfo_num(text, "gpubuf-bytes");
			}
		} else if ((!strncmp(link, "/dmabuf:", 8) ||
			    !strncmp(link, "anon_inode:dmabuf", 17)) &&
			   !proc_read(path, text, sizeof(text)) &&
			   strstr(text, "exp_name:\tgpubuf\n")) {
			struct proc_buf *b;
			struct stat st;

			/* The inode maps show; fdinfo has no ino before 5.14. */
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			if (stat(path, &st))
				continue;
			r->fds++;
			b = proc_hold(r, (unsigned long)st.st_ino,
				      (uint64_t)fdinfo_num(text, "size"));
			if (b)
				b->by_fd = 1;
			proc_info(b, pidfd, path, atoi(e->d_name), dev);
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	closedir(d);
	return 0;
}

/* The buffer of inode ino some process has a gpubuf fd of, or NULL. */
static const struct proc_buf *proc_known(const struct proc_row *all,
					 unsigned long ino)
{
	for (; all; all = all->next)
		for (int i = 0; i < all->nr; i++)
			if (all->buf[i].ino == ino && all->buf[i].by_fd)
				return &all->buf[i];
	return NULL;
}

/* The inodes of gpubuf's dma-bufs by the dma-buf core's own list. */
struct proc_inos {
	int readable;			/* bufinfo could be read */
	int nr, cap;
	unsigned long *ino;
};

/*
 * /sys/kernel/debug/dma_buf/bufinfo: "size flags mode count exp_name ino
 * name" per buffer (5.10 to 7.2), among other lines.
 */
static void proc_inos_read(struct proc_inos *s)
{
	FILE *f = fopen(PROC_BUFINFO, "re");
	char line[512], exp[64];
	unsigned long ino;

	memset(s, 0, sizeof(*s));
	if (!f)
		return;
	s->readable = 1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*u %*x %*x %*d %63s %lu", exp, &ino) != 2 ||
		    strcmp(exp, "gpubuf"))
			continue;
		if (s->nr == s->cap) {
			int cap = s->cap ? 2 * s->cap : 64;
			unsigned long *more = realloc(s->ino,
						      cap * sizeof(*more));

			if (!more)
				break;
			s->ino = more;
			s->cap = cap;
		}
		s->ino[s->nr++] = ino;
	}
	fclose(f);
}

/*
 * Whether a mapping named "/dmabuf:gpubuf" that no gpubuf fd explains is
 * gpubuf's: by the core's list, or, without debugfs, unconfirmed (said).
 */
static int proc_inos_confirm(const struct proc_inos *s, unsigned long ino,
			     struct proc_row *r)
{
	if (!s->readable) {
		r->unconfirmed++;
		return 0;
	}
	for (int i = 0; i < s->nr; i++)
		if (s->ino[i] == ino)
			return 1;
	return 0;
}

/*
 * gpubuf's mappings: a dma-buf's inode some process has a gpubuf fd of
 * (its size and details then that fd's), or a dma-buf the module named
 * "gpubuf" ("/dmabuf:gpubuf"), which finds a buffer kept by a mapping
 * alone (its size then the mapping's).
 */
static int proc_maps(struct proc_row *r, const char *pid,
		     const struct proc_row *all, const struct proc_inos *ours)
{
	char path[64], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end, ino;
		const struct proc_buf *known;
		struct proc_buf *b;
		const char *name;
		uint64_t size;
		int at = -1;

		/* The name is the rest of the line, spaces and all. */
		if (sscanf(line, "%lx-%lx %*s %*s %*s %lu %n", &start, &end,
			   &ino, &at) < 3 || at < 0)
			continue;
		name = line + at;
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(name, "/dmabuf:", 8) &&
		    strncmp(name, "anon_inode:dmabuf", 17))
			continue;
		known = proc_known(all, ino);
		if (known)
			size = known->size;
		else if (!strcmp(name, "/dmabuf:gpubuf") &&
			 proc_inos_confirm(ours, ino, r))
			size = end - start;
		else
			continue;
		r->mappings++;
		b = proc_hold(r, ino, size);
		if (!b)
			continue;
		b->by_map = 1;
		if (known && known->have_info && !b->have_info) {
			b->have_info = 1;
			b->info = known->info;
		}
	}
	fclose(f);
	return 0;
}

static uint64_t proc_bytes(const struct proc_row *r)
{
	uint64_t b = 0;

	for (int i = 0; i < r->nr; i++)
		b += r->buf[i].size;
	return b;
}

static struct proc_row *proc_scan(int *unreadable, int *unconfirmed)
{
	struct proc_row *all = NULL, **tail = &all, *r;
	struct proc_inos ours;
	int dev = open(GPUBUF_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	struct dirent *e;
	DIR *d = opendir("/proc");

	*unreadable = 0;
	*unconfirmed = 0;
	/* fds first, everywhere: they say which inodes are gpubuf's. */
	while (d && (e = readdir(d))) {
		char comm[64];

		if (e->d_name[0] < '1' || e->d_name[0] > '9' ||
		    atoi(e->d_name) == getpid())
			continue;
		r = calloc(1, sizeof(*r));
		if (!r)
			break;
		r->pid = atoi(e->d_name);
		snprintf(comm, sizeof(comm), "/proc/%.20s/comm", e->d_name);
		if (proc_read(comm, r->comm, sizeof(r->comm)))
			snprintf(r->comm, sizeof(r->comm), "?");
		r->comm[strcspn(r->comm, "\n")] = '\0';
		r->unreadable = proc_fds(r, e->d_name, dev) < 0;
		*tail = r;
		tail = &r->next;
	}
	if (d)
		closedir(d);
	if (dev >= 0)
		close(dev);
	proc_inos_read(&ours);
	for (r = all; r; r = r->next) {
		char pid[16];

		snprintf(pid, sizeof(pid), "%d", r->pid);
		if (proc_maps(r, pid, all, &ours) < 0)
			r->unreadable = 1;
		*unreadable += r->unreadable;
		*unconfirmed += r->unconfirmed;
	}
	free(ours.ino);
	return all;
}

static const char *proc_by(const struct proc_buf *b)
{
	return b->by_fd ? (b->by_map ? "fd and mapping" : "fd") : "mapping";
}

/* "  dma-buf INO: SIZE bytes by fd, requested node N, C chunks, ..." */
static void proc_buf_text(const struct proc_buf *b)
{
	printf("  dma-buf %lu: %llu bytes by %s", b->ino,
	       (unsigned long long)b->size, proc_by(b));
	if (!b->have_info) {
		printf(b->by_fd ? "; node and chunks need root\n"
				: "; node and chunks need an fd of it\n");
		return;
	}
	/* The node asked for at ALLOC; the pages' own may differ. */
	if (b->info.numa_node == GPUBUF_NUMA_ANY)
		printf(", requested node any");
	else
		printf(", requested node %d", b->info.numa_node);
	printf(", %u chunks, %llu bytes in 2 MiB pages, %llu from the reserve\n",
	       b->info.nr_chunks, (unsigned long long)b->info.huge_bytes,
	       (unsigned long long)b->info.reserve_bytes);
}

static void proc_buf_json(struct json *j, const struct proc_buf *b)
{
	json_obj_begin(j, NULL);
	json_u64(j, "inode", b->ino);
	json_u64(j, "size", b->size);
	json_bool(j, "fd", b->by_fd);
	json_bool(j, "mapping", b->by_map);
	if (b->have_info) {
		json_int(j, "requested_node", b->info.numa_node);
		json_int(j, "chunks", b->info.nr_chunks);
		json_u64(j, "huge_bytes", b->info.huge_bytes);
		json_u64(j, "reserve_bytes", b->info.reserve_bytes);
	} else {
		json_null(j, "requested_node");
		json_null(j, "chunks");
		json_null(j, "huge_bytes");
		json_null(j, "reserve_bytes");
	}
	json_obj_end(j);
}

int info_processes(int json)
{
	uint64_t live = 0, held = 0, held_bufs = 0;
	int loaded, unreadable, unconfirmed;
	struct proc_row *all = proc_scan(&unreadable, &unconfirmed), *r, *next;
	struct json j;

	loaded = !sys_read_u64(GPUBUF_SYSFS_CLASS "/live_bytes", &live);
	sys_read_u64(GPUBUF_SYSFS_CLASS "/held_bytes", &held);
	sys_read_u64(GPUBUF_SYSFS_CLASS "/held_buffers", &held_bufs);
	if (json) {
		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		json_bool(&j, "module_loaded", loaded);
		json_arr_begin(&j, "processes");
	} else {
		printf("%-8s %-16s %5s %10s %14s %8s %14s %4s %5s\n", "pid",
		       "command", "dev", "allocated", "bytes", "holds",
		       "bytes", "fds", "maps");
	}
	for (r = all; r; r = r->next) {
		if (!r->dev_files && !r->nr)
			continue;
		if (json) {
			json_obj_begin(&j, NULL);
			json_int(&j, "pid", r->pid);
			json_str(&j, "command", r->comm);
			json_int(&j, "device_files", r->dev_files);
			json_int(&j, "allocated_buffers", r->alloc_buffers);
			json_int(&j, "allocated_bytes", r->alloc_bytes);
			json_int(&j, "buffers", r->nr);
			json_u64(&j, "bytes", proc_bytes(r));
			json_int(&j, "fds", r->fds);
			json_int(&j, "mappings", r->mappings);
			json_arr_begin(&j, "held");
			for (int i = 0; i < r->nr; i++)
				proc_buf_json(&j, &r->buf[i]);
			json_arr_end(&j);
			json_bool(&j, "held_complete", !r->cut);
			json_obj_end(&j);
		} else {
			printf("%-8d %-16s %5d %10lld %14lld %8d %14llu %4d %5d\n",
			       r->pid, r->comm, r->dev_files, r->alloc_buffers,
			       r->alloc_bytes, r->nr,
			       (unsigned long long)proc_bytes(r), r->fds,
			       r->mappings);
			for (int i = 0; i < r->nr; i++)
				proc_buf_text(&r->buf[i]);
			if (r->cut)
				printf("  more buffers, not listed: out of memory\n");
		}
	}
	if (json) {
		json_arr_end(&j);
		json_u64(&j, "live_bytes", live);
		json_u64(&j, "held_bytes", held);
		json_u64(&j, "held_buffers", held_bufs);
		json_int(&j, "unreadable_processes", unreadable);
		json_int(&j, "unconfirmed_mappings", unconfirmed);
		json_obj_end(&j);
		json_finish(&j);
	} else {
		if (!loaded)
			printf("\ngpubuf.ko is not loaded: memfd buffers are not listed (they are ordinary memfd mappings)\n");
		else
			printf("\nlive bytes %llu; held after release, owned by no process: %llu bytes in %llu buffers\n",
			       (unsigned long long)live,
			       (unsigned long long)held,
			       (unsigned long long)held_bufs);
		if (unconfirmed)
			printf("%d mappings named gpubuf with no gpubuf fd anywhere not counted: any dma-buf may carry that name, and without %s (mount debugfs, as root) their exporter is unknown\n",
			       unconfirmed, PROC_BUFINFO);
		if (unreadable)
			printf(geteuid() ?
			       "%d processes not readable by this user (run as root to see them)\n" :
			       "%d processes whose fds or maps were refused even to root (ptrace rights)\n",
			       unreadable);
	}
	for (r = all; r; r = next) {
		next = r->next;
		free(r->buf);
		free(r);
	}
	return 0;
}
