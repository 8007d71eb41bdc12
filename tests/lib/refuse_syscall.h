/* SPDX-License-Identifier: MIT */
/*
 * A seccomp filter that makes one system call fail with EPERM, as the
 * container runtimes' default profiles do (mbind without CAP_SYS_NICE,
 * io_uring_setup since Docker 25), every other call allowed. For the
 * calling thread and the children it forks from then on; 0 or -errno.
 */
#ifndef GPUBUF_TEST_REFUSE_SYSCALL_H
#define GPUBUF_TEST_REFUSE_SYSCALL_H

#include <errno.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

__attribute__((unused))
static int t_refuse_syscall(unsigned int nr)
{
	struct sock_filter prog[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = { sizeof(prog) / sizeof(prog[0]), prog };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog))
		return -errno;
	return 0;
}

#endif /* GPUBUF_TEST_REFUSE_SYSCALL_H */
