/* SPDX-License-Identifier: MIT */
/* gpubuf-info --prometheus (prometheus.c). */
#ifndef GPUBUF_INFO_PROMETHEUS_H
#define GPUBUF_INFO_PROMETHEUS_H

/*
 * The metrics on stdout (file NULL) or in file, replaced whole without
 * following links (textfile.h); the exit status.
 */
int info_prometheus(const char *file);

#endif
