// SPDX-License-Identifier: MIT
/*
 * The Vulkan loader, libvulkan.so.1, loaded with dlopen on first use and
 * never closed (drivers keep threads and state for the process); entry
 * points through vkGetInstanceProcAddr and vkGetDeviceProcAddr into each
 * device's own tables, so no global function pointers but the loader's.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

#include "vulkan/vk_internal.h"
#include "core/internal.h"

static struct {
	pthread_once_t once;
	int err;
	char msg[200];
	PFN_vkGetInstanceProcAddr gipa;
} gpubuf_vk_loaded = { .once = PTHREAD_ONCE_INIT };

static void gpubuf_vk_load(void)
{
	void *lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		gpubuf_vk_loaded.err = -ENODEV;
		snprintf(gpubuf_vk_loaded.msg, sizeof(gpubuf_vk_loaded.msg),
			 "no Vulkan loader: %s", gpubuf_dlerror());
		return;
	}
	gpubuf_vk_loaded.gipa = (PFN_vkGetInstanceProcAddr)dlsym(lib,
						"vkGetInstanceProcAddr");
	if (!gpubuf_vk_loaded.gipa) {
		gpubuf_vk_loaded.err = -ENODEV;
		snprintf(gpubuf_vk_loaded.msg, sizeof(gpubuf_vk_loaded.msg),
			 "libvulkan.so.1 lacks vkGetInstanceProcAddr");
	}
}

int gpubuf_vk_loader(PFN_vkGetInstanceProcAddr *gipa)
{
	pthread_once(&gpubuf_vk_loaded.once, gpubuf_vk_load);
	if (gpubuf_vk_loaded.err) {
		gpubuf_error_set("%s", gpubuf_vk_loaded.msg);
		return gpubuf_vk_loaded.err;
	}
	*gipa = gpubuf_vk_loaded.gipa;
	return 0;
}

static const char *gpubuf_vk_result_name(VkResult r)
{
	switch (r) {
#define GPUBUF_VK_NAME(x) case x: return #x;
	GPUBUF_VK_NAME(VK_ERROR_OUT_OF_HOST_MEMORY)
	GPUBUF_VK_NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY)
	GPUBUF_VK_NAME(VK_ERROR_INITIALIZATION_FAILED)
	GPUBUF_VK_NAME(VK_ERROR_DEVICE_LOST)
	GPUBUF_VK_NAME(VK_ERROR_MEMORY_MAP_FAILED)
	GPUBUF_VK_NAME(VK_ERROR_LAYER_NOT_PRESENT)
	GPUBUF_VK_NAME(VK_ERROR_EXTENSION_NOT_PRESENT)
	GPUBUF_VK_NAME(VK_ERROR_FEATURE_NOT_PRESENT)
	GPUBUF_VK_NAME(VK_ERROR_INCOMPATIBLE_DRIVER)
	GPUBUF_VK_NAME(VK_ERROR_TOO_MANY_OBJECTS)
	GPUBUF_VK_NAME(VK_ERROR_INVALID_EXTERNAL_HANDLE)
	GPUBUF_VK_NAME(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
	GPUBUF_VK_NAME(VK_ERROR_UNKNOWN)
	GPUBUF_VK_NAME(VK_TIMEOUT)
#undef GPUBUF_VK_NAME
	default:
		return "VkResult";
	}
}

int gpubuf_vk_fail(VkResult r, const char *what)
{
	gpubuf_error_set("%s: %s (%d)", what, gpubuf_vk_result_name(r), (int)r);
	switch (r) {
	case VK_ERROR_OUT_OF_HOST_MEMORY:
	case VK_ERROR_OUT_OF_DEVICE_MEMORY:
	case VK_ERROR_TOO_MANY_OBJECTS:
		return -ENOMEM;
	case VK_ERROR_INITIALIZATION_FAILED:
	case VK_ERROR_INCOMPATIBLE_DRIVER:
	case VK_ERROR_LAYER_NOT_PRESENT:
	case VK_ERROR_EXTENSION_NOT_PRESENT:
	case VK_ERROR_FEATURE_NOT_PRESENT:
		return -ENODEV;
	case VK_ERROR_INVALID_EXTERNAL_HANDLE:
		return -EINVAL;
	case VK_TIMEOUT:
		return -ETIMEDOUT;
	default:
		return -EIO;
	}
}

int gpubuf_vk_resolve_instance(struct gpubuf_vk *vk,
			       PFN_vkGetInstanceProcAddr gipa)
{
	const char *missing = NULL;

#define GPUBUF_VK_RESOLVE(name, required)				\
	vk->name = (PFN_##name)gipa(vk->instance, #name);		\
	if (!vk->name && (required) && !missing)			\
		missing = #name;
	GPUBUF_VK_INSTANCE_FNS(GPUBUF_VK_RESOLVE)
#undef GPUBUF_VK_RESOLVE
	if (missing) {
		gpubuf_error_set("the Vulkan instance lacks %s", missing);
		return -ENODEV;
	}
	return 0;
}

int gpubuf_vk_resolve_device(struct gpubuf_vk *vk)
{
	const char *missing = NULL;

#define GPUBUF_VK_RESOLVE(name, required)				\
	vk->name = (PFN_##name)vk->vkGetDeviceProcAddr(vk->dev, #name); \
	if (!vk->name && (required) && !missing)			\
		missing = #name;
	GPUBUF_VK_DEVICE_FNS(GPUBUF_VK_RESOLVE)
#undef GPUBUF_VK_RESOLVE
	if (missing) {
		gpubuf_error_set("the Vulkan device lacks %s (Vulkan 1.2 needed)",
				 missing);
		return -ENODEV;
	}
	return 0;
}
