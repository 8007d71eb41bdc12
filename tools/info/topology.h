/* SPDX-License-Identifier: MIT */
/* gpubuf-info --topology (topology.c). */
#ifndef GPUBUF_INFO_TOPOLOGY_H
#define GPUBUF_INFO_TOPOLOGY_H

/* Print the report, text or JSON; the exit status. */
int info_topology(int json);

#endif
