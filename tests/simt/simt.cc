// SPDX-License-Identifier: MIT
/*
 * The CPU emulator's scheduler (simt.h says what it models). One OS
 * thread runs a block's threads as ucontext fibers: each runs until it
 * waits at a barrier or a shuffle, or returns. When none can run, the
 * waits are resolved: a warp whose lanes all wait at one shuffle
 * exchanges values; a block whose threads all wait at one barrier passes
 * it. Any other state is a kernel that diverges at a barrier or a
 * shuffle, which a GPU leaves undefined: the launch stops with an error
 * naming the place and the threads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <vector>

#include "simt.h"

namespace simt {

dim3 thread_idx, block_idx, block_dim, grid_dim;

namespace {

enum class state { run, barrier, shuffle, done };

struct fiber {
	ucontext_t ctx;
	state st;
	dim3 tid;
	const char *file;	/* where it waits */
	int line;
	/* A shuffle's operands; the result comes back in val. */
	unsigned char val[16];
	size_t size;
	unsigned long long mask;
	bool check_mask;
	unsigned int delta, width;
};

/* One launch at a time; tests are single-threaded. */
struct launch_state {
	std::vector<fiber> fibers;
	ucontext_t sched;
	fiber *cur;
	const std::function<void()> *body;
	unsigned int warp;
};

launch_state L;

const size_t stack_size = 64 * 1024;

void fiber_main()
{
	(*L.body)();
	L.cur->st = state::done;
	/* uc_link returns to the scheduler. */
}

void wait(state s, const char *file, int line)
{
	L.cur->st = s;
	L.cur->file = file;
	L.cur->line = line;
	swapcontext(&L.cur->ctx, &L.sched);
}

std::string where(const fiber &f)
{
	char b[256];

	switch (f.st) {
	case state::done:
		return "has returned";
	case state::run:
		return "is running";
	case state::barrier:
		snprintf(b, sizeof(b), "waits at __syncthreads() %s:%d",
			 f.file, f.line);
		return b;
	case state::shuffle:
		snprintf(b, sizeof(b), "waits at a shuffle %s:%d (delta %u)",
			 f.file, f.line, f.delta);
		return b;
	}
	return "?";
}

std::string name(size_t i)
{
	return "thread " + std::to_string(i);
}

/* Resolve the shuffles of warps whose lanes all wait at one; 1 if any. */
int resolve_shuffles(std::string *err)
{
	const size_t n = L.fibers.size();
	int done = 0;

	for (size_t w0 = 0; w0 < n; w0 += L.warp) {
		const size_t w1 = w0 + L.warp < n ? w0 + L.warp : n;
		const fiber &first = L.fibers[w0];
		size_t waiting = 0;
		unsigned char in[64][16];

		for (size_t i = w0; i < w1; i++)
			waiting += L.fibers[i].st == state::shuffle;
		if (!waiting)
			continue;
		for (size_t i = w0; i < w1; i++) {
			const fiber &f = L.fibers[i];

			if (f.st == state::shuffle && f.file == first.file &&
			    f.line == first.line && f.delta == first.delta &&
			    f.width == first.width && f.size == first.size)
				continue;
			*err = "shuffle divergence in warp " +
			       std::to_string(w0 / L.warp) + ": " + name(w0) +
			       " " + where(first) + ", " + name(i) + " " +
			       where(f);
			return -1;
		}
		if (first.check_mask &&
		    (first.mask != (L.warp == 64 ? ~0ull : (1ull << L.warp) - 1) ||
		     w1 - w0 != L.warp)) {
			char b[200];

			snprintf(b, sizeof(b),
				 "shuffle mask 0x%llx does not name every lane of a full warp at %s:%d",
				 first.mask, first.file, first.line);
			*err = b;
			return -1;
		}
		if (first.width == 0 || first.width > L.warp ||
		    (first.width & (first.width - 1))) {
			*err = "shuffle width " + std::to_string(first.width) +
			       " is not a power of two up to the warp size";
			return -1;
		}
		for (size_t i = w0; i < w1; i++)
			memcpy(in[i - w0], L.fibers[i].val, first.size);
		for (size_t i = w0; i < w1; i++) {
			const size_t lane = i - w0;
			fiber &f = L.fibers[i];

			if ((lane % f.width) + f.delta < f.width)
				memcpy(f.val, in[lane + f.delta], f.size);
			f.st = state::run;
		}
		done = 1;
	}
	return done;
}

/* Pass the block's barrier if every thread waits at it; 1 if passed. */
int resolve_barrier(std::string *err)
{
	const fiber *at = nullptr;

	for (const fiber &f : L.fibers)
		if (f.st == state::barrier) {
			at = &f;
			break;
		}
	if (!at)
		return 0;
	for (size_t i = 0; i < L.fibers.size(); i++) {
		const fiber &f = L.fibers[i];

		if (f.st == state::barrier && f.file == at->file &&
		    f.line == at->line)
			continue;
		*err = "barrier divergence: " +
		       name((size_t)(at - L.fibers.data())) + " " + where(*at) +
		       ", " + name(i) + " " + where(f);
		return -1;
	}
	for (fiber &f : L.fibers)
		f.st = state::run;
	return 1;
}

/* getcontext() returns twice: kept out of the loops of launch(). */
__attribute__((noinline)) void start_fiber(fiber &f, char *stack)
{
	getcontext(&f.ctx);
	f.ctx.uc_stack.ss_sp = stack;
	f.ctx.uc_stack.ss_size = stack_size;
	f.ctx.uc_link = &L.sched;
	makecontext(&f.ctx, fiber_main, 0);
}

int run_block(std::string *err)
{
	for (;;) {
		bool alive = false;
		int r;

		for (fiber &f : L.fibers) {
			if (f.st != state::run)
				continue;
			L.cur = &f;
			thread_idx = f.tid;
			swapcontext(&L.sched, &f.ctx);
		}
		for (const fiber &f : L.fibers)
			alive |= f.st != state::done;
		if (!alive)
			return 0;
		r = resolve_shuffles(err);
		if (r == 0)
			r = resolve_barrier(err);
		if (r < 0)
			return -1;
		if (r == 0) {
			*err = "deadlock";
			return -1;
		}
	}
}

} /* namespace */

void syncthreads(const char *file, int line)
{
	wait(state::barrier, file, line);
}

void shfl_down(void *v, size_t size, unsigned long long mask, bool check_mask,
	       unsigned int delta, unsigned int width, const char *file,
	       int line)
{
	fiber *f = L.cur;

	if (size > sizeof(f->val))
		abort();
	memcpy(f->val, v, size);
	f->size = size;
	f->mask = mask;
	f->check_mask = check_mask;
	f->delta = delta;
	f->width = width;
	wait(state::shuffle, file, line);
	memcpy(v, f->val, size);
}

int launch(dim3 grid, dim3 block, unsigned int warp,
	   const std::function<void()> &body, std::string *err)
{
	const size_t nthreads = (size_t)block.x * block.y * block.z;
	char *stacks;
	int ret = 0;

	if (!nthreads || nthreads > 1024 || !grid.x || !grid.y || !grid.z ||
	    (warp != 32 && warp != 64)) {
		*err = "bad launch shape";
		return -1;
	}
	stacks = (char *)mmap(nullptr, nthreads * stack_size,
			      PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			      0);
	if (stacks == MAP_FAILED) {
		*err = "no memory for the fibers' stacks";
		return -1;
	}
	L.fibers.assign(nthreads, fiber());
	L.body = &body;
	L.warp = warp;
	block_dim = block;
	grid_dim = grid;
	for (unsigned int bz = 0; bz < grid.z && !ret; bz++)
	for (unsigned int by = 0; by < grid.y && !ret; by++)
	for (unsigned int bx = 0; bx < grid.x && !ret; bx++) {
		block_idx = dim3{ bx, by, bz };
		for (size_t i = 0; i < nthreads; i++) {
			fiber &f = L.fibers[i];

			f.st = state::run;
			f.tid = dim3{ (unsigned int)(i % block.x),
				      (unsigned int)(i / block.x % block.y),
				      (unsigned int)(i / block.x / block.y) };
			start_fiber(f, stacks + i * stack_size);
		}
		ret = run_block(err);
		if (ret)
			*err = "block (" + std::to_string(bx) + "," +
			       std::to_string(by) + "," + std::to_string(bz) +
			       "): " + *err;
	}
	/* A failed block's fibers are abandoned mid-kernel: plain frames. */
	munmap(stacks, nthreads * stack_size);
	L.fibers.clear();
	return ret;
}

} /* namespace simt */
