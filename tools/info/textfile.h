/* SPDX-License-Identifier: MIT */
/* Replace a file without following links (textfile.c). */
#ifndef GPUBUF_INFO_TEXTFILE_H
#define GPUBUF_INFO_TEXTFILE_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Atomically replace path with len bytes of data, mode bits mode. Refuses
 * (-ELOOP) a symbolic link anywhere in the directory's path, and (-EPERM)
 * a directory owned by anyone but the caller or root, or writable by its
 * group or others. 0 or a negative errno; on failure why says what, and
 * nothing is left behind.
 */
int textfile_replace(const char *path, const char *data, size_t len,
		     mode_t mode, char *why, size_t why_len);

#endif
