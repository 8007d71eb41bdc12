// SPDX-License-Identifier: MIT
/*
 * Description: libgpubuf's GPU kernels (libgpubuf/kernels/gpubuf_kernels.cu)
 * executed on the CPU under the emulator of simt.h, once per dialect the
 * Makefile builds this program for: CUDA with 32-lane warps, HIP with
 * 64-lane (gfx9) and 32-lane (gfx10+) wavefronts. Parameters come from the
 * library's own operand checks (kargs.c), so a case runs what
 * gpubuf_cuda_gemv()/gemm() would launch.
 *
 * GEMV and GEMM in f32 and f64, every layout of every operand (a
 * transposed view is the other layout with the same ld, as
 * gpubuf_matrix_transpose() makes it), padded ld, sub-views of larger
 * matrices, strided vectors, sizes that are not multiples of the tile or
 * the warp, k = 0, alpha = 0 and beta = 0, each on the grid the library
 * picks and on one- and two-block grids that force the grid-stride
 * loops. Each result is checked against a reference computed in double,
 * within 2 (k + 2) u (|alpha| sum |a||b| + |beta||c|), u the unit
 * roundoff of the type. Every element outside an operand's view (ld
 * padding, the rest of the parent matrix) is a signalling NaN that must
 * come out bit-identical, and reading it would turn the result into NaN:
 * kernels neither write nor use padding. Operands end at a PROT_NONE page.
 * beta = 0 runs on an output full of NaN, alpha = 0 on inputs full of NaN.
 *
 * The emulator's own checks are tested too: a barrier or a shuffle that
 * not every thread reaches must fail the launch.
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "simt.h"
#include "gpubuf_kernels.cu"
#include "simt_kargs.h"

#if defined(__HIP__)
#define T_DIALECT "HIP"
#else
#define T_DIALECT "CUDA"
#endif
static const unsigned int t_warp = GPUBUF_WARP;

/* ---- TAP ------------------------------------------------------------------ */

static int t_n, t_failed;

static void t_result(bool ok, const std::string &name)
{
	printf("%s %d - %s\n", ok ? "ok" : "not ok", ++t_n, name.c_str());
	t_failed += !ok;
}

/* ---- operands -------------------------------------------------------------- */

/* The pattern outside every view: a signalling NaN no arithmetic makes. */
template <typename T> static T t_pad();
template <> float t_pad<float>()
{
	uint32_t u = 0x7fa0beefu;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}
template <> double t_pad<double>()
{
	uint64_t u = 0x7ff4beefcafe0001ull;
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

static uint64_t t_rng = 0x9e3779b97f4a7c15ull;

/* A value in [-1, 1) with few bits, so products are exact in double. */
static double t_rand()
{
	t_rng ^= t_rng << 13;
	t_rng ^= t_rng >> 7;
	t_rng ^= t_rng << 17;
	return (double)(int)((t_rng >> 40) % 2048 - 1024) / 1024.0;
}

/*
 * A view of rows x cols at (r0, c0) of a parent matrix of prows x pcols
 * with leading dimension ld. The parent's storage ends at a PROT_NONE
 * page; what lies outside the view is t_pad().
 */
template <typename T> struct t_op {
	size_t prows, pcols, ld, r0, c0, rows, cols;
	bool row;
	char *map = nullptr;
	size_t maplen = 0;
	T *base = nullptr;
	size_t span = 0;
	std::vector<T> saved;

	t_op(size_t r, size_t c, bool row_major, size_t pad_ld, size_t off_r,
	     size_t off_c)
		: prows(r + off_r + (off_r ? 1 : 0)),
		  pcols(c + off_c + (off_c ? 2 : 0)), ld(0), r0(off_r),
		  c0(off_c), rows(r), cols(c), row(row_major)
	{
		const size_t ps = (size_t)sysconf(_SC_PAGESIZE);
		const size_t inner = row ? pcols : prows;
		const size_t outer = row ? prows : pcols;
		size_t data;

		ld = inner + pad_ld;
		if (ld < 1)
			ld = 1;
		span = outer ? (outer - 1) * ld + inner : 0;
		data = (span * sizeof(T) + ps - 1) / ps * ps;
		maplen = data + ps;
		map = (char *)mmap(nullptr, maplen, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (map == MAP_FAILED)
			abort();
		mprotect(map + data, ps, PROT_NONE);
		base = (T *)(map + data - span * sizeof(T));
		for (size_t i = 0; i < span; i++)
			base[i] = t_pad<T>();
	}
	t_op(const t_op &) = delete;
	~t_op()
	{
		munmap(map, maplen);
	}
	size_t index(size_t r, size_t c) const
	{
		return row ? (r0 + r) * ld + (c0 + c) : (c0 + c) * ld + (r0 + r);
	}
	T &at(size_t r, size_t c)
	{
		return base[index(r, c)];
	}
	void fill(bool nan)
	{
		for (size_t r = 0; r < rows; r++)
			for (size_t c = 0; c < cols; c++)
				at(r, c) = nan ? (T)NAN : (T)t_rand();
		saved.assign(base, base + span);
	}
	gpubuf_cuda_matrix view() const
	{
		gpubuf_cuda_matrix m = {};

		m.devptr = (uint64_t)(uintptr_t)(base + index(0, 0));
		m.rows = rows;
		m.cols = cols;
		m.ld = ld;
		m.dtype = sizeof(T) == 4 ? GPUBUF_DTYPE_F32 : GPUBUF_DTYPE_F64;
		m.layout = row ? GPUBUF_ROW_MAJOR : GPUBUF_COL_MAJOR;
		return m;
	}
	bool in_view(size_t i) const
	{
		size_t o = i / ld, in = i % ld, r, c;

		r = row ? o : in;
		c = row ? in : o;
		return r >= r0 && r < r0 + rows && c >= c0 && c < c0 + cols;
	}
	/* Inputs: nothing changed. Outputs: nothing outside the view. */
	bool untouched(bool output, std::string *why) const
	{
		for (size_t i = 0; i < span; i++) {
			if (output && in_view(i))
				continue;
			if (memcmp(&base[i], &saved[i], sizeof(T))) {
				*why = "element " + std::to_string(i) +
				       (in_view(i) ? " of an input" :
						     " outside the view") +
				       " was written";
				return false;
			}
		}
		return true;
	}
};

template <typename T> static double t_unit()
{
	return sizeof(T) == 4 ? ldexp(1.0, -24) : ldexp(1.0, -53);
}

/* got against alpha * acc + beta * old, acc and mag in double. */
template <typename T>
static bool t_close(T got, double ref, double mag, uint64_t k,
		    std::string *why)
{
	const double bound = 2.0 * (double)(k + 2) * t_unit<T>() * mag +
			     (sizeof(T) == 4 ? FLT_MIN : DBL_MIN);

	if (!std::isfinite((double)got) || fabs((double)got - ref) > bound) {
		char b[160];

		snprintf(b, sizeof(b), "got %.17g, reference %.17g, bound %.3g",
			 (double)got, ref, bound);
		*why = b;
		return false;
	}
	return true;
}

/* ---- GEMM ---------------------------------------------------------------- */

struct t_shape {
	size_t m, n, k;
};

template <typename T>
static bool t_gemm_one(const t_shape &s, unsigned int lay, double alpha,
		       double beta, bool sub, unsigned int grid_kind,
		       std::string *why)
{
	const bool ra = lay & 1, rb = lay & 2, rc = lay & 4;
	t_op<T> a(s.m, s.k, ra, sub ? 3 : 0, sub ? 2 : 0, sub ? 1 : 0);
	t_op<T> b(s.k, s.n, rb, sub ? 5 : 1, sub ? 1 : 0, sub ? 3 : 0);
	t_op<T> c(s.m, s.n, rc, sub ? 2 : 0, sub ? 4 : 0, sub ? 2 : 0);
	gpubuf_cuda_matrix va, vb, vc;
	simt_gemm_args g;
	std::vector<double> old;
	std::string err;
	dim3 grid;

	a.fill(alpha == 0);
	b.fill(alpha == 0);
	c.fill(beta == 0);
	for (size_t i = 0; i < s.m; i++)
		for (size_t j = 0; j < s.n; j++)
			old.push_back((double)c.at(i, j));
	va = a.view();
	vb = b.view();
	vc = c.view();
	if (simt_kargs_gemm(alpha, &va, &vb, beta, &vc, &g)) {
		*why = std::string("kargs: ") + gpubuf_last_error();
		return false;
	}
	/* The library's grid (cuda_kernels.c), or a small one that strides. */
	grid = dim3{ (unsigned int)((s.m + 63) / 64),
		     (unsigned int)((s.n + 63) / 64), 1 };
	if (grid_kind == 1)
		grid = dim3{ 1, 1, 1 };
	else if (grid_kind == 2)
		grid = dim3{ 2, grid.y > 1 ? 2u : 1u, 1 };
	if (simt::launch(grid, dim3{ GPUBUF_GEMM_THREADS, 1, 1 }, t_warp,
			 [&] {
				 gpubuf_gemm<T>(g.m, g.n, g.k, g.alpha,
						(const T *)g.a, g.ars, g.acs,
						(const T *)g.b, g.brs, g.bcs,
						g.beta, (T *)g.c, g.crs, g.ccs);
			 }, &err)) {
		*why = "launch: " + err;
		return false;
	}
	if (!a.untouched(false, why) || !b.untouched(false, why) ||
	    !c.untouched(true, why))
		return false;
	for (size_t i = 0; i < s.m; i++)
		for (size_t j = 0; j < s.n; j++) {
			double acc = 0, mag = 0, ref;
			const double o = old[i * s.n + j];

			if (alpha != 0)
				for (size_t l = 0; l < s.k; l++) {
					acc += (double)a.at(i, l) * b.at(l, j);
					mag += fabs((double)a.at(i, l) *
						    b.at(l, j));
				}
			ref = alpha * acc + (beta != 0 ? beta * o : 0);
			mag = fabs(alpha) * mag + (beta != 0 ? fabs(beta * o) : 0);
			if (!t_close<T>(c.at(i, j), ref, mag, s.k, why)) {
				*why = "C(" + std::to_string(i) + "," +
				       std::to_string(j) + "): " + *why;
				return false;
			}
		}
	return true;
}

template <typename T> static void t_gemm_all(const char *tname)
{
	static const t_shape shapes[] = {
		{ 1, 1, 1 }, { 64, 64, 16 }, { 65, 63, 17 }, { 130, 70, 33 },
		{ 5, 131, 3 }, { 70, 2, 40 }, { 3, 2, 0 },
	};
	static const double ab[][2] = {
		{ 1.0, 0.0 }, { 0.5, -1.25 }, { 0.0, 2.0 },
	};

	for (const t_shape &s : shapes)
		for (unsigned int lay = 0; lay < 8; lay++)
			for (unsigned int v = 0; v < 3; v++) {
				const unsigned int grid_kind = (lay + v) % 3;
				const bool sub = (lay + v) % 2;
				std::string why;
				char name[200];
				bool ok;

				ok = t_gemm_one<T>(s, lay, ab[v][0], ab[v][1],
						   sub, grid_kind, &why);
				snprintf(name, sizeof(name),
					 "gemm %s %zux%zux%zu A %s B %s C %s%s alpha %g beta %g%s grid %s",
					 tname, s.m, s.n, s.k,
					 lay & 1 ? "row" : "col",
					 lay & 2 ? "row" : "col",
					 lay & 4 ? "row" : "col",
					 sub ? " sub-views, padded ld," : "",
					 ab[v][0], ab[v][1],
					 ab[v][1] == 0 ? " (C all NaN)" :
					 ab[v][0] == 0 ? " (A, B all NaN)" : "",
					 grid_kind == 0 ? "as the library's" :
					 grid_kind == 1 ? "1 block" :
							  "2 blocks a side");
				t_result(ok, std::string(name) +
						     (ok ? "" : ": " + why));
			}
}

/* ---- GEMV ---------------------------------------------------------------- */

template <typename T>
static bool t_gemv_one(size_t m, size_t k, bool row_a, bool strided,
		       double alpha, double beta, unsigned int grid_kind,
		       std::string *why)
{
	t_op<T> a(m, k, row_a, strided ? 3 : 0, strided ? 1 : 0,
		  strided ? 2 : 0);
	/* Strided: x a row of a col-major matrix, y a column of a row-major one. */
	t_op<T> x(strided ? 1 : k, strided ? k : 1, false, strided ? 2 : 0,
		  strided ? 1 : 0, 0);
	t_op<T> y(m, 1, strided, strided ? 1 : 0, 0, strided ? 1 : 0);
	gpubuf_cuda_matrix va, vx, vy;
	simt_gemv_args g;
	std::vector<double> old;
	std::string err;
	unsigned int blocks, per;

	a.fill(alpha == 0);
	x.fill(alpha == 0);
	y.fill(beta == 0);
	for (size_t i = 0; i < m; i++)
		old.push_back((double)y.at(i, 0));
	va = a.view();
	vx = x.view();
	vy = y.view();
	if (simt_kargs_gemv(alpha, &va, &vx, beta, &vy, &g)) {
		*why = std::string("kargs: ") + gpubuf_last_error();
		return false;
	}
	/* Rows per block as cuda_kernels.c and hsa_kernels.c size it. */
	per = g.ars < g.acs || (g.ars == g.acs && g.k < g.m) ?
		      t_warp : GPUBUF_GEMV_THREADS / t_warp;
	blocks = (unsigned int)((m + per - 1) / per);
	if (grid_kind == 1)
		blocks = 1;
	else if (grid_kind == 2)
		blocks = blocks > 2 ? 2 : blocks;
	if (simt::launch(dim3{ blocks, 1, 1 }, dim3{ GPUBUF_GEMV_THREADS, 1, 1 },
			 t_warp,
			 [&] {
				 gpubuf_gemv<T>(g.m, g.k, g.alpha,
						(const T *)g.a, g.ars, g.acs,
						(const T *)g.x, g.incx, g.beta,
						(T *)g.y, g.incy);
			 }, &err)) {
		*why = "launch: " + err;
		return false;
	}
	if (!a.untouched(false, why) || !x.untouched(false, why) ||
	    !y.untouched(true, why))
		return false;
	for (size_t i = 0; i < m; i++) {
		double acc = 0, mag = 0, ref;
		const double o = old[i];

		if (alpha != 0)
			for (size_t l = 0; l < k; l++) {
				const double xv = strided ? x.at(0, l) : x.at(l, 0);

				acc += (double)a.at(i, l) * xv;
				mag += fabs((double)a.at(i, l) * xv);
			}
		ref = alpha * acc + (beta != 0 ? beta * o : 0);
		mag = fabs(alpha) * mag + (beta != 0 ? fabs(beta * o) : 0);
		if (!t_close<T>(y.at(i, 0), ref, mag, k, why)) {
			*why = "y(" + std::to_string(i) + "): " + *why;
			return false;
		}
	}
	return true;
}

template <typename T> static void t_gemv_all(const char *tname)
{
	static const size_t shapes[][2] = {
		{ 1, 1 }, { 7, 300 }, { 300, 7 }, { 33, 65 }, { 129, 129 },
		{ 64, 1 }, { 4, 0 },
	};
	static const double ab[][2] = {
		{ 1.0, 0.0 }, { -0.5, 2.0 }, { 0.0, 1.0 },
	};

	for (const auto &s : shapes)
		for (unsigned int lay = 0; lay < 4; lay++)
			for (unsigned int v = 0; v < 3; v++) {
				const bool row_a = lay & 1, strided = lay & 2;
				const unsigned int grid_kind = (lay + v) % 3;
				std::string why;
				char name[200];
				bool ok;

				ok = t_gemv_one<T>(s[0], s[1], row_a, strided,
						   ab[v][0], ab[v][1],
						   grid_kind, &why);
				snprintf(name, sizeof(name),
					 "gemv %s %zux%zu A %s%s alpha %g beta %g%s grid %s",
					 tname, s[0], s[1],
					 row_a ? "row" : "col",
					 strided ? ", sub-view, strided x and y" : "",
					 ab[v][0], ab[v][1],
					 ab[v][1] == 0 ? " (y all NaN)" :
					 ab[v][0] == 0 ? " (A, x all NaN)" : "",
					 grid_kind == 0 ? "as the library's" :
					 grid_kind == 1 ? "1 block" : "2 blocks");
				t_result(ok, std::string(name) +
						     (ok ? "" : ": " + why));
			}
}

/* ---- streaming kernels ------------------------------------------------- */

static void t_stream(void)
{
	const uint64_t n = 1000;
	std::vector<uint4> p(n + 1);
	unsigned int sink = 0;
	std::string err;
	bool ok = true;

	p[n] = make_uint4(1, 2, 3, 4);
	ok = !simt::launch(dim3{ 3, 1, 1 }, dim3{ 256, 1, 1 }, t_warp, [&] {
		gpubuf_stream_write(p.data(), n);
	}, &err);
	for (uint64_t i = 0; ok && i < n; i++)
		ok = p[i].x == (unsigned int)i && p[i].y == 0 &&
		     p[i].z == ~(unsigned int)i && p[i].w == 0x66756267u;
	ok = ok && p[n].x == 1 && p[n].w == 4;
	t_result(ok, "stream_write: every word once, none past the end, 3 blocks" +
			     (err.empty() ? "" : ": " + err));

	/*
	 * A thread stores the xor of the words it read in the sink only if
	 * that is the kernel's constant: with that one word among zeros,
	 * the sink is written exactly when the word was read, by one thread,
	 * once. Every position, on two blocks; and past the end, never.
	 */
	for (uint64_t j = 0; j <= n; j++) {
		for (uint64_t i = 0; i <= n; i++)
			p[i] = make_uint4(0, 0, 0, 0);
		p[j].x = 0x9e3779b9u;
		sink = 0;
		if (simt::launch(dim3{ 2, 1, 1 }, dim3{ 256, 1, 1 }, t_warp, [&] {
			gpubuf_stream_read(p.data(), n, &sink);
		}, &err) || (sink == 0x9e3779b9u) != (j < n)) {
			err += " word " + std::to_string(j) + (j < n ?
				" not read once" : " past the end read");
			break;
		}
	}
	t_result(err.empty(), "stream_read: every word read once, none past the end, 2 blocks" +
			     (err.empty() ? "" : ": " + err));
}

/* ---- the emulator itself ------------------------------------------------ */

static void t_expect_error(const char *name, const char *want,
			   const std::function<void()> &body)
{
	std::string err;
	int r = simt::launch(dim3{ 2, 1, 1 }, dim3{ 256, 1, 1 }, t_warp, body,
			     &err);

	t_result(r && err.find(want) != std::string::npos,
		 std::string("emulator: ") + name + (r ? ": " + err : ": not detected"));
}

static void t_emulator(void)
{
	std::vector<float> out(2 * 256 / t_warp, -1.0f);
	std::string err;
	bool ok;

	/* The kernels' own warp reduction, on lane numbers. */
	ok = !simt::launch(dim3{ 2, 1, 1 }, dim3{ 256, 1, 1 }, t_warp, [&] {
		float v = gpubuf_warp_sum((float)(threadIdx.x % GPUBUF_WARP));

		if (threadIdx.x % GPUBUF_WARP == 0)
			out[blockIdx.x * (256 / GPUBUF_WARP) +
			    threadIdx.x / GPUBUF_WARP] = v;
	}, &err);
	for (float v : out)
		ok = ok && v == (float)(t_warp * (t_warp - 1) / 2);
	t_result(ok, "emulator: gpubuf_warp_sum over " + std::to_string(t_warp) +
			     "-lane warps" + (err.empty() ? "" : ": " + err));

	t_expect_error("a barrier half the block skips", "barrier divergence",
		       [] {
			       if (threadIdx.x < 128)
				       __syncthreads();
		       });
	t_expect_error("two barriers at different places", "barrier divergence",
		       [] {
			       if (threadIdx.x % 2)
				       __syncthreads();
			       else
				       __syncthreads();
		       });
	t_expect_error("a shuffle one lane skips", "shuffle divergence", [] {
		float v = 1;

		if (threadIdx.x % GPUBUF_WARP != 5)
			v = gpubuf_shfl_down(v, 1u);
		(void)v;
	});
	t_expect_error("lanes at different shuffle offsets",
		       "shuffle divergence", [] {
			       (void)gpubuf_shfl_down(1.0f,
						      threadIdx.x % 2 ? 1u : 2u);
		       });
	t_expect_error("a shuffle beside a barrier", "divergence", [] {
		if (threadIdx.x == 0)
			__syncthreads();
		else
			(void)gpubuf_shfl_down(1.0, 1u);
	});
#if !defined(__HIP__)
	t_expect_error("a shuffle mask naming half the warp", "mask", [] {
		(void)__shfl_down_sync(0xffffu, 1.0f, 1u);
	});
#endif
}

int main(void)
{
	/* Faults in the guard pages end the program: the runner counts that. */
	setvbuf(stdout, nullptr, _IOLBF, 0);
	printf("TAP version 13\n");
	printf("# %s dialect, %u-lane warps\n", T_DIALECT, t_warp);
	t_emulator();
	t_stream();
	t_gemv_all<float>("f32");
	t_gemv_all<double>("f64");
	t_gemm_all<float>("f32");
	t_gemm_all<double>("f64");
	printf("1..%d\n", t_n);
	return t_failed ? 1 : 0;
}
