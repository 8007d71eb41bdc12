// SPDX-License-Identifier: GPL-2.0-only
/* MODULE_IMPORT_NS() takes a bare identifier (before 6.13) */
#include <linux/module.h>

MODULE_IMPORT_NS(DMA_BUF);
