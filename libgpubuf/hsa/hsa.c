// SPDX-License-Identifier: MIT
/*
 * HSA (ROCm) locking of buffers for in-place GPU access (the runtime
 * itself is loaded by hsa_runtime.c).
 *
 * hsa_amd_interop_map_buffer would take the dma-buf fd, but libhsakmt
 * first asks KFD for AMDKFD_IOC_GET_DMABUF_INFO, which refuses every
 * dma-buf amdgpu did not export. So the path is the CPU mapping:
 * hsa_amd_memory_lock_to_pool registers it with KFD as userptr memory,
 * whose pages hmm_range_fault() finds through the module's struct-page
 * mapping or memfd pages alike, and returns the address GPU agents use.
 *
 * One lock per buffer, for a fixed set of GPU agents, counted; it lives
 * in the buffer, under its lock.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "hsa/hsa_runtime.h"
#include "core/internal.h"
#include "topology/topology.h"

#ifdef GPUBUF_HAVE_HSA

/* The buffer's one lock with the runtime, a hold on the buffer. */
struct gpubuf_hsa_lock {
	struct gpubuf_hold hold;
	unsigned int count;
	void *agent_ptr;
	int n_gpus;
	unsigned char on[];	/* per GPU agent index: in the locked set */
};

static void gpubuf_hsa_hold_release(struct gpubuf *buf,
				    struct gpubuf_hold *hold);

static const struct gpubuf_hold_ops gpubuf_hsa_hold_ops = {
	.release = gpubuf_hsa_hold_release,
};

/* The buffer's lock, or NULL; caller holds buf->lock. */
static struct gpubuf_hsa_lock *gpubuf_hsa_lk(const struct gpubuf *buf)
{
	struct gpubuf_hold *h = gpubuf_hold_next(buf, NULL,
						 &gpubuf_hsa_hold_ops);

	return h ? gpubuf_container_of(h, struct gpubuf_hsa_lock, hold) : NULL;
}

/*
 * The requested set as flags per GPU agent index (every agent for
 * NULL/0); -ENODEV for a handle that is not a GPU agent.
 */
static int gpubuf_hsa_want(const struct gpubuf_hsa *hsa,
			   const uint64_t *agents, int n_agents,
			   unsigned char *want)
{
	for (int i = 0; i < hsa->n_gpus; i++)
		want[i] = n_agents == 0;
	for (int i = 0; i < n_agents; i++) {
		int idx = gpubuf_hsa_gpu_index(hsa, agents[i]);

		if (idx < 0) {
			gpubuf_error_set("HSA agent 0x%llx is not one of the %d GPU agents",
					 (unsigned long long)agents[i],
					 hsa->n_gpus);
			return -ENODEV;
		}
		want[idx] = 1;
	}
	return 0;
}

static int gpubuf_hsa_lock_first(const struct gpubuf_hsa *hsa,
				 struct gpubuf *buf,
				 const unsigned char *want,
				 struct gpubuf_hsa_lock *lk)
{
	hsa_agent_t *list;
	hsa_status_t s;
	int n = 0;

	list = calloc((size_t)hsa->n_gpus, sizeof(*list));
	if (!list)
		return -ENOMEM;
	/* Always the explicit list: NULL/0 would include the CPU agents. */
	for (int i = 0; i < hsa->n_gpus; i++)
		if (want[i])
			list[n++] = hsa->gpus[i];
	if (hsa->have_pool)
		s = hsa->hsa_amd_memory_lock_to_pool(buf->ptr, buf->size, list,
						     n, hsa->pool, 0,
						     &lk->agent_ptr);
	else
		s = hsa->hsa_amd_memory_lock(buf->ptr, buf->size, list, n,
					     &lk->agent_ptr);
	free(list);
	if (s != HSA_STATUS_SUCCESS)
		return gpubuf_hsa_fail(hsa, s, hsa->have_pool ?
				       "hsa_amd_memory_lock_to_pool" :
				       "hsa_amd_memory_lock");
	return 0;
}

static int gpubuf_hsa_lock_locked(const struct gpubuf_hsa *hsa,
				  struct gpubuf *buf,
				  const unsigned char *want, void **agent_ptr)
{
	struct gpubuf_hsa_lock *lk = gpubuf_hsa_lk(buf);
	int err;

	if (lk) {
		/*
		 * Another set would need a new lock and a new agent pointer,
		 * which would pull the old one from under its other holders.
		 */
		for (int i = 0; i < lk->n_gpus; i++)
			if (want[i] && !lk->on[i]) {
				gpubuf_error_set("buffer is locked for other HSA agents (not GPU agent %d); unlock it first",
						 i);
				return -EBUSY;
			}
		if (lk->count == UINT_MAX) {
			gpubuf_error_set("too many locks of one buffer");
			return -EOVERFLOW;
		}
		lk->count++;
		*agent_ptr = lk->agent_ptr;
		return 0;
	}
	lk = calloc(1, sizeof(*lk) + (size_t)hsa->n_gpus);
	if (!lk)
		return -ENOMEM;
	err = gpubuf_hsa_lock_first(hsa, buf, want, lk);
	if (err) {
		free(lk);
		return err;
	}
	lk->count = 1;
	lk->n_gpus = hsa->n_gpus;
	for (int i = 0; i < hsa->n_gpus; i++)
		lk->on[i] = want[i];
	gpubuf_hold_add(buf, &lk->hold, &gpubuf_hsa_hold_ops);
	*agent_ptr = lk->agent_ptr;
	return 0;
}

GPUBUF_EXPORT int gpubuf_hsa_lock(struct gpubuf *buf, const uint64_t *agents,
				  int n_agents, void **agent_ptr)
{
	GPUBUF_KEEP_ERRNO;
	const struct gpubuf_hsa *hsa;
	unsigned char *want;
	int err;

	gpubuf_error_clear();
	if (!buf || !agent_ptr || n_agents < 0 || (n_agents > 0 && !agents))
		return -EINVAL;
	err = gpubuf_hsa_get(&hsa);
	if (err)
		return err;
	want = calloc((size_t)hsa->n_gpus, 1);
	if (!want)
		return -ENOMEM;
	err = gpubuf_hsa_want(hsa, agents, n_agents, want);
	/* KFD pins userptr memory for GPU writes; a PROT_READ vma refuses. */
	if (!err && (buf->flags & GPUBUF_BUF_READONLY)) {
		gpubuf_error_set("buffer is mapped read-only; HSA can only lock it writable");
		err = -EROFS;
	}
	/* KFD's userptr (hmm_range_fault) refuses VM_PFNMAP/VM_IO too. */
	if (!err)
		err = gpubuf_buf_check_pinnable(buf, "hsa_amd_memory_lock");
	if (!err) {
		pthread_mutex_lock(&buf->lock);
		err = gpubuf_hsa_lock_locked(hsa, buf, want, agent_ptr);
		pthread_mutex_unlock(&buf->lock);
	}
	free(want);
	return err;
}

/*
 * Undo the lock and forget it, whatever the runtime answers: a refusal
 * is final. ROCr's hsa_amd_memory_unlock (hsa_ext_amd.cpp) fails only
 * before doing anything, when the runtime is no longer open (someone's
 * hsa_shut_down, which released every KFD registration) or on an
 * exception; MemoryRegion::Unlock itself ignores KFD's answers and
 * returns success. Kept, the lock could never be undone by a retry: it
 * would only keep the buffer "locked" for the library.
 */
static int gpubuf_hsa_unlock_all(const struct gpubuf_hsa *hsa,
				 struct gpubuf *buf, struct gpubuf_hsa_lock *lk)
{
	hsa_status_t s = hsa->hsa_amd_memory_unlock(buf->ptr);
	int err = 0;

	if (s != HSA_STATUS_SUCCESS)
		err = gpubuf_hsa_fail(hsa, s, "hsa_amd_memory_unlock");
	gpubuf_hold_del(buf, &lk->hold);
	free(lk);
	return err;
}

GPUBUF_EXPORT int gpubuf_hsa_unlock(struct gpubuf *buf)
{
	GPUBUF_KEEP_ERRNO;
	const struct gpubuf_hsa *hsa = NULL;
	struct gpubuf_hsa_lock *lk;
	int err;

	gpubuf_error_clear();
	if (!buf)
		return -EINVAL;
	pthread_mutex_lock(&buf->lock);
	lk = gpubuf_hsa_lk(buf);
	/* Not locked is -ENXIO, whether or not a runtime is there. */
	if (!lk) {
		gpubuf_error_set("buffer is not locked with HSA");
		err = -ENXIO;
	} else {
		err = gpubuf_hsa_get(&hsa);
		if (!err && lk->count > 1)
			lk->count--;
		else if (!err)
			err = gpubuf_hsa_unlock_all(hsa, buf, lk);
	}
	pthread_mutex_unlock(&buf->lock);
	return err;
}

int gpubuf_hsa_hold(struct gpubuf *buf, int gpu, uint64_t *agent_ptr)
{
	struct gpubuf_hsa_lock *lk;
	int err = -ENXIO;

	pthread_mutex_lock(&buf->lock);
	lk = gpubuf_hsa_lk(buf);
	if (lk && gpu >= 0 && gpu < lk->n_gpus && lk->on[gpu] &&
	    lk->count < UINT_MAX) {
		lk->count++;
		*agent_ptr = (uint64_t)(uintptr_t)lk->agent_ptr;
		err = 0;
	}
	pthread_mutex_unlock(&buf->lock);
	if (err)
		gpubuf_error_set("buffer is not locked for HSA GPU agent %d",
				 gpu);
	return err;
}

static void gpubuf_hsa_hold_release(struct gpubuf *buf,
				    struct gpubuf_hold *hold)
{
	struct gpubuf_hsa_lock *lk =
		gpubuf_container_of(hold, struct gpubuf_hsa_lock, hold);
	const struct gpubuf_hsa *hsa;

	/*
	 * A lock exists only if the runtime loaded. In a child after fork()
	 * it is the parent's: forget it without calling the runtime.
	 */
	if (gpubuf_hsa_get(&hsa)) {
		free(lk);
		return;
	}
	gpubuf_hsa_unlock_all(hsa, buf, lk);
}

GPUBUF_EXPORT int gpubuf_hsa_matrix_view(const struct gpubuf_matrix *m,
					 int agent,
					 struct gpubuf_hsa_matrix *out)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_hsa_lock *lk;
	uint64_t base = 0;
	int err;

	gpubuf_error_clear();
	if (!m || !out)
		return -EINVAL;
	err = gpubuf_matrix_check(m);
	if (err)
		return err;
	/* The view takes no lock count: like a matrix view, it borrows. */
	pthread_mutex_lock(&m->buf->lock);
	lk = gpubuf_hsa_lk(m->buf);
	if (lk && agent >= 0 && agent < lk->n_gpus && lk->on[agent])
		base = (uint64_t)(uintptr_t)lk->agent_ptr;
	pthread_mutex_unlock(&m->buf->lock);
	if (!base) {
		gpubuf_error_set("buffer is not locked for HSA GPU agent %d",
				 agent);
		return -ENXIO;
	}
	*out = (struct gpubuf_hsa_matrix){
		.agent_ptr = base + m->offset, .rows = m->rows,
		.cols = m->cols, .ld = m->ld, .dtype = m->dtype,
		.layout = m->layout, .agent = agent, .flags = 0,
	};
	return 0;
}

/* For topology/: bus << 8 | device << 3 | function, and the domain. */
int gpubuf_hsa_pci_address(int agent, char *buf, size_t len)
{
	const struct gpubuf_hsa *hsa;
	uint32_t bdf = 0, domain = 0;
	hsa_status_t s;
	int err;

	err = gpubuf_hsa_get(&hsa);
	if (err)
		return err;
	if (agent < 0 || agent >= hsa->n_gpus) {
		gpubuf_error_set("no HSA GPU agent %d (%d present)", agent,
				 hsa->n_gpus);
		return -ENODEV;
	}
	s = hsa->hsa_agent_get_info(hsa->gpus[agent],
				    (hsa_agent_info_t)HSA_AMD_AGENT_INFO_BDFID,
				    &bdf);
	if (s != HSA_STATUS_SUCCESS)
		return gpubuf_hsa_fail(hsa, s, "hsa_agent_get_info(BDFID)");
	s = hsa->hsa_agent_get_info(hsa->gpus[agent],
				    (hsa_agent_info_t)HSA_AMD_AGENT_INFO_DOMAIN,
				    &domain);
	if (s != HSA_STATUS_SUCCESS)
		return gpubuf_hsa_fail(hsa, s, "hsa_agent_get_info(DOMAIN)");
	snprintf(buf, len, "%04x:%02x:%02x.%x", domain,
		 (bdf >> 8) & 0xff, (bdf >> 3) & 0x1f, bdf & 7);
	return 0;
}

#else /* !GPUBUF_HAVE_HSA */

static int gpubuf_no_hsa(void)
{
	gpubuf_error_set("libgpubuf was built without HSA support (no hsa/hsa.h at build time)");
	return -EOPNOTSUPP;
}

int gpubuf_hsa_pci_address(int agent, char *buf, size_t len)
{
	(void)agent, (void)buf, (void)len;
	return gpubuf_no_hsa();
}

/* Argument errors are reported as in an HSA build, then the lack of HSA. */
GPUBUF_EXPORT int gpubuf_hsa_agents(uint64_t *agents, int max, int *count)
{
	gpubuf_error_clear();
	if (!count || max < 0 || (max > 0 && !agents))
		return -EINVAL;
	return gpubuf_no_hsa();
}

GPUBUF_EXPORT int gpubuf_hsa_lock(struct gpubuf *buf, const uint64_t *agents,
				  int n_agents, void **agent_ptr)
{
	gpubuf_error_clear();
	if (!buf || !agent_ptr || n_agents < 0 || (n_agents > 0 && !agents))
		return -EINVAL;
	return gpubuf_no_hsa();
}

GPUBUF_EXPORT int gpubuf_hsa_unlock(struct gpubuf *buf)
{
	gpubuf_error_clear();
	if (!buf)
		return -EINVAL;
	return gpubuf_no_hsa();
}

/* Nothing can have been locked: the kDLROCM answer is -ENXIO. */
int gpubuf_hsa_hold(struct gpubuf *buf, int gpu, uint64_t *agent_ptr)
{
	(void)buf, (void)agent_ptr;
	gpubuf_error_set("buffer is not locked for HSA GPU agent %d (libgpubuf was built without HSA support)",
			 gpu);
	return -ENXIO;
}

/* Nothing can have been locked: after the argument checks, -ENXIO. */
GPUBUF_EXPORT int gpubuf_hsa_matrix_view(const struct gpubuf_matrix *m,
					 int agent,
					 struct gpubuf_hsa_matrix *out)
{
	int err;

	gpubuf_error_clear();
	if (!m || !out)
		return -EINVAL;
	err = gpubuf_matrix_check(m);
	if (err)
		return err;
	gpubuf_error_set("buffer is not locked for HSA GPU agent %d (libgpubuf was built without HSA support)",
			 agent);
	return -ENXIO;
}

#endif /* GPUBUF_HAVE_HSA */
