// SPDX-License-Identifier: MIT
/*
 * Description: gpubuf_vk_wrap() on the application's own Vulkan device
 * (Mesa's lavapipe here, a Vulkan driver that runs on the CPU): what it
 * checks, GEMV on the wrapped device, and a lost device. A stand-in
 * vkQueueSubmit, reached through the get_instance_proc_addr the
 * application hands over, answers VK_ERROR_DEVICE_LOST: that call and
 * every later GEMV and import answer -EIO without touching the queue.
 * Stand-in property queries show a small maxMemoryAllocationSize (import
 * past it: -EFBIG) and protected or AMD device-coherent memory types,
 * which are never chosen.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#ifdef GPUBUF_HAVE_VULKAN
#include <vulkan/vulkan.h>
#endif

#include "tap.h"
#include "gemm_ref.h"

#ifdef GPUBUF_HAVE_VULKAN

/* ---- the application's device, with a queue whose submits can fail ---- */

static PFN_vkGetInstanceProcAddr t_real_gipa;
static PFN_vkGetDeviceProcAddr t_real_gdpa;
static PFN_vkQueueSubmit t_real_submit;
static PFN_vkGetPhysicalDeviceProperties2 t_real_props2;
static PFN_vkGetPhysicalDeviceMemoryProperties t_real_mem_props;
static int t_lose_submits;	/* this many submissions fail, with: */
static VkResult t_submit_error = VK_ERROR_DEVICE_LOST;
static int t_submits;
static VkDeviceSize t_max_alloc;	/* maxMemoryAllocationSize to report */
static uint32_t t_max_invocations;	/* maxComputeWorkGroupInvocations */
static VkDeviceSize t_host_align;	/* minImportedHostPointerAlignment */
static VkMemoryPropertyFlags t_type_flags;	/* added to every memory type */
static VkPhysicalDeviceType t_device_type;	/* reported instead, if set */
static bool t_no_subgroup_add;	/* hide subgroup arithmetic */
static uint32_t t_api_version;	/* apiVersion to report, if set */
static PFN_vkGetPhysicalDeviceProperties t_real_props;

static VKAPI_ATTR void VKAPI_CALL t_props(VkPhysicalDevice phys,
					  VkPhysicalDeviceProperties *p)
{
	t_real_props(phys, p);
	if (t_api_version)
		p->apiVersion = t_api_version;
}

static VKAPI_ATTR void VKAPI_CALL t_props2(VkPhysicalDevice phys,
					   VkPhysicalDeviceProperties2 *p)
{
	t_real_props2(phys, p);
	if (t_max_invocations)
		p->properties.limits.maxComputeWorkGroupInvocations =
			t_max_invocations;
	if (t_device_type)
		p->properties.deviceType = t_device_type;
	for (VkBaseOutStructure *s = p->pNext; s; s = s->pNext) {
		if (t_no_subgroup_add && s->sType ==
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES)
			((VkPhysicalDeviceSubgroupProperties *)s)
				->supportedOperations &=
				~(VkSubgroupFeatureFlags)VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
		if (t_max_alloc && s->sType ==
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES)
			((VkPhysicalDeviceMaintenance3Properties *)s)
				->maxMemoryAllocationSize = t_max_alloc;
		if (t_host_align && s->sType ==
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT)
			((VkPhysicalDeviceExternalMemoryHostPropertiesEXT *)s)
				->minImportedHostPointerAlignment = t_host_align;
	}
}

static VKAPI_ATTR void VKAPI_CALL t_mem_props(
	VkPhysicalDevice phys, VkPhysicalDeviceMemoryProperties *p)
{
	t_real_mem_props(phys, p);
	for (uint32_t i = 0; i < p->memoryTypeCount; i++)
		p->memoryTypes[i].propertyFlags |= t_type_flags;
}

static VKAPI_ATTR VkResult VKAPI_CALL t_submit(VkQueue q, uint32_t n,
					       const VkSubmitInfo *s,
					       VkFence f)
{
	t_submits++;
	if (t_lose_submits) {
		t_lose_submits--;
		return t_submit_error;
	}
	return t_real_submit(q, n, s, f);
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL t_gdpa(VkDevice d,
						       const char *name)
{
	if (!strcmp(name, "vkQueueSubmit")) {
		t_real_submit = (PFN_vkQueueSubmit)t_real_gdpa(d, name);
		return (PFN_vkVoidFunction)t_submit;
	}
	return t_real_gdpa(d, name);
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL t_gipa(VkInstance i,
						       const char *name)
{
	if (!strcmp(name, "vkGetDeviceProcAddr")) {
		t_real_gdpa = (PFN_vkGetDeviceProcAddr)t_real_gipa(i, name);
		return (PFN_vkVoidFunction)t_gdpa;
	}
	if (!strcmp(name, "vkGetPhysicalDeviceProperties")) {
		t_real_props = (PFN_vkGetPhysicalDeviceProperties)
			       t_real_gipa(i, name);
		return (PFN_vkVoidFunction)t_props;
	}
	if (!strcmp(name, "vkGetPhysicalDeviceProperties2")) {
		t_real_props2 = (PFN_vkGetPhysicalDeviceProperties2)
				t_real_gipa(i, name);
		return (PFN_vkVoidFunction)t_props2;
	}
	if (!strcmp(name, "vkGetPhysicalDeviceMemoryProperties")) {
		t_real_mem_props = (PFN_vkGetPhysicalDeviceMemoryProperties)
				   t_real_gipa(i, name);
		return (PFN_vkVoidFunction)t_mem_props;
	}
	return t_real_gipa(i, name);
}

struct t_app {
	void *lib;
	VkInstance inst;
	VkPhysicalDevice phys;
	VkDevice dev;
	VkQueue queue;
	uint32_t family;
};

static bool t_has_ext(VkInstance inst, VkPhysicalDevice phys, const char *ext)
{
	PFN_vkEnumerateDeviceExtensionProperties enumerate =
		(PFN_vkEnumerateDeviceExtensionProperties)
		t_real_gipa(inst, "vkEnumerateDeviceExtensionProperties");
	VkExtensionProperties props[256];
	uint32_t n = 256;
	bool found = false;

	if (enumerate(phys, NULL, &n, props) < 0)
		return false;
	for (uint32_t i = 0; i < n; i++)
		found |= !strcmp(props[i].extensionName, ext);
	return found;
}

/* Closes what t_app_open() got so far. */
static void t_app_close(struct t_app *a)
{
	if (a->dev)
		((PFN_vkDestroyDevice)t_real_gipa(a->inst, "vkDestroyDevice"))(
			a->dev, NULL);
	if (a->inst)
		((PFN_vkDestroyInstance)t_real_gipa(a->inst,
			"vkDestroyInstance"))(a->inst, NULL);
	if (a->lib)
		dlclose(a->lib);
	memset(a, 0, sizeof(*a));
}

/*
 * A Vulkan 1.2 device with a compute queue, bufferDeviceAddress,
 * shaderInt64 and VK_EXT_external_memory_host, as gpubuf_vk_wrap(3) asks;
 * 0, or 1 with a reason printed when this machine has no such device.
 */
static int t_app_open(struct t_app *a)
{
	static const char *const ext = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
	VkApplicationInfo ai = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.apiVersion = VK_API_VERSION_1_2,
	};
	VkInstanceCreateInfo ici = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &ai,
	};
	VkPhysicalDeviceVulkan12Features f12 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
		.bufferDeviceAddress = VK_TRUE,
	};
	VkPhysicalDeviceFeatures2 f2 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
		.pNext = &f12,
		.features.shaderInt64 = VK_TRUE,
	};
	float prio = 1;
	VkDeviceQueueCreateInfo qci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueCount = 1,
		.pQueuePriorities = &prio,
	};
	VkDeviceCreateInfo dci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.pNext = &f2,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &qci,
		.enabledExtensionCount = 1,
		.ppEnabledExtensionNames = &ext,
	};
	VkQueueFamilyProperties fam[16];
	VkPhysicalDeviceProperties props;
	uint32_t n = 1;

	memset(a, 0, sizeof(*a));
	a->lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!a->lib) {
		printf("# no libvulkan.so.1: %s\n", dlerror());
		return 1;
	}
	t_real_gipa = (PFN_vkGetInstanceProcAddr)dlsym(a->lib,
						       "vkGetInstanceProcAddr");
	if (!t_real_gipa ||
	    ((PFN_vkCreateInstance)t_real_gipa(NULL, "vkCreateInstance"))(
		    &ici, NULL, &a->inst) != VK_SUCCESS) {
		printf("# no Vulkan 1.2 instance\n");
		goto none;
	}
	if (((PFN_vkEnumeratePhysicalDevices)t_real_gipa(a->inst,
		"vkEnumeratePhysicalDevices"))(a->inst, &n, &a->phys) < 0 ||
	    !n) {
		printf("# no Vulkan device\n");
		goto none;
	}
	((PFN_vkGetPhysicalDeviceProperties)t_real_gipa(a->inst,
		"vkGetPhysicalDeviceProperties"))(a->phys, &props);
	if (props.apiVersion < VK_API_VERSION_1_2 ||
	    !t_has_ext(a->inst, a->phys, ext)) {
		printf("# %s: no Vulkan 1.2 or no %s\n", props.deviceName, ext);
		goto none;
	}
	n = 16;
	((PFN_vkGetPhysicalDeviceQueueFamilyProperties)t_real_gipa(a->inst,
		"vkGetPhysicalDeviceQueueFamilyProperties"))(a->phys, &n, fam);
	for (a->family = 0; a->family < n; a->family++)
		if (fam[a->family].queueFlags & VK_QUEUE_COMPUTE_BIT)
			break;
	if (a->family == n) {
		printf("# %s has no compute queue\n", props.deviceName);
		goto none;
	}
	qci.queueFamilyIndex = a->family;
	if (((PFN_vkCreateDevice)t_real_gipa(a->inst, "vkCreateDevice"))(
		    a->phys, &dci, NULL, &a->dev) != VK_SUCCESS) {
		printf("# vkCreateDevice failed on %s\n", props.deviceName);
		goto none;
	}
	((PFN_vkGetDeviceQueue)t_real_gipa(a->inst, "vkGetDeviceQueue"))(
		a->dev, a->family, 0, &a->queue);
	return 0;
none:
	t_app_close(a);
	return 1;
}

static struct gpubuf_vk_device t_desc(const struct t_app *a,
				      uint32_t features)
{
	return (struct gpubuf_vk_device){
		.size = sizeof(struct gpubuf_vk_device),
		.get_instance_proc_addr = (void *)t_gipa,
		.instance = a->inst,
		.physical_device = a->phys,
		.device = a->dev,
		.queue = a->queue,
		.queue_family = a->family,
		.features = features,
	};
}

/* ---- the tests ---------------------------------------------------------- */

static int wrap_checks_what_the_application_says(void)
{
	struct gpubuf_vk_device d;
	struct gpubuf_vk *vk = NULL;
	struct t_app a;

	if (t_app_open(&a))
		return t_skip("no Vulkan 1.2 device with VK_EXT_external_memory_host");
	/* A queue family that does not exist. */
	d = t_desc(&a, GPUBUF_VK_FEATURE_HOST_IMPORT);
	d.queue_family = 999;
	T_EQ(gpubuf_vk_wrap(&d, &vk), -EINVAL);
	T_CHECK(strstr(gpubuf_last_error(), "cannot compute"));
	/* An import whose extension the device was not created with. */
	d = t_desc(&a, GPUBUF_VK_FEATURE_DMA_BUF_IMPORT);
	T_EQ(gpubuf_vk_wrap(&d, &vk), -EINVAL);
	T_CHECK(strstr(gpubuf_last_error(), "VK_EXT_external_memory_dma_buf"));
	/* An unknown feature bit, a reserved field. */
	d = t_desc(&a, 1u << 31);
	T_EQ(gpubuf_vk_wrap(&d, &vk), -EINVAL);
	d = t_desc(&a, 0);
	d.reserved[2] = 1;
	T_EQ(gpubuf_vk_wrap(&d, &vk), -EINVAL);
	/* A device that speaks Vulkan 1.1 (the shaders need 1.2's features). */
	d = t_desc(&a, GPUBUF_VK_FEATURE_HOST_IMPORT);
	t_api_version = VK_MAKE_VERSION(1, 1, 0);
	T_EQ(gpubuf_vk_wrap(&d, &vk), -ENODEV);
	t_api_version = 0;
	T_CHECK(strstr(gpubuf_last_error(), "speaks 1.1; 1.2 is needed"));
	T_CHECK(!vk);
	/* The same device as it is: wrapped. */
	T_EQ(gpubuf_vk_wrap(&d, &vk), 0);
	gpubuf_vk_close(vk);
	t_app_close(&a);
	return T_PASS;
}

struct t_gemv {
	struct gpubuf_matrix ma, mx, my;
	struct gpubuf_vk_matrix a, x, y;
};

static int t_gemv_setup(struct gpubuf_ctx *ctx, struct gpubuf_vk *vk,
			struct t_gemv *g)
{
	struct gpubuf_vk_memory mem;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 8, 8,
				 GPUBUF_ROW_MAJOR, 0, &g->ma), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 8, 1,
				 GPUBUF_COL_MAJOR, 0, &g->mx), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 8, 1,
				 GPUBUF_COL_MAJOR, 0, &g->my), 0);
	t_fill(&g->ma, 1);
	t_fill(&g->mx, 2);
	t_fill(&g->my, 3);
	T_EQ(gpubuf_vk_import(g->ma.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_import(g->mx.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_import(g->my.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_matrix_view(&g->ma, vk, &g->a), 0);
	T_EQ(gpubuf_vk_matrix_view(&g->mx, vk, &g->x), 0);
	T_EQ(gpubuf_vk_matrix_view(&g->my, vk, &g->y), 0);
	return T_PASS;
}

static void t_gemv_release(struct gpubuf_vk *vk, struct t_gemv *g)
{
	gpubuf_vk_release(g->ma.buf, vk);
	gpubuf_vk_release(g->mx.buf, vk);
	gpubuf_vk_release(g->my.buf, vk);
	gpubuf_matrix_release(&g->ma);
	gpubuf_matrix_release(&g->mx);
	gpubuf_matrix_release(&g->my);
}

/* y = A x, each element within a few ulps of the double sum. */
static int t_gemv_checked(struct t_gemv *g)
{
	T_EQ(gpubuf_vk_gemv(1, &g->a, &g->x, 0, &g->y), 0);
	for (size_t r = 0; r < 8; r++) {
		double want = 0, mag = 0;

		for (size_t c = 0; c < 8; c++) {
			want += t_get(&g->ma, r, c) * t_get(&g->mx, c, 0);
			mag += fabs(t_get(&g->ma, r, c) * t_get(&g->mx, c, 0));
		}
		T_CHECK(fabs(t_get(&g->my, r, 0) - want) <= 1e-5 * (mag + 1));
	}
	return T_PASS;
}

static int wrapped_device_runs_gemv(void)
{
	struct gpubuf_ctx *ctx;
	struct gpubuf_vk_device d;
	struct gpubuf_vk *vk = NULL;
	struct t_gemv g;
	struct t_app a;
	int r;

	if (t_app_open(&a))
		return t_skip("no Vulkan 1.2 device with VK_EXT_external_memory_host");
	ctx = t_open();
	d = t_desc(&a, GPUBUF_VK_FEATURE_HOST_IMPORT);
	T_EQ(gpubuf_vk_wrap(&d, &vk), 0);
	t_submits = 0;
	r = t_gemv_setup(ctx, vk, &g);
	if (r == T_PASS)
		r = t_gemv_checked(&g);
	T_EQ(r, T_PASS);
	/* The application's queue ran it, through its own entry points. */
	T_EQ(t_submits, 1);
	t_gemv_release(vk, &g);
	gpubuf_vk_close(vk);
	t_app_close(&a);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * V3: with GPUBUF_VK_MAX_FLOPS=32 an 8 x 8 GEMV (16 operations a row of y)
 * goes in four submissions of two rows each, counted at the application's
 * vkQueueSubmit, with the same result; with 16 (one row) in eight, and
 * with the default in one.
 */
static int large_calls_go_in_bounded_submissions(void)
{
	static const struct { const char *bound; int submits; } runs[] = {
		{ "32", 4 }, { "16", 8 }, { "1", 8 }, { NULL, 1 },
	};
	struct gpubuf_ctx *ctx;
	struct gpubuf_vk_device d;
	struct gpubuf_vk *vk = NULL;
	struct t_gemv g;
	struct t_app a;

	if (t_app_open(&a))
		return t_skip("no Vulkan 1.2 device with VK_EXT_external_memory_host");
	ctx = t_open();
	d = t_desc(&a, GPUBUF_VK_FEATURE_HOST_IMPORT);
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		if (runs[i].bound)
			T_EQ(setenv("GPUBUF_VK_MAX_FLOPS", runs[i].bound, 1), 0);
		else
			unsetenv("GPUBUF_VK_MAX_FLOPS");
		T_EQ(gpubuf_vk_wrap(&d, &vk), 0);
		T_EQ(t_gemv_setup(ctx, vk, &g), T_PASS);
		t_submits = 0;
		T_EQ(t_gemv_checked(&g), T_PASS);
		T_EQ(t_submits, runs[i].submits);
		t_gemv_release(vk, &g);
		gpubuf_vk_close(vk);
		vk = NULL;
	}
	t_app_close(&a);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * The GEMV kernels a GPU gets for a row-major A, run on lavapipe reported
 * as a discrete GPU: a subgroup per row (subgroupAdd()), and with the
 * subgroup arithmetic hidden, a workgroup per row with a tree in shared
 * memory. Ragged shapes, alpha and beta, a padded A whose padding (NaN)
 * must not be read, against a double reference.
 */
static int t_rows_gemv(struct gpubuf_ctx *ctx, struct gpubuf_vk *vk,
		       size_t m, size_t k)
{
	struct gpubuf_matrix pa, a, x, y;
	struct gpubuf_vk_matrix va, vx, vy;
	struct gpubuf_vk_memory mem;
	double *want = calloc(m, sizeof(double)), *mag = calloc(m, sizeof(double));
	const double alpha = 1.25, beta = -0.5;
	int ok = 1;

	T_CHECK(want && mag);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, m, k + 3,
				 GPUBUF_ROW_MAJOR, 0, &pa), 0);
	T_EQ(gpubuf_matrix_sub(&pa, 0, 0, m, k, &a), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, k, 1,
				 GPUBUF_COL_MAJOR, 0, &x), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, m, 1,
				 GPUBUF_COL_MAJOR, 0, &y), 0);
	for (size_t r = 0; r < m; r++)
		for (size_t c = 0; c < k + 3; c++)
			gpubuf_matrix_set(&pa, r, c, c < k ? t_val(r, c, 1) : NAN);
	t_fill(&x, 2);
	t_fill(&y, 3);
	for (size_t r = 0; r < m; r++) {
		for (size_t c = 0; c < k; c++) {
			double p = t_get(&a, r, c) * t_get(&x, c, 0);

			want[r] += p;
			mag[r] += fabs(p);
		}
		want[r] = alpha * want[r] + beta * t_get(&y, r, 0);
		mag[r] = fabs(alpha) * mag[r] + fabs(beta * t_get(&y, r, 0));
	}
	T_EQ(gpubuf_vk_import(pa.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_import(x.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_import(y.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_matrix_view(&a, vk, &va), 0);
	T_EQ(gpubuf_vk_matrix_view(&x, vk, &vx), 0);
	T_EQ(gpubuf_vk_matrix_view(&y, vk, &vy), 0);
	T_EQ(gpubuf_vk_gemv(alpha, &va, &vx, beta, &vy), 0);
	for (size_t r = 0; r < m && ok; r++)
		if (!(fabs(t_get(&y, r, 0) - want[r]) <=
		      2.0 * (double)(k + 2) * 0x1p-24 * mag[r])) {
			printf("# %zux%zu: y[%zu] = %g, want %g\n", m, k, r,
			       t_get(&y, r, 0), want[r]);
			ok = 0;
		}
	gpubuf_vk_release(pa.buf, vk);
	gpubuf_vk_release(x.buf, vk);
	gpubuf_vk_release(y.buf, vk);
	gpubuf_matrix_release(&pa);
	gpubuf_matrix_release(&x);
	gpubuf_matrix_release(&y);
	free(want);
	free(mag);
	return ok ? T_PASS : T_FAIL;
}

static int gpu_gemv_kernels_match_reference(void)
{
	static const size_t shapes[][2] = {
		{ 300, 177 }, { 3, 1025 }, { 64, 64 }, { 70, 3 }, { 1, 2 },
	};
	struct gpubuf_ctx *ctx;
	struct gpubuf_vk_device d;
	struct gpubuf_vk *vk = NULL;
	struct t_app a;

	if (t_app_open(&a))
		return t_skip("no Vulkan 1.2 device with VK_EXT_external_memory_host");
	ctx = t_open();
	d = t_desc(&a, GPUBUF_VK_FEATURE_HOST_IMPORT);
	t_device_type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
	for (int shared = 0; shared < 2; shared++) {
		t_no_subgroup_add = shared;
		T_EQ(gpubuf_vk_wrap(&d, &vk), 0);
		for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
			if (t_rows_gemv(ctx, vk, shapes[i][0], shapes[i][1]) !=
			    T_PASS) {
				printf("# %s kernel\n", shared ? "shared-memory" :
				       "subgroup");
				t_device_type = 0;
				t_no_subgroup_add = false;
				return T_FAIL;
			}
		gpubuf_vk_close(vk);
		vk = NULL;
	}
	t_device_type = 0;
	t_no_subgroup_add = false;
	t_app_close(&a);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * Issue 49, item 6: any failed vkQueueSubmit marked the device lost for
 * good. Out of host or device memory is not device loss: the spec leaves
 * the fence and the command buffer untouched by such a failure, so the
 * call answers ENOMEM and the next one runs.
 */
static int out_of_memory_submission_is_not_device_loss(void)
{
	static const VkResult oom[] = { VK_ERROR_OUT_OF_HOST_MEMORY,
					VK_ERROR_OUT_OF_DEVICE_MEMORY };
	struct gpubuf_ctx *ctx;
	struct gpubuf_vk_device d;
	struct gpubuf_vk *vk = NULL;
	struct t_gemv g;
	struct t_app a;

	if (t_app_open(&a))
		return t_skip("no Vulkan 1.2 device with VK_EXT_external_memory_host");
	ctx = t_open();
	d = t_desc(&a, GPUBUF_VK_FEATURE_HOST_IMPORT);
	T_EQ(gpubuf_vk_wrap(&d, &vk), 0);
	T_EQ(t_gemv_setup(ctx, vk, &g), T_PASS);
	for (size_t i = 0; i < 2; i++) {
		t_submits = 0;
		t_submit_error = oom[i];
		t_lose_submits = 1;
		T_EQ(gpubuf_vk_gemv(1, &g.a, &g.x, 0, &g.y), -ENOMEM);
		T_CHECK(strstr(gpubuf_last_error(), "vkQueueSubmit"));
		T_CHECK(strstr(gpubuf_last_error(), i ?
			       "VK_ERROR_OUT_OF_DEVICE_MEMORY" :
			       "VK_ERROR_OUT_OF_HOST_MEMORY"));
		/* Asked again, and it computes. */
		T_EQ(t_gemv_checked(&g), T_PASS);
		T_EQ(t_submits, 2);
	}
	t_submit_error = VK_ERROR_DEVICE_LOST;
	t_gemv_release(vk, &g);
	gpubuf_vk_close(vk);
	t_app_close(&a);
	gpubuf_close(ctx);
	return T_PASS;
}

static int lost_submission_marks_the_device_lost(void)
{
	struct gpubuf_ctx *ctx;
	struct gpubuf_vk_device d;
	struct gpubuf_vk_memory mem;
	struct gpubuf_vk *vk = NULL;
	struct gpubuf_matrix extra;
	struct t_gemv g;
	struct t_app a;

	if (t_app_open(&a))
		return t_skip("no Vulkan 1.2 device with VK_EXT_external_memory_host");
	ctx = t_open();
	d = t_desc(&a, GPUBUF_VK_FEATURE_HOST_IMPORT);
	T_EQ(gpubuf_vk_wrap(&d, &vk), 0);
	T_EQ(t_gemv_setup(ctx, vk, &g), T_PASS);
	t_submits = 0;
	t_lose_submits = 1;
	T_EQ(gpubuf_vk_gemv(1, &g.a, &g.x, 0, &g.y), -EIO);
	T_CHECK(strstr(gpubuf_last_error(), "vkQueueSubmit"));
	T_CHECK(strstr(gpubuf_last_error(), "VK_ERROR_DEVICE_LOST"));
	T_EQ(t_submits, 1);
	/* The submission would succeed now: the device is not asked again. */
	T_EQ(t_lose_submits, 0);
	T_EQ(gpubuf_vk_gemv(1, &g.a, &g.x, 0, &g.y), -EIO);
	T_CHECK(strstr(gpubuf_last_error(), "lost by an earlier call"));
	T_EQ(gpubuf_vk_gemm(1, &g.a, &g.x, 0, &g.y), -EIO);
	T_EQ(t_submits, 1);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 8, 8,
				 GPUBUF_ROW_MAJOR, 0, &extra), 0);
	T_EQ(gpubuf_vk_import(extra.buf, vk, &mem), -EIO);
	gpubuf_matrix_release(&extra);
	/* What was imported before is still released cleanly. */
	t_gemv_release(vk, &g);
	gpubuf_vk_close(vk);
	t_app_close(&a);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * gpubuf_pool_put(3): a buffer still imported into a Vulkan device is not
 * cached (the next owner would inherit the import); its reference drops,
 * and the import goes with the buffer.
 */
static int imported_buffer_is_not_pooled(void)
{
	struct gpubuf_ctx *ctx;
	struct gpubuf_pool_stats st;
	struct gpubuf_vk_memory mem;
	struct gpubuf_pool *pool;
	struct gpubuf_vk *vk = NULL;
	struct gpubuf *b;

	if (gpubuf_vk_open(0, 0, &vk))
		return t_skip("no Vulkan device: %s", gpubuf_last_error());
	ctx = t_open();
	T_EQ(gpubuf_pool_create(ctx, NULL, &pool), 0);
	T_EQ(gpubuf_pool_get(pool, 1 << 16, &b), 0);
	T_EQ(gpubuf_vk_import(b, vk, &mem), 0);
	T_EQ(gpubuf_pool_put(pool, b), 0);
	gpubuf_pool_stats(pool, &st);
	T_EQ(st.cached_buffers, 0);
	T_EQ(st.drops, 1);
	gpubuf_pool_destroy(pool);
	gpubuf_vk_close(vk);
	gpubuf_close(ctx);
	return T_PASS;
}

/* A buffer larger than one VkDeviceMemory may be: -EFBIG, naming the limit. */
static int import_past_max_allocation_is_efbig(void)
{
	struct gpubuf_ctx *ctx;
	struct gpubuf_vk_memory mem;
	struct gpubuf_vk_device d;
	struct gpubuf_vk *vk = NULL;
	struct gpubuf *big, *small;
	struct t_app a;

	if (t_app_open(&a))
		return t_skip("no Vulkan 1.2 device with VK_EXT_external_memory_host");
	ctx = t_open();
	d = t_desc(&a, GPUBUF_VK_FEATURE_HOST_IMPORT);
	t_max_alloc = 1 << 16;
	T_EQ(gpubuf_vk_wrap(&d, &vk), 0);
	t_max_alloc = 0;
	T_EQ(gpubuf_alloc(ctx, 1 << 20, NULL, &big), 0);
	T_EQ(gpubuf_alloc(ctx, 1 << 16, NULL, &small), 0);
	T_EQ(gpubuf_vk_import(big, vk, &mem), -EFBIG);
	T_CHECK(strstr(gpubuf_last_error(),
		       "maxMemoryAllocationSize (65536 bytes)"));
	T_EQ(gpubuf_vk_import(small, vk, &mem), 0);
	T_EQ(gpubuf_vk_release(small, vk), 0);
	gpubuf_unref(big);
	gpubuf_unref(small);
	gpubuf_vk_close(vk);
	t_app_close(&a);
	gpubuf_close(ctx);
	return T_PASS;
}

/* Protected and AMD device-coherent memory types are never chosen. */
static int protected_memory_types_are_skipped(void)
{
	static const VkMemoryPropertyFlags flags[] = {
		VK_MEMORY_PROPERTY_PROTECTED_BIT,
		VK_MEMORY_PROPERTY_DEVICE_COHERENT_BIT_AMD,
	};
	struct gpubuf_ctx *ctx;
	struct gpubuf_vk_memory mem;
	struct gpubuf_vk_device d;
	struct gpubuf *b;
	struct t_app a;

	if (t_app_open(&a))
		return t_skip("no Vulkan 1.2 device with VK_EXT_external_memory_host");
	ctx = t_open();
	T_EQ(gpubuf_alloc(ctx, 1 << 16, NULL, &b), 0);
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		struct gpubuf_vk *vk = NULL;

		d = t_desc(&a, GPUBUF_VK_FEATURE_HOST_IMPORT);
		t_type_flags = flags[i];
		T_EQ(gpubuf_vk_wrap(&d, &vk), 0);
		t_type_flags = 0;
		T_EQ(gpubuf_vk_import(b, vk, &mem), -EOPNOTSUPP);
		T_CHECK(strstr(gpubuf_last_error(), "no host-coherent memory type"));
		gpubuf_vk_close(vk);
	}
	gpubuf_unref(b);
	t_app_close(&a);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * gpubuf_last_error(3): a consumer's failure leaves its detail, calls
 * outside the consumers leave it alone, the next consumer call clears it.
 */
static int last_error_belongs_to_the_consumers(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_vk_info info;
	struct gpubuf_vk *vk = NULL;
	struct gpubuf *b = NULL;
	char detail[256];

	T_EQ(gpubuf_vk_open(999, 0, &vk), -ENODEV);
	snprintf(detail, sizeof(detail), "%s", gpubuf_last_error());
	T_CHECK(strstr(detail, "999"));
	T_EQ(gpubuf_alloc(ctx, 0, NULL, &b), -EINVAL);
	T_CHECK(!strcmp(gpubuf_last_error(), detail));
	T_EQ(gpubuf_vk_info(NULL, &info), -EINVAL);
	T_CHECK(!strcmp(gpubuf_last_error(), ""));
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * Vulkan promises 128 invocations per workgroup; the GEMM shader needs
 * 256. A device with fewer gets GEMV, and GEMM says why it cannot.
 */
static int gemm_needs_256_invocations(void)
{
	struct gpubuf_ctx *ctx;
	struct gpubuf_vk_device d;
	struct gpubuf_vk *vk = NULL;
	struct t_gemv g;
	struct t_app a;
	int r;

	if (t_app_open(&a))
		return t_skip("no Vulkan 1.2 device with VK_EXT_external_memory_host");
	ctx = t_open();
	d = t_desc(&a, GPUBUF_VK_FEATURE_HOST_IMPORT);
	t_max_invocations = 128;
	r = gpubuf_vk_wrap(&d, &vk);
	t_max_invocations = 0;
	T_EQ(r, 0);
	T_EQ(t_gemv_setup(ctx, vk, &g), T_PASS);
	T_EQ(gpubuf_vk_gemm(1, &g.a, &g.x, 0, &g.y), -EOPNOTSUPP);
	T_CHECK(strstr(gpubuf_last_error(), "allows 128 invocations"));
	T_EQ(t_gemv_checked(&g), T_PASS);
	t_gemv_release(vk, &g);
	gpubuf_vk_close(vk);
	t_app_close(&a);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * No descriptor binds a matrix (docs/vulkan.md), so a GEMV over an A
 * larger than the device's maxStorageBufferRange (bookworm's lavapipe:
 * 128 MiB) runs and is exact: A[i][j] = i % 7 + 1 and x = 1 give integer
 * sums that f32 holds exactly.
 */
static int gemv_past_max_storage_buffer_range(void)
{
	VkPhysicalDeviceProperties props;
	struct gpubuf_matrix ma, mx, my;
	struct gpubuf_vk_matrix va, vx, vy;
	struct gpubuf_vk_memory mem;
	struct gpubuf_vk_device d;
	struct gpubuf_vk *vk = NULL;
	struct gpubuf_ctx *ctx;
	size_t rows, cols = 16384;
	struct t_app a;

	if (t_app_open(&a))
		return t_skip("no Vulkan 1.2 device with VK_EXT_external_memory_host");
	((PFN_vkGetPhysicalDeviceProperties)t_real_gipa(a.inst,
		"vkGetPhysicalDeviceProperties"))(a.phys, &props);
	if (props.limits.maxStorageBufferRange > (1u << 30)) {
		t_app_close(&a);
		return t_skip("maxStorageBufferRange is past the 1 GiB this test allocates");
	}
	rows = props.limits.maxStorageBufferRange / (cols * 4) + 16;
	printf("# maxStorageBufferRange %u bytes; A %zu x %zu f32, %zu bytes\n",
	       props.limits.maxStorageBufferRange, rows, cols, rows * cols * 4);
	ctx = t_open();
	d = t_desc(&a, GPUBUF_VK_FEATURE_HOST_IMPORT);
	T_EQ(gpubuf_vk_wrap(&d, &vk), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, rows, cols,
				 GPUBUF_ROW_MAJOR, 0, &ma), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, cols, 1,
				 GPUBUF_COL_MAJOR, 0, &mx), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, rows, 1,
				 GPUBUF_COL_MAJOR, 0, &my), 0);
	for (size_t i = 0; i < rows; i++)
		for (size_t j = 0; j < cols; j++)
			((float *)gpubuf_matrix_data(&ma))[i * ma.ld + j] =
				(float)(i % 7 + 1);
	for (size_t j = 0; j < cols; j++)
		((float *)gpubuf_matrix_data(&mx))[j] = 1;
	T_EQ(gpubuf_vk_import(ma.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_import(mx.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_import(my.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_matrix_view(&ma, vk, &va), 0);
	T_EQ(gpubuf_vk_matrix_view(&mx, vk, &vx), 0);
	T_EQ(gpubuf_vk_matrix_view(&my, vk, &vy), 0);
	T_EQ(gpubuf_vk_gemv(1, &va, &vx, 0, &vy), 0);
	for (size_t i = 0; i < rows; i++) {
		float got = ((float *)gpubuf_matrix_data(&my))[i];

		if (got != (float)(cols * (i % 7 + 1))) {
			printf("# y[%zu] = %g, want %zu\n", i, got,
			       cols * (i % 7 + 1));
			return T_FAIL;
		}
	}
	gpubuf_vk_release(ma.buf, vk);
	gpubuf_vk_release(mx.buf, vk);
	gpubuf_vk_release(my.buf, vk);
	gpubuf_matrix_release(&ma);
	gpubuf_matrix_release(&mx);
	gpubuf_matrix_release(&my);
	gpubuf_vk_close(vk);
	t_app_close(&a);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * lavapipe takes any host pointer and size; the library checks the
 * device's minImportedHostPointerAlignment itself (here 1 MiB, against a
 * 64 KiB buffer): -EINVAL, naming the unit.
 */
static int misaligned_host_import_is_einval(void)
{
	struct gpubuf_ctx *ctx;
	struct gpubuf_vk_memory mem;
	struct gpubuf_vk_device d;
	struct gpubuf_vk *vk = NULL;
	struct gpubuf *b;
	struct t_app a;
	int r;

	if (t_app_open(&a))
		return t_skip("no Vulkan 1.2 device with VK_EXT_external_memory_host");
	ctx = t_open();
	d = t_desc(&a, GPUBUF_VK_FEATURE_HOST_IMPORT);
	t_host_align = 1 << 20;
	r = gpubuf_vk_wrap(&d, &vk);
	t_host_align = 0;
	T_EQ(r, 0);
	T_EQ(gpubuf_alloc(ctx, 1 << 16, NULL, &b), 0);
	T_EQ(gpubuf_vk_import(b, vk, &mem), -EINVAL);
	T_CHECK(strstr(gpubuf_last_error(), "1048576-byte units"));
	gpubuf_unref(b);
	gpubuf_vk_close(vk);
	t_app_close(&a);
	gpubuf_close(ctx);
	return T_PASS;
}

static const struct t_test tests[] = {
	T_TEST(last_error_belongs_to_the_consumers),
	T_TEST(gemv_past_max_storage_buffer_range),
	T_TEST(misaligned_host_import_is_einval),
	T_TEST(gemm_needs_256_invocations),
	T_TEST(wrap_checks_what_the_application_says),
	T_TEST(import_past_max_allocation_is_efbig),
	T_TEST(protected_memory_types_are_skipped),
	T_TEST(imported_buffer_is_not_pooled),
	T_TEST(wrapped_device_runs_gemv),
	T_TEST(lost_submission_marks_the_device_lost),
	T_TEST(out_of_memory_submission_is_not_device_loss),
	T_TEST(large_calls_go_in_bounded_submissions),
	T_TEST(gpu_gemv_kernels_match_reference),
};

int main(void)
{
	return t_run(tests, sizeof(tests) / sizeof(tests[0]));
}

#else /* !GPUBUF_HAVE_VULKAN */

static int built_without_vulkan(void)
{
	return t_skip("libgpubuf was built without Vulkan support");
}

static const struct t_test tests[] = {
	T_TEST(built_without_vulkan),
};

int main(void)
{
	return t_run(tests, sizeof(tests) / sizeof(tests[0]));
}

#endif
