// SPDX-License-Identifier: MIT
/*
 * CUDA registration of buffers for in-place GPU access (the driver itself
 * is loaded by cuda_driver.c).
 *
 * An x86 discrete NVIDIA GPU cannot import a dma-buf, so the path is the
 * CPU mapping: cuMemHostRegister pins it with pin_user_pages(FOLL_LONGTERM)
 * (which the module's struct-page mapping and memfd pages both allow) and
 * cuMemHostGetDevicePointer gives the address kernels use.
 *
 * A registration is a hold on its buffer (core/internal.h), under the
 * buffer's lock, undone with the buffer's last reference.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_driver.h"
#include "core/internal.h"
#include "kernels/kernel_args.h"
#include "topology/topology.h"

#ifdef GPUBUF_HAVE_CUDA

/*
 * One registration per buffer (the driver refuses a second one of the same
 * range), made in reg_device's primary context and PORTABLE, so every
 * context sees it. Each device with a count holds a retain on its primary
 * context; reg_device holds one more for the registration itself, because
 * destroying the registering context would drop the page lock. The
 * registration is a hold on its buffer.
 *
 * read_only is the library's promise (views and DLPack tensors say the GPU
 * only reads; a writable request is refused while it stands). The driver's
 * CU_MEMHOSTREGISTER_READ_ONLY is used only for a PROT_READ mapping, which
 * cannot be pinned for writing: many hosts report
 * CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED = 0, and a read-only
 * request on a writable mapping must work on them too.
 */
struct gpubuf_cuda_reg {
	struct gpubuf_hold hold;
	int reg_device;
	bool read_only;			/* GPU access promised read-only */
	unsigned int cu_flags;		/* CU_MEMHOSTREGISTER_* used */
	unsigned int total;		/* sum of the counts below */
	int ndev;
	struct {
		unsigned int count;
		CUdeviceptr devptr;	/* of the buffer's first byte */
	} dev[];
};

static void gpubuf_cuda_hold_release(struct gpubuf *buf,
				     struct gpubuf_hold *hold);

static const struct gpubuf_hold_ops gpubuf_cuda_hold_ops = {
	.release = gpubuf_cuda_hold_release,
};

/* The buffer's registration, or NULL; caller holds buf->lock. */
static struct gpubuf_cuda_reg *gpubuf_cuda_reg(const struct gpubuf *buf)
{
	struct gpubuf_hold *h = gpubuf_hold_next(buf, NULL,
						 &gpubuf_cuda_hold_ops);

	return h ? gpubuf_container_of(h, struct gpubuf_cuda_reg, hold) : NULL;
}

static int gpubuf_cu_attr(const struct gpubuf_cu *cu, int device,
			  CUdevice_attribute attr, int *value)
{
	CUdevice dev;
	CUresult r;

	r = cu->cuDeviceGet(&dev, device);
	if (r == CUDA_SUCCESS)
		r = cu->cuDeviceGetAttribute(value, attr, dev);
	return r ? gpubuf_cu_fail(cu, r, "cuDeviceGetAttribute") : 0;
}

/* Whether device can register host memory, with the driver's READ_ONLY too. */
static int gpubuf_cu_can_register(const struct gpubuf_cu *cu, int device,
				  bool read_only)
{
	int map = 0, reg = 0, ro = 0, err;

	err = gpubuf_cu_attr(cu, device, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
			     &map);
	if (!err)
		err = gpubuf_cu_attr(cu, device,
				     CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED,
				     &reg);
	if (!err && read_only)
		err = gpubuf_cu_attr(cu, device,
				     CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED,
				     &ro);
	if (err)
		return err;
	if (!map || !reg) {
		gpubuf_error_set("CUDA device %d cannot map registered host memory",
				 device);
		return -EOPNOTSUPP;
	}
	if (read_only && !ro) {
		gpubuf_error_set("CUDA device %d cannot register read-only host memory (CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED is 0), and the buffer is mapped read-only",
				 device);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* Device pointer of the registered range in device's primary context. */
static int gpubuf_cu_devptr(const struct gpubuf_cu *cu, struct gpubuf *buf,
			    CUdeviceptr *devptr)
{
	CUresult r = cu->cuMemHostGetDevicePointer(devptr, buf->ptr, 0);

	return r ? gpubuf_cu_fail(cu, r, "cuMemHostGetDevicePointer") : 0;
}

/*
 * Register buf->ptr in device's context; the reg_device retain stays. Only
 * a PROT_READ mapping gets the driver's READ_ONLY flag.
 */
static int gpubuf_cu_register_first(const struct gpubuf_cu *cu,
				    struct gpubuf *buf, int device,
				    struct gpubuf_cuda_reg *reg)
{
	bool pages_read_only = buf->flags & GPUBUF_BUF_READONLY;
	unsigned int cu_flags = CU_MEMHOSTREGISTER_PORTABLE |
				CU_MEMHOSTREGISTER_DEVICEMAP;
	CUcontext ctx;
	CUresult r;
	int err;

	if (pages_read_only)
		cu_flags |= CU_MEMHOSTREGISTER_READ_ONLY;
	err = gpubuf_cu_can_register(cu, device, pages_read_only);
	if (err)
		return err;
	err = gpubuf_cu_enter(cu, device, &ctx);
	if (err)
		return err;
	r = cu->cuMemHostRegister(buf->ptr, buf->size, cu_flags);
	if (r != CUDA_SUCCESS) {
		err = gpubuf_cu_fail(cu, r, "cuMemHostRegister");
		goto out_leave;
	}
	err = gpubuf_cu_devptr(cu, buf, &reg->dev[device].devptr);
	if (err) {
		cu->cuMemHostUnregister(buf->ptr);
		goto out_leave;
	}
	/* The registration's own retain, dropped when it is undone. */
	err = gpubuf_cu_retain(cu, device, &ctx);
	if (err) {
		cu->cuMemHostUnregister(buf->ptr);
		goto out_leave;
	}
	reg->reg_device = device;
	reg->cu_flags = cu_flags;
out_leave:
	/* Leaving drops enter's retain; the device count's is taken below. */
	gpubuf_cu_leave(cu, device);
	return err;
}

/*
 * Undo the registration and drop every count with its retains. If the
 * driver call fails, !force leaves everything as it was, so the caller
 * can report the error and a later unregister or the last unref can try
 * again: forgetting a registration the driver still holds would leave
 * the pages pinned after munmap(), and a new buffer at the same address
 * could not be registered. force (last unref, undoing a failed first
 * register) drops the bookkeeping anyway: nothing could retry.
 */
static int gpubuf_cu_unregister_all(const struct gpubuf_cu *cu,
				    struct gpubuf *buf,
				    struct gpubuf_cuda_reg *reg, bool force)
{
	CUcontext ctx;
	CUresult r;
	int err;

	err = gpubuf_cu_enter(cu, reg->reg_device, &ctx);
	if (!err) {
		r = cu->cuMemHostUnregister(buf->ptr);
		/* Gone already, e.g. with a reset primary context: done. */
		if (r != CUDA_SUCCESS && r != CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
			err = gpubuf_cu_fail(cu, r, "cuMemHostUnregister");
		gpubuf_cu_leave(cu, reg->reg_device);
	}
	if (err && !force)
		return err;
	for (int d = 0; d < reg->ndev; d++)
		if (reg->dev[d].count)
			gpubuf_cu_unretain(cu, d);
	gpubuf_cu_unretain(cu, reg->reg_device);
	gpubuf_hold_del(buf, &reg->hold);
	free(reg);
	return err;
}

static int gpubuf_cu_register_locked(const struct gpubuf_cu *cu,
				     struct gpubuf *buf, int device,
				     bool read_only, uint64_t *devptr)
{
	struct gpubuf_cuda_reg *reg = gpubuf_cuda_reg(buf);
	bool fresh = !reg;
	CUcontext ctx;
	int err;

	/* A writable registration serves a read-only request, not the reverse. */
	if (reg && !read_only && reg->read_only) {
		gpubuf_error_set("buffer is registered read-only with CUDA");
		return -EBUSY;
	}
	if (reg && reg->dev[device].count) {
		if (reg->dev[device].count == UINT_MAX ||
		    reg->total == UINT_MAX) {
			gpubuf_error_set("too many registrations of one buffer");
			return -EOVERFLOW;
		}
		reg->dev[device].count++;
		reg->total++;
		*devptr = reg->dev[device].devptr;
		return 0;
	}
	if (fresh) {
		/* The driver would refuse it too, with a vaguer error. */
		err = gpubuf_buf_check_pinnable(buf, "cuMemHostRegister");
		if (err)
			return err;
		reg = calloc(1, sizeof(*reg) +
			     (size_t)cu->device_count * sizeof(reg->dev[0]));
		if (!reg)
			return -ENOMEM;
		reg->ndev = cu->device_count;
		err = gpubuf_cu_register_first(cu, buf, device, reg);
		if (err) {
			free(reg);
			return err;
		}
		reg->read_only = read_only;
		gpubuf_hold_add(buf, &reg->hold, &gpubuf_cuda_hold_ops);
	}
	/* Another device joins: it must be able to map it, as registered. */
	if (!fresh) {
		err = gpubuf_cu_can_register(cu, device, reg->cu_flags &
					     CU_MEMHOSTREGISTER_READ_ONLY);
		if (err)
			return err;
	}
	/* This device's count holds a retain of its primary context. */
	err = gpubuf_cu_enter(cu, device, &ctx);
	if (err)
		goto err_undo;
	if (!fresh) {
		err = gpubuf_cu_devptr(cu, buf, &reg->dev[device].devptr);
		if (err) {
			gpubuf_cu_leave(cu, device);
			goto err_undo;
		}
	}
	cu->cuCtxPopCurrent(&ctx);
	reg->dev[device].count = 1;
	reg->total++;
	*devptr = reg->dev[device].devptr;
	return 0;

err_undo:
	if (fresh)
		gpubuf_cu_unregister_all(cu, buf, reg, true);
	return err;
}

GPUBUF_EXPORT int gpubuf_cuda_register(struct gpubuf *buf, int device,
				       unsigned int flags, uint64_t *devptr)
{
	GPUBUF_KEEP_ERRNO;
	const struct gpubuf_cu *cu;
	bool read_only;
	int err;

	gpubuf_error_clear();
	if (!buf || !devptr || (flags & ~GPUBUF_CUDA_REGISTER_VALID_FLAGS))
		return -EINVAL;
	err = gpubuf_cu_get_device(&cu, device);
	if (err)
		return err;
	/* A PROT_READ mapping is read-only whatever the caller asks. */
	read_only = (flags & GPUBUF_CUDA_REGISTER_READ_ONLY) ||
		    (buf->flags & GPUBUF_BUF_READONLY);
	pthread_mutex_lock(&buf->lock);
	err = gpubuf_cu_register_locked(cu, buf, device, read_only, devptr);
	pthread_mutex_unlock(&buf->lock);
	return err;
}

static int gpubuf_cu_unregister_locked(const struct gpubuf_cu *cu,
				       struct gpubuf *buf, int device)
{
	struct gpubuf_cuda_reg *reg = gpubuf_cuda_reg(buf);

	if (!reg || device < 0 || device >= reg->ndev ||
	    !reg->dev[device].count) {
		gpubuf_error_set("buffer is not registered with CUDA device %d",
				 device);
		return -ENXIO;
	}
	/* The last count of all: undo the registration first, or nothing. */
	if (reg->total == 1)
		return gpubuf_cu_unregister_all(cu, buf, reg, false);
	reg->total--;
	if (--reg->dev[device].count == 0)
		gpubuf_cu_unretain(cu, device);
	return 0;
}

GPUBUF_EXPORT int gpubuf_cuda_unregister(struct gpubuf *buf, int device)
{
	GPUBUF_KEEP_ERRNO;
	const struct gpubuf_cu *cu = NULL;
	int err;

	gpubuf_error_clear();
	if (!buf)
		return -EINVAL;
	/* Not registered is -ENXIO, whether or not a driver is there. */
	pthread_mutex_lock(&buf->lock);
	err = gpubuf_cuda_reg(buf) ? gpubuf_cu_get(&cu) : 0;
	if (!err)
		err = gpubuf_cu_unregister_locked(cu, buf, device);
	pthread_mutex_unlock(&buf->lock);
	return err;
}

int gpubuf_cuda_hold(struct gpubuf *buf, int device, uint64_t *devptr,
		     bool *read_only)
{
	struct gpubuf_cuda_reg *reg;
	int err = -ENXIO;

	pthread_mutex_lock(&buf->lock);
	reg = gpubuf_cuda_reg(buf);
	if (reg && device >= 0 && device < reg->ndev &&
	    reg->dev[device].count && reg->dev[device].count < UINT_MAX &&
	    reg->total < UINT_MAX) {
		reg->dev[device].count++;
		reg->total++;
		*devptr = reg->dev[device].devptr;
		*read_only = reg->read_only;
		err = 0;
	}
	pthread_mutex_unlock(&buf->lock);
	if (err)
		gpubuf_error_set("buffer is not registered with CUDA device %d",
				 device);
	return err;
}

static void gpubuf_cuda_hold_release(struct gpubuf *buf,
				     struct gpubuf_hold *hold)
{
	struct gpubuf_cuda_reg *reg =
		gpubuf_container_of(hold, struct gpubuf_cuda_reg, hold);
	const struct gpubuf_cu *cu;

	/*
	 * A registration exists only if the driver loaded. In a child after
	 * fork() it is the parent's: forget it without calling the driver.
	 */
	if (gpubuf_cu_get(&cu)) {
		free(reg);
		return;
	}
	gpubuf_cu_unregister_all(cu, buf, reg, true);
}

GPUBUF_EXPORT int gpubuf_cuda_matrix_view(const struct gpubuf_matrix *m,
					  int device,
					  struct gpubuf_cuda_matrix *out)
{
	struct gpubuf_cuda_reg *reg;
	CUdeviceptr base = 0;
	unsigned int flags = 0;
	int err;

	gpubuf_error_clear();
	if (!m || !out)
		return -EINVAL;
	err = gpubuf_matrix_check(m);
	if (err)
		return err;
	pthread_mutex_lock(&m->buf->lock);
	reg = gpubuf_cuda_reg(m->buf);
	if (reg && device >= 0 && device < reg->ndev && reg->dev[device].count) {
		base = reg->dev[device].devptr;
		if (reg->read_only)
			flags |= GPUBUF_CUDA_MATRIX_READ_ONLY;
	}
	pthread_mutex_unlock(&m->buf->lock);
	if (!base) {
		gpubuf_error_set("buffer is not registered with CUDA device %d",
				 device);
		return -ENXIO;
	}
	out->devptr = (uint64_t)base + m->offset;
	out->rows = m->rows;
	out->cols = m->cols;
	out->ld = m->ld;
	out->dtype = m->dtype;
	out->layout = m->layout;
	out->device = device;
	out->flags = flags;
	return 0;
}

/* For topology/: the driver gives "0000:3B:00.0"; sysfs has lower case. */
int gpubuf_cuda_pci_address(int device, char *buf, size_t len)
{
	const struct gpubuf_cu *cu;
	char id[32] = "";
	CUdevice dev;
	CUresult r;
	int err;

	err = gpubuf_cu_get_device(&cu, device);
	if (err)
		return err;
	r = cu->cuDeviceGet(&dev, device);
	if (r == CUDA_SUCCESS)
		r = cu->cuDeviceGetPCIBusId(id, (int)sizeof(id), dev);
	if (r != CUDA_SUCCESS)
		return gpubuf_cu_fail(cu, r, "cuDeviceGetPCIBusId");
	if (strlen(id) >= len) {
		gpubuf_error_set("CUDA device %d: PCI bus id \"%s\" is too long",
				 device, id);
		return -EIO;
	}
	for (size_t i = 0; i <= strlen(id); i++)
		buf[i] = (char)tolower((unsigned char)id[i]);
	return 0;
}

#else /* !GPUBUF_HAVE_CUDA */

static int gpubuf_no_cuda(void)
{
	gpubuf_error_set("libgpubuf was built without CUDA support (no cuda.h at build time)");
	return -EOPNOTSUPP;
}

/* Argument errors are reported as in a CUDA build, then the lack of CUDA. */
GPUBUF_EXPORT int gpubuf_cuda_device_count(int *count)
{
	if (!count)
		return -EINVAL;
	return gpubuf_no_cuda();
}

int gpubuf_cuda_pci_address(int device, char *buf, size_t len)
{
	(void)device, (void)buf, (void)len;
	return gpubuf_no_cuda();
}

GPUBUF_EXPORT int gpubuf_cuda_device_release(int device)
{
	(void)device;
	return gpubuf_no_cuda();
}

GPUBUF_EXPORT int gpubuf_cuda_register(struct gpubuf *buf, int device,
				       unsigned int flags, uint64_t *devptr)
{
	(void)device;
	if (!buf || !devptr || (flags & ~GPUBUF_CUDA_REGISTER_VALID_FLAGS))
		return -EINVAL;
	return gpubuf_no_cuda();
}

GPUBUF_EXPORT int gpubuf_cuda_unregister(struct gpubuf *buf, int device)
{
	(void)device;
	if (!buf)
		return -EINVAL;
	return gpubuf_no_cuda();
}

/* Nothing can have been registered: the kDLCUDA answer is -ENXIO. */
int gpubuf_cuda_hold(struct gpubuf *buf, int device, uint64_t *devptr,
		     bool *read_only)
{
	(void)buf, (void)devptr, (void)read_only;
	gpubuf_error_set("buffer is not registered with CUDA device %d (libgpubuf was built without CUDA support)",
			 device);
	return -ENXIO;
}

GPUBUF_EXPORT int gpubuf_cuda_matrix_view(const struct gpubuf_matrix *m,
					  int device,
					  struct gpubuf_cuda_matrix *out)
{
	(void)device;
	if (!m || !out)
		return -EINVAL;
	return gpubuf_no_cuda();
}

GPUBUF_EXPORT int gpubuf_cuda_gemv(double alpha,
				   const struct gpubuf_cuda_matrix *a,
				   const struct gpubuf_cuda_matrix *x,
				   double beta,
				   const struct gpubuf_cuda_matrix *y,
				   void *stream)
{
	struct gpubuf_gemv_args g;
	int err;

	(void)stream;
	gpubuf_error_clear();
	/* Bad operands get the errno they get in a CUDA build. */
	err = gpubuf_cuda_gemv_args(alpha, a, x, beta, y, &g);
	return err ? err : gpubuf_no_cuda();
}

GPUBUF_EXPORT int gpubuf_cuda_gemm(double alpha,
				   const struct gpubuf_cuda_matrix *a,
				   const struct gpubuf_cuda_matrix *b,
				   double beta,
				   const struct gpubuf_cuda_matrix *c,
				   void *stream)
{
	struct gpubuf_gemm_args g;
	int err;

	(void)stream;
	gpubuf_error_clear();
	err = gpubuf_cuda_gemm_args(alpha, a, b, beta, c, &g);
	return err ? err : gpubuf_no_cuda();
}

#endif /* GPUBUF_HAVE_CUDA */
