// SPDX-License-Identifier: MIT
/*
 * Description: the CUDA kernels' fatbin embedded in libgpubuf: a well
 * formed container that fills exactly the embedded bytes, with machine
 * code for sm_75, sm_80 and sm_90 (CUDA_ARCHS) and PTX for compute_90,
 * and CUDA ELF images.
 * Needs no GPU and no driver; a build without nvcc has nothing to check.
 *
 * Container layout, as measured on nvcc 13.0 output (little-endian):
 *   header  u32 magic 0xba55ed50, u16 version 1, u16 header size (16),
 *           u64 bytes of entries after the header
 *   entry   u16 kind (1 PTX, 2 ELF), u16 version, u32 entry header size
 *           (0x40 ELF, 0x50 PTX), u64 payload size (padded to 8),
 *           u32 arch at 0x1c (80, 90), u64 flags at 0x28, payload next
 * Flags 0x2000 and 0x8000 mark a compressed payload (--compress-mode
 * speed and the zstd default for PTX); such a payload is not an ELF
 * image as it stands.
 */
#include <stdint.h>
#include <stdio.h>

#ifndef GPUBUF_HAVE_CUDA_KERNELS

int main(void)
{
	printf("TAP version 13\n1..0 # SKIP library built without nvcc\n");
	return 0;
}

#else

#include "tap.h"

/* libgpubuf/cuda/fatbin.S; hidden, but this program links the static archive. */
extern const unsigned char gpubuf_cuda_fatbin[], gpubuf_cuda_fatbin_end[];

#define T_FATBIN_MAGIC		0xba55ed50u
#define T_FATBIN_HDR		16
#define T_ENTRY_HDR_MIN		0x40	/* the fields read below fit */
#define T_KIND_PTX		1
#define T_KIND_ELF		2
#define T_FLAGS_COMPRESSED	0xa000u
#define T_EM_CUDA		190
#define T_MAX_ENTRIES		64

struct t_entry {
	unsigned int kind;
	unsigned int arch;
	uint64_t flags;
	const unsigned char *payload;
	uint64_t size;
};

static struct t_entry t_entry[T_MAX_ENTRIES];
static int t_nentries;

static uint64_t t_le(const unsigned char *p, int bytes)
{
	uint64_t v = 0;

	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Walk the container into t_entry[]; T_FAIL with a diagnostic if broken. */
static int t_parse(void)
{
	const unsigned char *p = gpubuf_cuda_fatbin;
	uint64_t len = (uint64_t)(gpubuf_cuda_fatbin_end - p), off, hdr;

	t_nentries = 0;
	T_EQ((uintptr_t)p % 8, 0);	/* cuModuleLoadData needs this */
	T_CHECK(len >= T_FATBIN_HDR);
	T_EQ(t_le(p, 4), T_FATBIN_MAGIC);
	T_EQ(t_le(p + 4, 2), 1);
	hdr = t_le(p + 6, 2);
	T_CHECK(hdr >= T_FATBIN_HDR && hdr <= len);
	/* One container, ending exactly where the embedded bytes do. */
	T_EQ(t_le(p + 8, 8), len - hdr);
	for (off = hdr; off < len; ) {
		const unsigned char *e = p + off;
		uint64_t ehdr, size;

		T_CHECK(t_nentries < T_MAX_ENTRIES);
		T_CHECK(len - off >= T_ENTRY_HDR_MIN);
		ehdr = t_le(e + 4, 4);
		size = t_le(e + 8, 8);
		T_CHECK(ehdr >= T_ENTRY_HDR_MIN && ehdr <= len - off);
		T_CHECK(size <= len - off - ehdr);
		t_entry[t_nentries++] = (struct t_entry){
			.kind = (unsigned int)t_le(e, 2),
			.arch = (unsigned int)t_le(e + 0x1c, 4),
			.flags = t_le(e + 0x28, 8),
			.payload = e + ehdr,
			.size = size,
		};
		off += ehdr + size;
	}
	T_EQ(off, len);
	T_CHECK(t_nentries > 0);
	return T_PASS;
}

static int container_is_well_formed(void)
{
	T_EQ(t_parse(), T_PASS);
	for (int i = 0; i < t_nentries; i++) {
		printf("# entry %d: %s arch %u, %llu bytes, flags 0x%llx\n", i,
		       t_entry[i].kind == T_KIND_ELF ? "ELF" :
		       t_entry[i].kind == T_KIND_PTX ? "PTX" : "unknown",
		       t_entry[i].arch, (unsigned long long)t_entry[i].size,
		       (unsigned long long)t_entry[i].flags);
		T_CHECK(t_entry[i].kind == T_KIND_ELF ||
			t_entry[i].kind == T_KIND_PTX);
	}
	return T_PASS;
}

static int t_has(unsigned int kind, unsigned int arch)
{
	int n = 0;

	if (t_parse() != T_PASS)
		return 0;
	for (int i = 0; i < t_nentries; i++)
		n += t_entry[i].kind == kind && t_entry[i].arch == arch;
	return n;
}

static int holds_sm90_code(void)
{
	T_EQ(t_has(T_KIND_ELF, 90), 1);
	return T_PASS;
}

static int holds_sm80_code(void)
{
	T_EQ(t_has(T_KIND_ELF, 80), 1);
	return T_PASS;
}

/* Turing (T4, RTX 20xx): the oldest architecture the README names. */
static int holds_sm75_code(void)
{
	T_EQ(t_has(T_KIND_ELF, 75), 1);
	return T_PASS;
}

/* What the driver JIT-compiles for GPUs newer than sm_90. */
static int holds_compute90_ptx(void)
{
	T_EQ(t_has(T_KIND_PTX, 90), 1);
	return T_PASS;
}

static int elf_images_are_cuda(void)
{
	int checked = 0, compressed = 0;

	T_EQ(t_parse(), T_PASS);
	for (int i = 0; i < t_nentries; i++) {
		const unsigned char *elf = t_entry[i].payload;

		if (t_entry[i].kind != T_KIND_ELF)
			continue;
		if (t_entry[i].flags & T_FLAGS_COMPRESSED) {
			compressed++;
			continue;
		}
		T_CHECK(t_entry[i].size >= 64);		/* Elf64_Ehdr */
		T_CHECK(memcmp(elf, "\177ELF", 4) == 0);
		T_EQ(elf[4], 2);			/* ELFCLASS64 */
		T_EQ(elf[5], 1);			/* little-endian */
		T_EQ(t_le(elf + 18, 2), T_EM_CUDA);	/* e_machine */
		checked++;
	}
	printf("# %d ELF images checked, %d compressed\n", checked,
	       compressed);
	if (!checked)
		return t_skip("every ELF image is compressed");
	return T_PASS;
}

int main(void)
{
	static const struct t_test tests[] = {
		T_TEST(container_is_well_formed),
		T_TEST(holds_sm90_code),
		T_TEST(holds_sm80_code),
		T_TEST(holds_sm75_code),
		T_TEST(holds_compute90_ptx),
		T_TEST(elf_images_are_cuda),
	};

	return T_RUN(tests);
}

#endif /* GPUBUF_HAVE_CUDA_KERNELS */
