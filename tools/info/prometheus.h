/* SPDX-License-Identifier: MIT */
/* gpubuf-info --prometheus (prometheus.c). */
#ifndef GPUBUF_INFO_PROMETHEUS_H
#define GPUBUF_INFO_PROMETHEUS_H

/* Print the metrics on stdout; the exit status. */
int info_prometheus(void);

#endif
