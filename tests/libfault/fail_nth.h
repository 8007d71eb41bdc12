/* SPDX-License-Identifier: MIT */
/*
 * Failing the Nth call that libgpubuf makes to the C library, for the
 * fault-injection test (tests/lib/faults.c). The test program is linked
 * with -Wl,--wrap for each function below (FAIL_NTH_WRAP in
 * libgpubuf/Makefile), so that the calls made by libgpubuf's objects, and
 * by the test's own code, go through fail_nth.c first; the C library's
 * internal calls and other libraries' (the Vulkan driver's) do not.
 */
#ifndef GPUBUF_TEST_FAIL_NTH_H
#define GPUBUF_TEST_FAIL_NTH_H

/* The nth wrapped call from now on fails (1: the next one); 0 disarms. */
void fail_nth_arm(unsigned int nth);
/*
 * Disarm; whether the armed failure happened, and which function it was
 * (NULL when it did not).
 */
const char *fail_nth_disarm(void);

#endif /* GPUBUF_TEST_FAIL_NTH_H */
