// SPDX-License-Identifier: MIT
/*
 * The stand-in's ISAs, code objects and executables: what a dispatcher
 * loads (stub.h says what the stand-in is; stub_queue.c has the queues,
 * stub_memory.c the signals and pool memory).
 *
 * It runs no kernel. A GPU agent has one ISA; a code object is accepted
 * for it only if it is an AMDGPU ELF whose e_flags name the same
 * processor. Symbols are the six "<kernel>.kd" names with the segment
 * sizes of the real code objects. A queue is a real ring of 64-byte AQL
 * packets; its doorbell "completes" every packet handed over (header no
 * longer INVALID) up to the rung index, in order: it records the packet
 * and its kernarg bytes, decrements the completion signal, marks the
 * slot INVALID again and advances the read index.
 *
 * Configuration (read once when loaded):
 *   HSASTUB_ISA=name       every GPU agent's ISA name (default
 *                          amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-)
 *   HSASTUB_GRID_MAX=n     HSA_AGENT_INFO_GRID_MAX_SIZE (default 2^32-1)
 *   HSASTUB_QUEUE_HOLD=1   doorbells complete nothing; hsastub_complete()
 *                          does, for tests of the caller's signal
 */
#include <elf.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stub_dispatch.h"

static const struct {
	const char *name;
	uint32_t kernarg, group;
} stub_kernels[STUB_NKERNELS] = {
	{ "gpubuf_gemv_f32.kd", 88, 1024 },
	{ "gpubuf_gemv_f64.kd", 88, 2048 },
	{ "gpubuf_gemm_f32.kd", 112, 8448 },
	{ "gpubuf_gemm_f64.kd", 112, 16640 },
	{ "gpubuf_stream_read.kd", 24, 0 },
	{ "gpubuf_stream_write.kd", 16, 0 },
};

/* EF_AMDGPU_MACH values of the processors the tests name. */
static const struct {
	const char *proc;
	unsigned int mach;
} stub_machs[] = {
	{ "gfx908", 0x030 }, { "gfx90a", 0x03f }, { "gfx1030", 0x036 },
	{ "gfx942", 0x04c },
};

struct stub_dispatch D;

__attribute__((constructor))
static void stub_dispatch_configure(void)
{
	const char *v = getenv("HSASTUB_ISA");

	snprintf(D.isa, sizeof(D.isa), "%s",
		 v ? v : "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
	v = getenv("HSASTUB_GRID_MAX");
	D.grid_max = v ? (uint32_t)strtoul(v, NULL, 0) : UINT32_MAX;
	v = getenv("HSASTUB_QUEUE_HOLD");
	D.hold = v && !strcmp(v, "1");
}

/* The ISA's processor: "gfx90a" of "amdgcn-amd-amdhsa--gfx90a:xnack-". */
static unsigned int stub_isa_mach(void)
{
	const char *p = strstr(D.isa, "--");
	size_t n;

	if (!p)
		return 0;
	p += 2;
	n = strcspn(p, ":");
	for (size_t i = 0; i < sizeof(stub_machs) / sizeof(stub_machs[0]); i++)
		if (strlen(stub_machs[i].proc) == n &&
		    !strncmp(stub_machs[i].proc, p, n))
			return stub_machs[i].mach;
	return 0;
}

hsa_status_t stub_agent_info_dispatch(uint64_t agent, int gpu,
				      hsa_agent_info_t attribute, void *value)
{
	(void)agent;
	switch ((int)attribute) {
	case HSA_AGENT_INFO_PROFILE:
		*(hsa_profile_t *)value = gpu ? HSA_PROFILE_BASE :
						HSA_PROFILE_FULL;
		return HSA_STATUS_SUCCESS;
	case HSA_AGENT_INFO_GRID_MAX_SIZE:
		*(uint32_t *)value = D.grid_max;
		return HSA_STATUS_SUCCESS;
	case HSA_AGENT_INFO_QUEUE_MIN_SIZE:
		*(uint32_t *)value = gpu ? 64 : 0;
		return HSA_STATUS_SUCCESS;
	default:
		return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	}
}

/* ---- ISAs and code objects ---------------------------------------------- */

STUB_EXPORT hsa_status_t hsa_agent_iterate_isas(
	hsa_agent_t agent, hsa_status_t (*callback)(hsa_isa_t isa, void *data),
	void *data)
{
	STUB_BEGIN(hsa_agent_iterate_isas, 1);
	if (!stub_is_gpu(agent.handle))
		return stub_end(HSA_STATUS_ERROR_INVALID_AGENT);
	stub_end(HSA_STATUS_SUCCESS);
	return callback((hsa_isa_t){ 0x15a0 }, data);
}

STUB_EXPORT hsa_status_t hsa_isa_get_info_alt(hsa_isa_t isa,
					      hsa_isa_info_t attribute,
					      void *value)
{
	STUB_BEGIN(hsa_isa_get_info_alt, 1);
	if (isa.handle != 0x15a0)
		return stub_end(HSA_STATUS_ERROR_INVALID_ISA);
	if (attribute == HSA_ISA_INFO_NAME_LENGTH)
		*(uint32_t *)value = (uint32_t)strlen(D.isa) + 1;
	else if (attribute == HSA_ISA_INFO_NAME)
		memcpy(value, D.isa, strlen(D.isa) + 1);
	else
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	return stub_end(HSA_STATUS_SUCCESS);
}

STUB_EXPORT hsa_status_t hsa_code_object_reader_create_from_memory(
	const void *code_object, size_t size,
	hsa_code_object_reader_t *code_object_reader)
{
	const Elf64_Ehdr *eh = code_object;

	STUB_BEGIN(hsa_code_object_reader_create_from_memory, 1);
	if (!code_object || size < sizeof(*eh) ||
	    memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_machine != EM_AMDGPU) {
		stub_violation("code object reader on %zu bytes that are not an AMDGPU ELF",
			       size);
		return stub_end(HSA_STATUS_ERROR_INVALID_CODE_OBJECT);
	}
	for (int i = 0; i < STUB_MAX_OBJS; i++)
		if (!D.reader[i].live) {
			D.reader[i].live = 1;
			D.reader[i].mach = eh->e_flags & 0xff;
			code_object_reader->handle = (uintptr_t)&D.reader[i];
			return stub_end(HSA_STATUS_SUCCESS);
		}
	return stub_end(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
}

static struct stub_reader *stub_reader_of(uint64_t h)
{
	for (int i = 0; i < STUB_MAX_OBJS; i++)
		if (h == (uintptr_t)&D.reader[i] && D.reader[i].live)
			return &D.reader[i];
	return NULL;
}

static struct stub_exec *stub_exec_of(uint64_t h)
{
	for (int i = 0; i < STUB_MAX_OBJS; i++)
		if (h == (uintptr_t)&D.exec[i] && D.exec[i].live)
			return &D.exec[i];
	return NULL;
}

STUB_EXPORT hsa_status_t hsa_code_object_reader_destroy(
	hsa_code_object_reader_t code_object_reader)
{
	struct stub_reader *r;

	STUB_BEGIN(hsa_code_object_reader_destroy, 1);
	r = stub_reader_of(code_object_reader.handle);
	if (!r) {
		stub_violation("destroy of a reader that is not live");
		return stub_end(HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER);
	}
	for (int i = 0; i < STUB_MAX_OBJS; i++)
		if (D.exec[i].live && D.exec[i].reader == r)
			stub_violation("reader destroyed before its executable");
	r->live = 0;
	return stub_end(HSA_STATUS_SUCCESS);
}

STUB_EXPORT hsa_status_t hsa_executable_create_alt(
	hsa_profile_t profile,
	hsa_default_float_rounding_mode_t default_float_rounding_mode,
	const char *options, hsa_executable_t *executable)
{
	(void)default_float_rounding_mode, (void)options;
	STUB_BEGIN(hsa_executable_create_alt, 1);
	/* dGPU agents are base-profile: a full-profile one would not load. */
	if (profile != HSA_PROFILE_BASE)
		stub_violation("executable of profile %d for a GPU", (int)profile);
	for (int i = 0; i < STUB_MAX_OBJS; i++)
		if (!D.exec[i].live) {
			D.exec[i] = (struct stub_exec){ .live = 1 };
			executable->handle = (uintptr_t)&D.exec[i];
			return stub_end(HSA_STATUS_SUCCESS);
		}
	return stub_end(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
}

STUB_EXPORT hsa_status_t hsa_executable_load_agent_code_object(
	hsa_executable_t executable, hsa_agent_t agent,
	hsa_code_object_reader_t code_object_reader, const char *options,
	hsa_loaded_code_object_t *loaded_code_object)
{
	struct stub_exec *e;
	struct stub_reader *r;

	(void)options, (void)loaded_code_object;
	STUB_BEGIN(hsa_executable_load_agent_code_object, 1);
	e = stub_exec_of(executable.handle);
	r = stub_reader_of(code_object_reader.handle);
	if (!e || !r || !stub_is_gpu(agent.handle) || e->frozen || e->loaded) {
		stub_violation("load of a code object into a bad or frozen executable");
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	}
	/* ROCr matches the processor exactly. */
	if (r->mach != stub_isa_mach())
		return stub_end(HSA_STATUS_ERROR_INVALID_CODE_OBJECT);
	e->loaded = 1;
	e->agent = agent.handle;
	e->reader = r;
	return stub_end(HSA_STATUS_SUCCESS);
}

STUB_EXPORT hsa_status_t hsa_executable_freeze(hsa_executable_t executable,
					       const char *options)
{
	struct stub_exec *e;

	(void)options;
	STUB_BEGIN(hsa_executable_freeze, 1);
	e = stub_exec_of(executable.handle);
	if (!e || e->frozen || !e->loaded) {
		stub_violation("freeze of a bad, frozen or empty executable");
		return stub_end(HSA_STATUS_ERROR_INVALID_EXECUTABLE);
	}
	e->frozen = 1;
	return stub_end(HSA_STATUS_SUCCESS);
}

STUB_EXPORT hsa_status_t hsa_executable_destroy(hsa_executable_t executable)
{
	struct stub_exec *e;

	STUB_BEGIN(hsa_executable_destroy, 1);
	e = stub_exec_of(executable.handle);
	if (!e) {
		stub_violation("destroy of an executable that is not live");
		return stub_end(HSA_STATUS_ERROR_INVALID_EXECUTABLE);
	}
	e->live = 0;
	return stub_end(HSA_STATUS_SUCCESS);
}

/* Symbol handle: executable address + 1 + kernel index. */
STUB_EXPORT hsa_status_t hsa_executable_get_symbol_by_name(
	hsa_executable_t executable, const char *symbol_name,
	const hsa_agent_t *agent, hsa_executable_symbol_t *symbol)
{
	struct stub_exec *e;

	STUB_BEGIN(hsa_executable_get_symbol_by_name, 1);
	e = stub_exec_of(executable.handle);
	if (!e || !e->frozen || !agent || agent->handle != e->agent) {
		stub_violation("symbol lookup in a bad or unfrozen executable, or for another agent");
		return stub_end(HSA_STATUS_ERROR_INVALID_EXECUTABLE);
	}
	for (int i = 0; i < STUB_NKERNELS; i++)
		if (!strcmp(symbol_name, stub_kernels[i].name)) {
			symbol->handle = executable.handle + 1 + (uint64_t)i;
			return stub_end(HSA_STATUS_SUCCESS);
		}
	return stub_end(HSA_STATUS_ERROR_INVALID_SYMBOL_NAME);
}

/* A symbol's kernel object: 0x6b000000 + executable slot * 0x1000 + i * 0x40. */
static uint64_t stub_kernel_object(const struct stub_exec *e, int i)
{
	return 0x6b000000u + (uint64_t)(e - D.exec) * 0x1000 + (uint64_t)i * 0x40;
}

STUB_EXPORT hsa_status_t hsa_executable_symbol_get_info(
	hsa_executable_symbol_t executable_symbol,
	hsa_executable_symbol_info_t attribute, void *value)
{
	struct stub_exec *e = NULL;
	int k = -1;

	STUB_BEGIN(hsa_executable_symbol_get_info, 1);
	for (int i = 0; i < STUB_NKERNELS && !e; i++) {
		e = stub_exec_of(executable_symbol.handle - 1 - (uint64_t)i);
		k = i;
	}
	if (!e) {
		stub_violation("info of a symbol of no live executable");
		return stub_end(HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL);
	}
	switch ((int)attribute) {
	case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT:
		*(uint64_t *)value = stub_kernel_object(e, k);
		break;
	case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE:
		*(uint32_t *)value = stub_kernels[k].kernarg;
		break;
	case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE:
		*(uint32_t *)value = stub_kernels[k].group;
		break;
	case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE:
		*(uint32_t *)value = 0;
		break;
	default:
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	}
	return stub_end(HSA_STATUS_SUCCESS);
}

/* ---- queries for tests ---------------------------------------------------- */

/* The kernel object the stand-in gave kernel name in the live executable for agent. */
STUB_EXPORT uint64_t hsastub_kernel_object(uint64_t agent, const char *name)
{
	uint64_t o = 0;

	pthread_mutex_lock(&stub_lock);
	for (int i = 0; i < STUB_MAX_OBJS; i++)
		if (D.exec[i].live && D.exec[i].frozen && D.exec[i].agent == agent)
			for (int k = 0; k < STUB_NKERNELS; k++)
				if (!strcmp(stub_kernels[k].name, name))
					o = stub_kernel_object(&D.exec[i], k);
	pthread_mutex_unlock(&stub_lock);
	return o;
}
