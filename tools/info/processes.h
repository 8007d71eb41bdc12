/* SPDX-License-Identifier: MIT */
/* gpubuf-info --processes (processes.c). */
#ifndef GPUBUF_INFO_PROCESSES_H
#define GPUBUF_INFO_PROCESSES_H

/* Print the report, text or JSON; the exit status. */
int info_processes(int json);

#endif
