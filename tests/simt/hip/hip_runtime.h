/* SPDX-License-Identifier: MIT */
/* The HIP dialect's header, as the CPU emulator provides it (../simt.h). */
#ifndef GPUBUF_SIMT_HIP_RUNTIME_H
#define GPUBUF_SIMT_HIP_RUNTIME_H
#include "../simt.h"
#endif
