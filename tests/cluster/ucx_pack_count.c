// SPDX-License-Identifier: GPL-2.0-only
/*
 * The pack counter: an LD_PRELOAD library that counts the bytes UCX's
 * generic datatypes make the CPU pack and unpack. Open MPI's pml_ucx hands
 * UCX a datatype with gaps (an MPI_Type_vector whose stride exceeds its
 * block, such as a padded matrix's rows) as a generic datatype: UCX then
 * calls its pack and unpack callbacks, which copy every byte through a
 * staging buffer, instead of moving the user's memory in place. A
 * contiguous datatype never comes here.
 *
 * It wraps ucp_dt_create_generic(), giving UCX callbacks of its own that
 * call Open MPI's and add up the bytes. At exit it writes one line, a TAP
 * comment, to stderr (which mpirun forwards):
 *
 *   # ucx-pack-count: pid P: generic datatypes D, packed N bytes, unpacked M bytes
 *
 * A program can also read the counts so far: ucx_pack_count(), found with
 * dlsym(RTLD_DEFAULT, "ucx_pack_count") when the library is preloaded,
 * fills in { generic datatypes, bytes packed, bytes unpacked }.
 *
 * Built without UCX's headers (Debian's libucx0 has none): the declarations
 * below are UCX's public ABI for generic datatypes (ucp/api/ucp.h,
 * ucp_generic_dt_ops_t, unchanged through UCX 1.x).
 *
 *   mpirun -x LD_PRELOAD=.../ucx-pack-count.so ... ./program
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int ucs_status_t;		/* UCS_OK is 0 */
typedef uint64_t ucp_datatype_t;

struct ucp_generic_dt_ops {
	void *(*start_pack)(void *context, const void *buffer, size_t count);
	void *(*start_unpack)(void *context, void *buffer, size_t count);
	size_t (*packed_size)(void *state);
	size_t (*pack)(void *state, size_t offset, void *dest, size_t max_length);
	ucs_status_t (*unpack)(void *state, size_t offset, const void *src, size_t length);
	void (*finish)(void *state);
};

typedef ucs_status_t create_fn(const struct ucp_generic_dt_ops *ops, void *context,
			       ucp_datatype_t *datatype);

ucs_status_t ucp_dt_create_generic(const struct ucp_generic_dt_ops *ops, void *context,
				   ucp_datatype_t *datatype);

static atomic_ullong packed, unpacked, types;

/* What UCX keeps as the datatype's context: the original ops and context. */
struct dt {
	const struct ucp_generic_dt_ops *ops;
	void *context;
};

/* What UCX keeps as a pack or unpack state. */
struct st {
	const struct ucp_generic_dt_ops *ops;
	void *state;
};

static void *wrap_state(const struct dt *dt, void *state)
{
	struct st *s;

	if (!state)
		return NULL;
	s = malloc(sizeof(*s));
	if (!s) {
		static const char msg[] = "ucx-pack-count: out of memory\n";

		(void)!write(2, msg, sizeof(msg) - 1);
		abort();
	}
	s->ops = dt->ops;
	s->state = state;
	return s;
}

static void *start_pack(void *context, const void *buffer, size_t count)
{
	struct dt *dt = context;

	return wrap_state(dt, dt->ops->start_pack(dt->context, buffer, count));
}

static void *start_unpack(void *context, void *buffer, size_t count)
{
	struct dt *dt = context;

	return wrap_state(dt, dt->ops->start_unpack(dt->context, buffer, count));
}

static size_t packed_size(void *state)
{
	struct st *s = state;

	return s->ops->packed_size(s->state);
}

static size_t pack(void *state, size_t offset, void *dest, size_t max_length)
{
	struct st *s = state;
	size_t n = s->ops->pack(s->state, offset, dest, max_length);

	atomic_fetch_add(&packed, n);
	return n;
}

static ucs_status_t unpack(void *state, size_t offset, const void *src, size_t length)
{
	struct st *s = state;
	ucs_status_t rc = s->ops->unpack(s->state, offset, src, length);

	if (rc == 0)
		atomic_fetch_add(&unpacked, length);
	return rc;
}

static void finish(void *state)
{
	struct st *s = state;

	s->ops->finish(s->state);
	free(s);
}

static const struct ucp_generic_dt_ops counting_ops = {
	.start_pack = start_pack,
	.start_unpack = start_unpack,
	.packed_size = packed_size,
	.pack = pack,
	.unpack = unpack,
	.finish = finish,
};

/* UCX's own function: libucp may sit in a library Open MPI loaded locally. */
static create_fn *real_create(void)
{
	static create_fn *fn;
	void *h;

	if (fn)
		return fn;
	fn = (create_fn *)dlsym(RTLD_NEXT, "ucp_dt_create_generic");
	if (!fn) {
		h = dlopen("libucp.so.0", RTLD_NOW | RTLD_NOLOAD);
		if (h)
			fn = (create_fn *)dlsym(h, "ucp_dt_create_generic");
	}
	return fn;
}

ucs_status_t ucp_dt_create_generic(const struct ucp_generic_dt_ops *ops, void *context,
				   ucp_datatype_t *datatype)
{
	create_fn *fn = real_create();
	struct dt *dt;
	ucs_status_t rc;

	if (!fn) {
		static const char msg[] = "ucx-pack-count: no ucp_dt_create_generic in libucp\n";

		(void)!write(2, msg, sizeof(msg) - 1);
		abort();
	}
	/* Lives as long as the datatype; UCX never tells us when that ends. */
	dt = malloc(sizeof(*dt));
	if (!dt)
		return fn(ops, context, datatype);
	dt->ops = ops;
	dt->context = context;
	rc = fn(&counting_ops, dt, datatype);
	if (rc == 0)
		atomic_fetch_add(&types, 1);
	else
		free(dt);
	return rc;
}

void ucx_pack_count(unsigned long long counts[3]);
void ucx_pack_count(unsigned long long counts[3])
{
	counts[0] = atomic_load(&types);
	counts[1] = atomic_load(&packed);
	counts[2] = atomic_load(&unpacked);
}

__attribute__((destructor)) static void report(void)
{
	char line[160];
	int n;

	n = snprintf(line, sizeof(line),
		     "# ucx-pack-count: pid %ld: generic datatypes %llu, packed %llu bytes, unpacked %llu bytes\n",
		     (long)getpid(), (unsigned long long)atomic_load(&types),
		     (unsigned long long)atomic_load(&packed),
		     (unsigned long long)atomic_load(&unpacked));
	if (n > 0)
		(void)!write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}
