// SPDX-License-Identifier: MIT
/*
 * Per-thread error detail. An errno says what kind of failure happened; a
 * GPU runtime knows more (its own error name, which call failed), and the
 * caller gets that text here without any shared state between threads.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>

#include "core/internal.h"

static __thread char gpubuf_error_text[256];

void gpubuf_error_clear(void)
{
	gpubuf_error_text[0] = '\0';
}

void gpubuf_error_set(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(gpubuf_error_text, sizeof(gpubuf_error_text), fmt, ap);
	va_end(ap);
}

GPUBUF_EXPORT const char *gpubuf_last_error(void)
{
	return gpubuf_error_text;
}

const char *gpubuf_dlerror(void)
{
	const char *e = dlerror();

	return e ? e : "dlopen() failed and dlerror() has no reason";
}
