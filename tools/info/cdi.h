/* SPDX-License-Identifier: MIT */
/* gpubuf-info --cdi (cdi.c). */
#ifndef GPUBUF_INFO_CDI_H
#define GPUBUF_INFO_CDI_H

/* Print the CDI spec on stdout; the exit status. */
int info_cdi(void);

#endif
