// SPDX-License-Identifier: MIT
/*
 * Description: the AMD code objects embedded in libgpubuf: one per
 * architecture the build asked for (HSA_ARCHS), each an ELF64 EM_AMDGPU
 * code object v4 for exactly that processor, holding every kernel's
 * descriptor ("<name>.kd") and a metadata note whose kernel layouts are
 * the ones hsa_code.h documents and gpubuf_hsa_pack_args() writes.
 * Needs no GPU and no HSA runtime; a build without hipcc has nothing to
 * check.
 *
 * The metadata note (NT_AMDGPU_METADATA, owner "AMDGPU") is a MessagePack
 * map: "amdhsa.target" (the ISA name) and "amdhsa.kernels", an array of
 * maps with ".name", ".symbol", ".kernarg_segment_size", ".args" (maps
 * with ".offset", ".size", ".value_kind") and the segment sizes.
 */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>

#ifndef GPUBUF_HAVE_HSA_KERNELS

int main(void)
{
	printf("TAP version 13\n1..0 # SKIP library built without HSA kernels\n");
	return 0;
}

#else

#include "msgpack.h"
#include "tap.h"
#include "../../libgpubuf/hsa/hsa_code.h"

#define T_STR2(x)		#x
#define T_STR(x)		T_STR2(x)
#define T_ISA_PREFIX		"amdgcn-amd-amdhsa--"
#define T_EM_AMDGPU		224
#define T_OSABI_AMDGPU_HSA	64
#define T_ABI_CODE_OBJECT_V4	2
#define T_NT_AMDGPU_METADATA	32
#define T_EF_MACH		0xffu
#define T_EF_XNACK		0x300u	/* v4: 0 unsupported, 0x100 any */
#define T_EF_SRAMECC		0xc00u	/* v4: 0 unsupported, 0x400 any */
#define T_KD_SIZE		64	/* struct kernel_descriptor */
#define T_MAX_KERNELS		16
#define T_MAX_ARGS		16

/*
 * Architectures this test knows: EF_AMDGPU_MACH from LLVM's ELF.h (gfx940
 * as hipcc 5.2 writes it) and the wavefront size hipcc compiles for.
 * An HSA_ARCHS word missing here fails until its values are added.
 */
static const struct t_arch {
	const char *name;
	unsigned int mach, wave;
} t_arch[] = {
	{ "gfx900", 0x2c, 64 }, { "gfx906", 0x2f, 64 },
	{ "gfx908", 0x30, 64 }, { "gfx90a", 0x3f, 64 },
	{ "gfx940", 0x40, 64 }, { "gfx1030", 0x36, 32 },
};

static const struct t_arch *t_arch_find(const char *name)
{
	for (size_t i = 0; i < sizeof(t_arch) / sizeof(t_arch[0]); i++)
		if (!strcmp(t_arch[i].name, name))
			return &t_arch[i];
	return NULL;
}

/* ---- one code object --------------------------------------------------- */

struct t_arg {
	uint64_t offset, size;
	char kind[32];
};

struct t_kernel {
	char name[64], symbol[64];
	uint64_t kernarg_size, group_size, private_size, max_wg, wave;
	int nargs;
	struct t_arg args[T_MAX_ARGS];
};

struct t_code {
	char target[64];
	int nkernels;
	struct t_kernel k[T_MAX_KERNELS];
};

static void t_copy(char *dst, size_t cap, const struct t_mpv *v)
{
	size_t n = v->n < cap - 1 ? (size_t)v->n : cap - 1;

	memcpy(dst, v->s, n);
	dst[n] = '\0';
}

/* A map's next key (a string) and its value's header; -1 on bad input. */
static int t_mp_pair(struct t_mp *m, struct t_mpv *key, struct t_mpv *val)
{
	if (t_mp_next(m, key) || key->kind != T_MP_STR)
		return -1;
	return t_mp_next(m, val);
}

static int t_parse_arg(struct t_mp *m, struct t_arg *a)
{
	struct t_mpv v, key, val;

	if (t_mp_next(m, &v) || v.kind != T_MP_MAP)
		return -1;
	for (uint64_t i = 0; i < v.n; i++) {
		if (t_mp_pair(m, &key, &val))
			return -1;
		if (t_mp_is(&key, ".offset") && val.kind == T_MP_INT)
			a->offset = val.n;
		else if (t_mp_is(&key, ".size") && val.kind == T_MP_INT)
			a->size = val.n;
		else if (t_mp_is(&key, ".value_kind") && val.kind == T_MP_STR)
			t_copy(a->kind, sizeof(a->kind), &val);
		else if (t_mp_skip_items(m, &val))
			return -1;
	}
	return 0;
}

static int t_parse_kernel(struct t_mp *m, struct t_kernel *k)
{
	struct t_mpv v, key, val;

	if (t_mp_next(m, &v) || v.kind != T_MP_MAP)
		return -1;
	for (uint64_t i = 0; i < v.n; i++) {
		uint64_t *num = NULL;

		if (t_mp_pair(m, &key, &val))
			return -1;
		if (t_mp_is(&key, ".args") && val.kind == T_MP_ARRAY) {
			if (val.n > T_MAX_ARGS)
				return -1;
			for (k->nargs = 0; k->nargs < (int)val.n; k->nargs++)
				if (t_parse_arg(m, &k->args[k->nargs]))
					return -1;
			continue;
		}
		if (t_mp_is(&key, ".name") && val.kind == T_MP_STR)
			t_copy(k->name, sizeof(k->name), &val);
		else if (t_mp_is(&key, ".symbol") && val.kind == T_MP_STR)
			t_copy(k->symbol, sizeof(k->symbol), &val);
		else if (t_mp_is(&key, ".kernarg_segment_size"))
			num = &k->kernarg_size;
		else if (t_mp_is(&key, ".group_segment_fixed_size"))
			num = &k->group_size;
		else if (t_mp_is(&key, ".private_segment_fixed_size"))
			num = &k->private_size;
		else if (t_mp_is(&key, ".max_flat_workgroup_size"))
			num = &k->max_wg;
		else if (t_mp_is(&key, ".wavefront_size"))
			num = &k->wave;
		if (num && val.kind == T_MP_INT)
			*num = val.n;
		/* Any other container (e.g. .language_version): its items. */
		if (t_mp_skip_items(m, &val))
			return -1;
	}
	return 0;
}

static int t_parse_metadata(const unsigned char *p, size_t len,
			    struct t_code *c)
{
	struct t_mp m = { p, p + len };
	struct t_mpv v, key, val;

	if (t_mp_next(&m, &v) || v.kind != T_MP_MAP)
		return -1;
	for (uint64_t i = 0; i < v.n; i++) {
		if (t_mp_pair(&m, &key, &val))
			return -1;
		if (t_mp_is(&key, "amdhsa.kernels") && val.kind == T_MP_ARRAY) {
			if (val.n > T_MAX_KERNELS)
				return -1;
			for (c->nkernels = 0; c->nkernels < (int)val.n;
			     c->nkernels++)
				if (t_parse_kernel(&m, &c->k[c->nkernels]))
					return -1;
		} else if (t_mp_is(&key, "amdhsa.target") &&
			   val.kind == T_MP_STR) {
			t_copy(c->target, sizeof(c->target), &val);
		} else if (t_mp_skip_items(&m, &val)) {
			return -1;
		}
	}
	return m.p == m.end ? 0 : -1;
}

/* ---- ELF --------------------------------------------------------------- */

/* Section i's header, checked to lie inside the code object. */
static int t_shdr(const struct gpubuf_hsa_code *e, const Elf64_Ehdr *eh,
		  unsigned int i, Elf64_Shdr *sh)
{
	uint64_t off = eh->e_shoff + (uint64_t)i * sizeof(*sh);

	if (i >= eh->e_shnum || off + sizeof(*sh) > e->size)
		return -1;
	memcpy(sh, e->data + off, sizeof(*sh));
	if (sh->sh_type != SHT_NOBITS &&
	    (sh->sh_offset > e->size || sh->sh_size > e->size - sh->sh_offset))
		return -1;
	return 0;
}

/* The ELF header, with the fields every check relies on. */
static int t_ehdr(const struct gpubuf_hsa_code *e, Elf64_Ehdr *eh)
{
	T_CHECK(e->size >= sizeof(*eh));
	memcpy(eh, e->data, sizeof(*eh));
	T_CHECK(memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0);
	T_EQ(eh->e_ident[EI_CLASS], ELFCLASS64);
	T_EQ(eh->e_ident[EI_DATA], ELFDATA2LSB);
	T_EQ(eh->e_shentsize, sizeof(Elf64_Shdr));
	T_CHECK(eh->e_shoff <= e->size);
	return T_PASS;
}

/* Parse the metadata note of e into c. */
static int t_code_parse(const struct gpubuf_hsa_code *e, struct t_code *c)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh;
	int found = 0;

	memset(c, 0, sizeof(*c));
	T_EQ(t_ehdr(e, &eh), T_PASS);
	for (unsigned int i = 0; i < eh.e_shnum; i++) {
		uint64_t off, end;

		T_EQ(t_shdr(e, &eh, i, &sh), 0);
		if (sh.sh_type != SHT_NOTE)
			continue;
		for (off = sh.sh_offset, end = off + sh.sh_size;
		     end - off >= sizeof(Elf64_Nhdr); ) {
			Elf64_Nhdr nh;
			const unsigned char *name, *desc;
			uint64_t nsz, dsz;

			memcpy(&nh, e->data + off, sizeof(nh));
			nsz = (nh.n_namesz + 3ull) & ~3ull;
			dsz = (nh.n_descsz + 3ull) & ~3ull;
			T_CHECK(nsz + dsz <= end - off - sizeof(nh));
			name = e->data + off + sizeof(nh);
			desc = name + nsz;
			off += sizeof(nh) + nsz + dsz;
			if (nh.n_type != T_NT_AMDGPU_METADATA ||
			    nh.n_namesz != sizeof("AMDGPU") ||
			    memcmp(name, "AMDGPU", sizeof("AMDGPU")))
				continue;
			T_EQ(t_parse_metadata(desc, nh.n_descsz, c), 0);
			found++;
		}
	}
	T_EQ(found, 1);
	return T_PASS;
}

/* The .dynsym entry called name (what ROCr's loader looks up), or -1. */
static int t_dynsym(const struct gpubuf_hsa_code *e, const char *name,
		    Elf64_Sym *out)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh, str;

	memcpy(&eh, e->data, sizeof(eh));
	for (unsigned int i = 0; i < eh.e_shnum; i++) {
		if (t_shdr(e, &eh, i, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		if (t_shdr(e, &eh, sh.sh_link, &str))
			return -1;
		for (uint64_t s = 0; s + sizeof(*out) <= sh.sh_size;
		     s += sizeof(*out)) {
			memcpy(out, e->data + sh.sh_offset + s, sizeof(*out));
			/* The name and its NUL inside the string table. */
			if (out->st_name < str.sh_size &&
			    strlen(name) < str.sh_size - out->st_name &&
			    !memcmp(e->data + str.sh_offset + out->st_name,
				    name, strlen(name) + 1))
				return 0;
		}
	}
	return -1;
}

/* ---- tests ------------------------------------------------------------- */

static const char t_arch_list[] = T_STR(GPUBUF_HSA_ARCH_LIST);

/* The arch of entry e: its ISA name without the common prefix. */
static const char *t_entry_arch(const struct gpubuf_hsa_code *e)
{
	size_t n = strlen(T_ISA_PREFIX);

	return strncmp(e->isa, T_ISA_PREFIX, n) ? e->isa : e->isa + n;
}

/* One entry per HSA_ARCHS word, in order, with the right ISA name. */
static int table_matches_build(void)
{
	char list[sizeof(t_arch_list)], *save = NULL, *w;
	uint32_t i = 0;

	printf("# built for %s: %u code objects\n", t_arch_list,
	       gpubuf_hsa_ncodes);
	memcpy(list, t_arch_list, sizeof(list));
	for (w = strtok_r(list, "/", &save); w;
	     w = strtok_r(NULL, "/", &save), i++) {
		const struct gpubuf_hsa_code *e;
		const struct t_arch *a = t_arch_find(w);

		T_CHECK(i < gpubuf_hsa_ncodes);
		e = &gpubuf_hsa_codes[i];
		printf("# %s: %llu bytes, wavefront %u\n", e->isa,
		       (unsigned long long)e->size, e->wavefront_size);
		T_CHECK(!strncmp(e->isa, T_ISA_PREFIX, strlen(T_ISA_PREFIX)));
		T_CHECK(!strcmp(t_entry_arch(e), w));
		if (!a) {
			printf("# %s: unknown to this test; add its "
			       "EF_AMDGPU_MACH and wavefront size\n", w);
			return T_FAIL;
		}
		T_EQ(e->wavefront_size, a->wave);
		T_EQ(e->reserved, 0);
		T_EQ((uintptr_t)e->data % 64, 0);
		T_CHECK(e->size >= sizeof(Elf64_Ehdr));
	}
	T_EQ(i, gpubuf_hsa_ncodes);
	return T_PASS;
}

/* The required target (MI200); gfx942 cannot be built here. */
static int holds_gfx90a(void)
{
	int n = 0;

	for (uint32_t i = 0; i < gpubuf_hsa_ncodes; i++)
		n += !strcmp(gpubuf_hsa_codes[i].isa, T_ISA_PREFIX "gfx90a");
	T_EQ(n, 1);
	return T_PASS;
}

/* ELF64 LE, HSA code object v4, EM_AMDGPU, for exactly its processor. */
static int code_objects_are_amdgpu_elf(void)
{
	T_CHECK(gpubuf_hsa_ncodes > 0);
	for (uint32_t i = 0; i < gpubuf_hsa_ncodes; i++) {
		const struct gpubuf_hsa_code *e = &gpubuf_hsa_codes[i];
		const struct t_arch *a = t_arch_find(t_entry_arch(e));
		unsigned int xnack, sramecc;
		Elf64_Ehdr eh;

		T_CHECK(a);
		T_EQ(t_ehdr(e, &eh), T_PASS);
		T_EQ(eh.e_ident[EI_OSABI], T_OSABI_AMDGPU_HSA);
		T_EQ(eh.e_ident[EI_ABIVERSION], T_ABI_CODE_OBJECT_V4);
		T_EQ(eh.e_type, ET_DYN);
		T_EQ(eh.e_machine, T_EM_AMDGPU);
		printf("# %s: e_flags 0x%x\n", a->name, eh.e_flags);
		T_EQ(eh.e_flags & T_EF_MACH, a->mach);
		/* "any" or unsupported: one object for every GPU setting. */
		xnack = eh.e_flags & T_EF_XNACK;
		sramecc = eh.e_flags & T_EF_SRAMECC;
		T_CHECK(xnack == 0 || xnack == 0x100);
		T_CHECK(sramecc == 0 || sramecc == 0x400);
		T_EQ(eh.e_flags & ~(T_EF_MACH | T_EF_XNACK | T_EF_SRAMECC), 0);
	}
	return T_PASS;
}

/* Every kernel's descriptor is a 64-byte global object in .dynsym. */
static int kernel_descriptors_present(void)
{
	for (uint32_t i = 0; i < gpubuf_hsa_ncodes; i++) {
		const struct gpubuf_hsa_code *e = &gpubuf_hsa_codes[i];

		for (int k = 0; k < GPUBUF_HSA_NR_KERNELS; k++) {
			const char *sym = gpubuf_hsa_kernels[k].symbol;
			Elf64_Sym s;

			if (t_dynsym(e, sym, &s)) {
				printf("# %s: no symbol %s\n", e->isa, sym);
				return T_FAIL;
			}
			T_EQ(ELF64_ST_TYPE(s.st_info), STT_OBJECT);
			T_EQ(ELF64_ST_BIND(s.st_info), STB_GLOBAL);
			T_CHECK(s.st_shndx != SHN_UNDEF);
			T_EQ(s.st_size, T_KD_SIZE);
		}
	}
	return T_PASS;
}

static const struct t_kernel *t_kernel_find(const struct t_code *c,
					    const char *symbol)
{
	for (int i = 0; i < c->nkernels; i++)
		if (!strcmp(c->k[i].symbol, symbol))
			return &c->k[i];
	return NULL;
}

/* The metadata says what hsa_code.h says, for every object and kernel. */
static int metadata_matches_hsa_code_h(void)
{
	static struct t_code c;

	for (uint32_t i = 0; i < gpubuf_hsa_ncodes; i++) {
		const struct gpubuf_hsa_code *e = &gpubuf_hsa_codes[i];

		T_EQ(t_code_parse(e, &c), T_PASS);
		T_CHECK(!strcmp(c.target, e->isa));
		T_EQ(c.nkernels, GPUBUF_HSA_NR_KERNELS);
		for (int k = 0; k < GPUBUF_HSA_NR_KERNELS; k++) {
			const struct gpubuf_hsa_kernel_info *h =
				&gpubuf_hsa_kernels[k];
			const struct t_kernel *m = t_kernel_find(&c, h->symbol);

			if (!m) {
				printf("# %s: no metadata for %s\n", e->isa,
				       h->symbol);
				return T_FAIL;
			}
			printf("# %s %s: kernarg %llu, %d args, LDS %llu\n",
			       t_entry_arch(e), m->name,
			       (unsigned long long)m->kernarg_size, m->nargs,
			       (unsigned long long)m->group_size);
			T_EQ(m->kernarg_size, h->kernarg_size);
			T_EQ(m->nargs, h->nargs);
			T_EQ(h->kernarg_size, h->nargs * GPUBUF_HSA_ARG_SIZE);
			for (int a = 0; a < m->nargs; a++) {
				T_EQ(m->args[a].offset, a * GPUBUF_HSA_ARG_SIZE);
				T_EQ(m->args[a].size, GPUBUF_HSA_ARG_SIZE);
				/* No hidden_* argument to fill in. */
				T_CHECK(!strcmp(m->args[a].kind, "by_value") ||
					!strcmp(m->args[a].kind,
						"global_buffer"));
			}
			T_EQ(m->group_size, h->group_segment_size);
			T_EQ(m->private_size, 0);
			T_EQ(m->max_wg, h->max_workgroup_size);
			T_CHECK(m->max_wg >= GPUBUF_HSA_THREADS);
			T_EQ(m->wave, e->wavefront_size);
		}
	}
	return T_PASS;
}

/*
 * gpubuf_hsa_pack_args() puts CUDA parameter i where the metadata says
 * argument i goes, and writes nothing past the kernarg segment, even when
 * given more parameters than the kernel takes (the stream write).
 */
static int pack_args_follows_metadata(void)
{
	static struct t_code c;
	uint64_t val[T_MAX_ARGS];
	void *params[T_MAX_ARGS];
	unsigned char seg[256];

	T_CHECK(gpubuf_hsa_ncodes > 0);
	T_EQ(t_code_parse(&gpubuf_hsa_codes[0], &c), T_PASS);
	for (int i = 0; i < T_MAX_ARGS; i++) {
		val[i] = 0x0101010101010101ull * (uint64_t)(i + 1);
		params[i] = &val[i];
	}
	for (int k = 0; k < GPUBUF_HSA_NR_KERNELS; k++) {
		const struct t_kernel *m =
			t_kernel_find(&c, gpubuf_hsa_kernels[k].symbol);

		T_CHECK(m);
		T_CHECK(m->kernarg_size < sizeof(seg));
		memset(seg, 0xee, sizeof(seg));
		gpubuf_hsa_pack_args((enum gpubuf_hsa_kernel)k, seg, params);
		for (int a = 0; a < m->nargs; a++) {
			uint64_t got;

			memcpy(&got, seg + m->args[a].offset, sizeof(got));
			T_EQ(got, val[a]);
		}
		for (size_t b = m->kernarg_size; b < sizeof(seg); b++)
			T_EQ(seg[b], 0xee);
	}
	return T_PASS;
}

int main(void)
{
	static const struct t_test tests[] = {
		T_TEST(table_matches_build),
		T_TEST(holds_gfx90a),
		T_TEST(code_objects_are_amdgpu_elf),
		T_TEST(kernel_descriptors_present),
		T_TEST(metadata_matches_hsa_code_h),
		T_TEST(pack_args_follows_metadata),
	};

	return T_RUN(tests);
}

#endif /* GPUBUF_HAVE_HSA_KERNELS */
