// SPDX-License-Identifier: MIT
/*
 * Replace a file in a directory without following anyone's links: the
 * packages' timer writes node_exporter's textfile as root, in a directory
 * whose parent belongs to the account node_exporter runs as. That account
 * can swap the directory for its own, or plant links in it; a shell's
 * "> file.tmp && mv" would then write root's output wherever they point.
 *
 * So: walk the path one component at a time with O_NOFOLLOW (no symlink
 * anywhere, the last directory included), require that the directory
 * reached belongs to us or to root and that nobody else may write in it,
 * create a temporary name there with O_EXCL|O_NOFOLLOW, and rename it
 * over the target through the same directory fd. A link planted at the
 * target is replaced, never written through.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "textfile.h"

/* The directory, reached without following a symbolic link. */
static int textfile_open_dir(const char *dir, char *why, size_t why_len)
{
	char path[PATH_MAX], *comp, *save = NULL;
	int fd, next;

	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path)) {
		snprintf(why, why_len, "the directory's name is too long");
		return -ENAMETOOLONG;
	}
	fd = open(path[0] == '/' ? "/" : ".",
		  O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, why_len, "cannot open %s: %s",
			 path[0] == '/' ? "/" : ".", strerror(errno));
		return -errno;
	}
	for (comp = strtok_r(path, "/", &save); comp;
	     comp = strtok_r(NULL, "/", &save)) {
		next = openat(fd, comp,
			      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			int err = errno;

			close(fd);
			/* O_NOFOLLOW on a symlink: ELOOP (or ENOTDIR). */
			snprintf(why, why_len, "%s: component '%s': %s", dir,
				 comp, err == ELOOP || err == ENOTDIR ?
				 "is a symbolic link or not a directory" :
				 strerror(err));
			return err == ENOTDIR ? -ELOOP : -err;
		}
		close(fd);
		fd = next;
	}
	return fd;
}

static int textfile_check_dir(int fd, const char *dir, char *why,
			      size_t why_len)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		snprintf(why, why_len, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(why, why_len,
			 "refusing %s: it belongs to uid %u, neither us (uid %u) nor root",
			 dir, (unsigned int)st.st_uid,
			 (unsigned int)geteuid());
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, why_len,
			 "refusing %s: mode %04o lets accounts other than its owner write in it",
			 dir, (unsigned int)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

static int textfile_write_all(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t n = write(fd, data, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

int textfile_replace(const char *path, const char *data, size_t len,
		     mode_t mode, char *why, size_t why_len)
{
	char dir[PATH_MAX], tmp[NAME_MAX + 1];
	const char *base, *slash = strrchr(path, '/');
	unsigned int rnd;
	int dfd, fd = -1, err, tries;

	base = slash ? slash + 1 : path;
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
		snprintf(why, why_len, "%s: not a file name", path);
		return -EINVAL;
	}
	if (strlen(base) > NAME_MAX - 16) {
		snprintf(why, why_len, "%s: the file's name is too long", path);
		return -ENAMETOOLONG;
	}
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else if ((size_t)(slash - path) >= sizeof(dir)) {
		snprintf(why, why_len, "%s: the directory's name is too long",
			 path);
		return -ENAMETOOLONG;
	} else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);

	dfd = textfile_open_dir(dir, why, why_len);
	if (dfd < 0)
		return dfd;
	err = textfile_check_dir(dfd, dir, why, why_len);
	if (err)
		goto out_dir;
	/*
	 * A dot name that does not end in the target's suffix: collectors
	 * that read "*.prom" never see a half-written file.
	 */
	for (tries = 0; tries < 16; tries++) {
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			rnd = (unsigned int)getpid() * 2654435761u + (unsigned int)tries;
		snprintf(tmp, sizeof(tmp), ".%s.%08x.tmp", base, rnd);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			    O_CLOEXEC, mode);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		err = -errno;
		snprintf(why, why_len, "creating a temporary file in %s: %s",
			 dir, strerror(errno));
		goto out_dir;
	}
	/* The umask must not change what collectors may read. */
	err = fchmod(fd, mode) < 0 ? -errno : 0;
	if (!err)
		err = textfile_write_all(fd, data, len);
	if (!err && fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && renameat(dfd, tmp, dfd, base) < 0)
		err = -errno;
	if (err) {
		snprintf(why, why_len, "writing %s: %s", path, strerror(-err));
		unlinkat(dfd, tmp, 0);
	}
out_dir:
	close(dfd);
	return err;
}
