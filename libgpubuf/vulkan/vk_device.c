// SPDX-License-Identifier: MIT
/*
 * Vulkan devices the library computes on: its own instance and device
 * (gpubuf_vk_open) or an application's (gpubuf_vk_wrap), each with one
 * compute queue, counted references (the caller's and one per import),
 * and what the device can do for gpubuf (gpubuf_vk_info).
 *
 * The library needs Vulkan 1.2's bufferDeviceAddress and shaderInt64: its
 * kernels reach operands by 64-bit device address, as the CUDA and HSA
 * kernels do, so no descriptor range limit (128 MiB on lavapipe) bounds a
 * matrix. Imports need VK_EXT_external_memory_host or
 * VK_EXT_external_memory_dma_buf; f64 kernels need shaderFloat64.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vulkan/vk_internal.h"
#include "core/internal.h"

/* What gpubuf_vk_wrap() refuses with -EINVAL, in every build. */
static bool gpubuf_vk_device_ok(const struct gpubuf_vk_device *d)
{
	return d && d->size >= sizeof(*d) && d->instance &&
	       d->physical_device && d->device && d->queue &&
	       !(d->features & ~GPUBUF_VK_FEATURE_VALID) && !d->reserved[0] &&
	       !d->reserved[1] && !d->reserved[2] && !d->reserved[3];
}

#ifdef GPUBUF_HAVE_VULKAN

#define GPUBUF_VK_VALIDATION_LAYER	"VK_LAYER_KHRONOS_validation"

bool gpubuf_vk_forked(const struct gpubuf_vk *vk)
{
	return vk->pid != getpid();
}

int gpubuf_vk_check_process(const struct gpubuf_vk *vk)
{
	if (!gpubuf_vk_forked(vk))
		return 0;
	gpubuf_error_set("Vulkan device %s was opened by process %d; a child after fork() cannot use it",
			 vk->info.name, (int)vk->pid);
	return -ENODEV;
}

/* -EIO once a fence wait failed, or a call said the device is lost. */
int gpubuf_vk_check_lost(struct gpubuf_vk *vk)
{
	if (!atomic_load(&vk->lost))
		return 0;
	gpubuf_error_set("Vulkan device %s was lost by an earlier call",
			 vk->info.name);
	return -EIO;
}

struct gpubuf_vk *gpubuf_vk_get(struct gpubuf_vk *vk)
{
	atomic_fetch_add_explicit(&vk->refs, 1, memory_order_relaxed);
	return vk;
}

/*
 * The application's objects are never destroyed here, only ours; in a
 * fork() child, nothing: they are the parent's.
 */
static void gpubuf_vk_free(struct gpubuf_vk *vk)
{
	if (gpubuf_vk_forked(vk)) {
		free(vk);
		return;
	}
	if (vk->dev)
		gpubuf_vk_kernels_fini(vk);
	if (vk->own) {
		if (vk->dev)
			vk->vkDestroyDevice(vk->dev, NULL);
		if (vk->messenger)
			vk->vkDestroyDebugUtilsMessengerEXT(vk->instance,
							    vk->messenger, NULL);
		if (vk->instance && vk->vkDestroyInstance)
			vk->vkDestroyInstance(vk->instance, NULL);
	}
	pthread_mutex_destroy(&vk->imports_lock);
	pthread_mutex_destroy(&vk->lock);
	free(vk);
}

void gpubuf_vk_put(struct gpubuf_vk *vk)
{
	if (atomic_fetch_sub_explicit(&vk->refs, 1, memory_order_acq_rel) == 1)
		gpubuf_vk_free(vk);
}

/* GPUBUF_VK_MAX_FLOPS, unset or a positive integer; -EINVAL otherwise. */
static int gpubuf_vk_max_flops_env(uint64_t *out)
{
	const char *env = secure_getenv("GPUBUF_VK_MAX_FLOPS");
	unsigned long long v;
	char *end;

	*out = GPUBUF_VK_MAX_FLOPS_DEFAULT;
	if (!env || !*env)
		return 0;
	errno = 0;
	v = strtoull(env, &end, 10);
	if (*env < '0' || *env > '9' || errno || *end || !v) {
		gpubuf_error_set("GPUBUF_VK_MAX_FLOPS=%s is not a positive integer",
				 env);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static struct gpubuf_vk *gpubuf_vk_new(void)
{
	struct gpubuf_vk *vk = calloc(1, sizeof(*vk));

	if (!vk)
		return NULL;
	atomic_init(&vk->refs, 1);
	atomic_init(&vk->validation_errors, 0);
	pthread_mutex_init(&vk->lock, NULL);
	pthread_mutex_init(&vk->imports_lock, NULL);
	vk->pid = getpid();
	return vk;
}

/* The validation layer's errors are counted and shown on stderr. */
static VkBool32 VKAPI_PTR
gpubuf_vk_on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
		     VkDebugUtilsMessageTypeFlagsEXT types,
		     const VkDebugUtilsMessengerCallbackDataEXT *data,
		     void *user)
{
	struct gpubuf_vk *vk = user;

	(void)types;
	if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
		atomic_fetch_add(&vk->validation_errors, 1);
		fprintf(stderr, "gpubuf: Vulkan validation: %s\n",
			data && data->pMessage ? data->pMessage : "?");
	}
	return VK_FALSE;
}

static bool gpubuf_vk_has_layer(PFN_vkGetInstanceProcAddr gipa,
				const char *name)
{
	PFN_vkEnumerateInstanceLayerProperties enum_layers =
		(PFN_vkEnumerateInstanceLayerProperties)gipa(NULL,
				"vkEnumerateInstanceLayerProperties");
	VkLayerProperties *p;
	uint32_t n = 0;
	bool found = false;

	if (!enum_layers || enum_layers(&n, NULL) != VK_SUCCESS || !n)
		return false;
	p = calloc(n, sizeof(*p));
	if (p && enum_layers(&n, p) == VK_SUCCESS)
		for (uint32_t i = 0; i < n && !found; i++)
			found = !strcmp(p[i].layerName, name);
	free(p);
	return found;
}

static int gpubuf_vk_create_instance(struct gpubuf_vk *vk,
				     PFN_vkGetInstanceProcAddr gipa,
				     bool validation)
{
	PFN_vkEnumerateInstanceVersion version_fn =
		(PFN_vkEnumerateInstanceVersion)gipa(NULL,
				"vkEnumerateInstanceVersion");
	PFN_vkCreateInstance create =
		(PFN_vkCreateInstance)gipa(NULL, "vkCreateInstance");
	const char *layer = GPUBUF_VK_VALIDATION_LAYER;
	const char *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pEngineName = "libgpubuf",
		.engineVersion = VK_MAKE_API_VERSION(0, GPUBUF_VERSION_MAJOR,
						     GPUBUF_VERSION_MINOR,
						     GPUBUF_VERSION_PATCH),
		.apiVersion = VK_API_VERSION_1_2,
	};
	/* Also chained into the instance: its creation is reported too. */
	VkDebugUtilsMessengerCreateInfoEXT mci = {
		.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
		.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
				   VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
		.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
			       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
			       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
		.pfnUserCallback = gpubuf_vk_on_message,
		.pUserData = vk,
	};
	VkInstanceCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
	};
	uint32_t version = VK_API_VERSION_1_0;
	VkResult r;
	int err;

	if (version_fn && version_fn(&version) != VK_SUCCESS)
		version = VK_API_VERSION_1_0;
	if (!create || version < VK_API_VERSION_1_2) {
		gpubuf_error_set("the Vulkan loader speaks %u.%u; Vulkan 1.2 is needed",
				 VK_API_VERSION_MAJOR(version),
				 VK_API_VERSION_MINOR(version));
		return -ENODEV;
	}
	if (validation) {
		if (!gpubuf_vk_has_layer(gipa, layer)) {
			gpubuf_error_set("%s is not installed (Debian: vulkan-validationlayers)",
					 layer);
			return -ENODEV;
		}
		ci.enabledLayerCount = 1;
		ci.ppEnabledLayerNames = &layer;
		ci.enabledExtensionCount = 1;
		ci.ppEnabledExtensionNames = &ext;
		ci.pNext = &mci;
	}
	r = create(&ci, NULL, &vk->instance);
	if (r != VK_SUCCESS) {
		vk->instance = VK_NULL_HANDLE;
		return gpubuf_vk_fail(r, "vkCreateInstance");
	}
	err = gpubuf_vk_resolve_instance(vk, gipa);
	if (err || !validation)
		return err;
	if (!vk->vkCreateDebugUtilsMessengerEXT ||
	    !vk->vkDestroyDebugUtilsMessengerEXT) {
		gpubuf_error_set("the Vulkan instance lacks VK_EXT_debug_utils");
		return -ENODEV;
	}
	r = vk->vkCreateDebugUtilsMessengerEXT(vk->instance, &mci, NULL,
					       &vk->messenger);
	if (r != VK_SUCCESS) {
		vk->messenger = VK_NULL_HANDLE;
		return gpubuf_vk_fail(r, "vkCreateDebugUtilsMessengerEXT");
	}
	return 0;
}

static bool gpubuf_vk_has_ext(const VkExtensionProperties *p, uint32_t n,
			      const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(p[i].extensionName, name))
			return true;
	return false;
}

/* What phys offers gpubuf: GPUBUF_VK_FEATURE_* and the required ones. */
static int gpubuf_vk_probe(struct gpubuf_vk *vk, uint32_t *features,
			   const char **exts, uint32_t *nexts)
{
	VkPhysicalDeviceVulkan12Features f12 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
	};
	VkPhysicalDeviceFeatures2 f = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
		.pNext = &f12,
	};
	VkExtensionProperties *p;
	uint32_t n = 0;

	vk->vkGetPhysicalDeviceFeatures2(vk->phys, &f);
	if (!f12.bufferDeviceAddress || !f.features.shaderInt64) {
		gpubuf_error_set("Vulkan device %s lacks %s", vk->info.name,
				 !f12.bufferDeviceAddress ?
				 "bufferDeviceAddress" : "shaderInt64");
		return -ENODEV;
	}
	*features = f.features.shaderFloat64 ? GPUBUF_VK_FEATURE_FLOAT64 : 0;
	*nexts = 0;
	if (vk->vkEnumerateDeviceExtensionProperties(vk->phys, NULL, &n,
						     NULL) != VK_SUCCESS)
		return 0;
	p = calloc(n ? n : 1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	if (vk->vkEnumerateDeviceExtensionProperties(vk->phys, NULL, &n,
						     p) == VK_SUCCESS) {
		if (gpubuf_vk_has_ext(p, n,
				      VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME)) {
			*features |= GPUBUF_VK_FEATURE_HOST_IMPORT;
			exts[(*nexts)++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
		}
		if (gpubuf_vk_has_ext(p, n, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME) &&
		    gpubuf_vk_has_ext(p, n,
				      VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME)) {
			*features |= GPUBUF_VK_FEATURE_DMA_BUF_IMPORT;
			exts[(*nexts)++] = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
			exts[(*nexts)++] = VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME;
		}
	}
	free(p);
	return 0;
}

/* Whether vk->phys offers a device extension. */
static bool gpubuf_vk_phys_has_ext(struct gpubuf_vk *vk, const char *name)
{
	VkExtensionProperties *p;
	uint32_t n = 0;
	bool has;

	if (vk->vkEnumerateDeviceExtensionProperties(vk->phys, NULL, &n,
						     NULL) != VK_SUCCESS)
		return false;
	p = calloc(n ? n : 1, sizeof(*p));
	if (!p)
		return false;
	has = vk->vkEnumerateDeviceExtensionProperties(vk->phys, NULL, &n,
						       p) == VK_SUCCESS &&
	      gpubuf_vk_has_ext(p, n, name);
	free(p);
	return has;
}

/* Properties of vk->phys into vk->info and the limits kernels need. */
static void gpubuf_vk_read_properties(struct gpubuf_vk *vk)
{
	VkPhysicalDevicePCIBusInfoPropertiesEXT pci = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT,
	};
	VkPhysicalDeviceExternalMemoryHostPropertiesEXT host = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT,
	};
	VkPhysicalDeviceMaintenance3Properties m3 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES,
	};
	VkPhysicalDeviceSubgroupProperties sg = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
		.pNext = &m3,
	};
	VkPhysicalDeviceDriverProperties drv = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES,
		.pNext = &sg,
	};
	VkPhysicalDeviceProperties2 p = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
		.pNext = &drv,
	};

	/* Extensions' structs only where the device has the extension. */
	if (vk->info.features & GPUBUF_VK_FEATURE_HOST_IMPORT)
		m3.pNext = &host;
	if (gpubuf_vk_phys_has_ext(vk, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME)) {
		pci.pNext = p.pNext;
		p.pNext = &pci;
		vk->info.pci_valid = 1;
	}
	vk->vkGetPhysicalDeviceProperties2(vk->phys, &p);
	vk->info.pci_domain = pci.pciDomain;
	vk->info.pci_bus = (uint8_t)pci.pciBus;
	vk->info.pci_device = (uint8_t)pci.pciDevice;
	vk->info.pci_function = (uint8_t)pci.pciFunction;
	snprintf(vk->info.name, sizeof(vk->info.name), "%s",
		 p.properties.deviceName);
	vk->info.device_type = (uint32_t)p.properties.deviceType;
	vk->info.api_version = p.properties.apiVersion;
	vk->info.vendor_id = p.properties.vendorID;
	vk->info.host_import_align = host.minImportedHostPointerAlignment;
	for (int i = 0; i < 3; i++)
		vk->max_groups[i] = p.properties.limits.maxComputeWorkGroupCount[i];
	vk->max_invocations = p.properties.limits.maxComputeWorkGroupInvocations;
	vk->max_group_size[0] = p.properties.limits.maxComputeWorkGroupSize[0];
	vk->max_group_size[1] = p.properties.limits.maxComputeWorkGroupSize[1];
	vk->driver = drv.driverID;
	vk->subgroup_size = sg.subgroupSize;
	vk->subgroup_add = sg.subgroupSize &&
		(sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
		(sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
		(sg.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT);
	vk->max_alloc = m3.maxMemoryAllocationSize;
	vk->vkGetPhysicalDeviceMemoryProperties(vk->phys, &vk->mem);
}

static int gpubuf_vk_pick(struct gpubuf_vk *vk, int index)
{
	VkPhysicalDevice *devs;
	VkPhysicalDeviceProperties p;
	uint32_t n = 0;
	VkResult r;

	r = vk->vkEnumeratePhysicalDevices(vk->instance, &n, NULL);
	if (r != VK_SUCCESS)
		return gpubuf_vk_fail(r, "vkEnumeratePhysicalDevices");
	if ((uint32_t)index >= n) {
		gpubuf_error_set("no Vulkan device %d (%u present)", index, n);
		return -ENODEV;
	}
	devs = calloc(n, sizeof(*devs));
	if (!devs)
		return -ENOMEM;
	r = vk->vkEnumeratePhysicalDevices(vk->instance, &n, devs);
	if (r == VK_SUCCESS || r == VK_INCOMPLETE)
		vk->phys = devs[index];
	free(devs);
	if (!vk->phys)
		return gpubuf_vk_fail(r, "vkEnumeratePhysicalDevices");
	vk->vkGetPhysicalDeviceProperties(vk->phys, &p);
	if (p.apiVersion < VK_API_VERSION_1_2) {
		gpubuf_error_set("Vulkan device %s speaks %u.%u; 1.2 is needed",
				 p.deviceName, VK_API_VERSION_MAJOR(p.apiVersion),
				 VK_API_VERSION_MINOR(p.apiVersion));
		return -ENODEV;
	}
	snprintf(vk->info.name, sizeof(vk->info.name), "%s", p.deviceName);
	return 0;
}

static int gpubuf_vk_compute_family(struct gpubuf_vk *vk, uint32_t *family)
{
	VkQueueFamilyProperties *q;
	uint32_t n = 0, i;

	vk->vkGetPhysicalDeviceQueueFamilyProperties(vk->phys, &n, NULL);
	q = calloc(n ? n : 1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	vk->vkGetPhysicalDeviceQueueFamilyProperties(vk->phys, &n, q);
	for (i = 0; i < n && !(q[i].queueFlags & VK_QUEUE_COMPUTE_BIT); i++)
		;
	free(q);
	if (i == n) {
		gpubuf_error_set("Vulkan device %s has no compute queue",
				 vk->info.name);
		return -ENODEV;
	}
	*family = i;
	return 0;
}

static int gpubuf_vk_create_device(struct gpubuf_vk *vk)
{
	const char *exts[3];
	uint32_t features, nexts;
	float priority = 1.0f;
	VkResult r;
	int err;

	err = gpubuf_vk_probe(vk, &features, exts, &nexts);
	if (!err)
		err = gpubuf_vk_compute_family(vk, &vk->queue_family);
	if (err)
		return err;
	r = vk->vkCreateDevice(vk->phys, &(VkDeviceCreateInfo){
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.pNext = &(VkPhysicalDeviceFeatures2){
			.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
			.pNext = &(VkPhysicalDeviceVulkan12Features){
				.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
				.bufferDeviceAddress = VK_TRUE,
			},
			.features = {
				.shaderInt64 = VK_TRUE,
				.shaderFloat64 = !!(features &
						    GPUBUF_VK_FEATURE_FLOAT64),
			},
		},
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &(VkDeviceQueueCreateInfo){
			.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
			.queueFamilyIndex = vk->queue_family,
			.queueCount = 1,
			.pQueuePriorities = &priority,
		},
		.enabledExtensionCount = nexts,
		.ppEnabledExtensionNames = exts,
	}, NULL, &vk->dev);
	if (r != VK_SUCCESS) {
		vk->dev = VK_NULL_HANDLE;
		return gpubuf_vk_fail(r, "vkCreateDevice");
	}
	vk->info.features = features;
	err = gpubuf_vk_resolve_device(vk);
	if (err)
		return err;
	vk->vkGetDeviceQueue(vk->dev, vk->queue_family, 0, &vk->queue);
	return 0;
}

/*
 * An instance of our own and device index picked in it, no logical device
 * yet: what gpubuf_vk_open() and gpubuf_vk_phys_info() both start from.
 * 0, or -errno with nothing left.
 */
static int gpubuf_vk_open_physical(int index, bool validation,
				   struct gpubuf_vk **out)
{
	PFN_vkGetInstanceProcAddr gipa;
	struct gpubuf_vk *vk;
	int err = gpubuf_vk_loader(&gipa);

	if (err)
		return err;
	vk = gpubuf_vk_new();
	if (!vk)
		return -ENOMEM;
	vk->own = true;
	err = gpubuf_vk_create_instance(vk, gipa, validation);
	if (!err)
		err = gpubuf_vk_pick(vk, index);
	if (err) {
		gpubuf_vk_free(vk);
		return err;
	}
	*out = vk;
	return 0;
}

GPUBUF_EXPORT int gpubuf_vk_open(int index, unsigned int flags,
				 struct gpubuf_vk **out)
{
	GPUBUF_KEEP_ERRNO;
	uint64_t max_flops;
	struct gpubuf_vk *vk;
	int err;

	gpubuf_error_clear();
	if (!out || (flags & ~GPUBUF_VK_OPEN_VALID_FLAGS))
		return -EINVAL;
	if (index < 0) {
		gpubuf_error_set("no Vulkan device %d", index);
		return -ENODEV;
	}
	err = gpubuf_vk_max_flops_env(&max_flops);
	if (!err)
		err = gpubuf_vk_open_physical(index,
					      flags & GPUBUF_VK_OPEN_VALIDATION,
					      &vk);
	if (err)
		return err;
	vk->max_flops = max_flops;
	err = gpubuf_vk_create_device(vk);
	if (!err) {
		gpubuf_vk_read_properties(vk);
		err = gpubuf_vk_kernels_init(vk);
	}
	if (err) {
		gpubuf_vk_free(vk);
		return err;
	}
	*out = vk;
	return 0;
}

/*
 * Device index's properties (name, type, PCI address) as gpubuf_vk_info()
 * would give them, from an instance alone: no logical device, queue or
 * pipeline is made (vk_topology.c asks this for every "vulkan:N").
 */
int gpubuf_vk_phys_info(int index, struct gpubuf_vk_info *info)
{
	struct gpubuf_vk *vk;
	int err;

	if (index < 0) {
		gpubuf_error_set("no Vulkan device %d", index);
		return -ENODEV;
	}
	err = gpubuf_vk_open_physical(index, false, &vk);
	if (err)
		return err;
	gpubuf_vk_read_properties(vk);
	*info = vk->info;
	gpubuf_vk_free(vk);
	return 0;
}

/*
 * What the library cannot take an application's word for: Vulkan 1.2,
 * a compute queue family, and the entry points of the imports it claims
 * (NULL from vkGetDeviceProcAddr when the extension was not enabled).
 */
static int gpubuf_vk_check_wrapped(struct gpubuf_vk *vk, uint32_t features)
{
	VkQueueFamilyProperties *q;
	VkPhysicalDeviceProperties p;
	uint32_t n = 0;
	bool compute;

	vk->vkGetPhysicalDeviceProperties(vk->phys, &p);
	snprintf(vk->info.name, sizeof(vk->info.name), "%s", p.deviceName);
	if (p.apiVersion < VK_API_VERSION_1_2) {
		gpubuf_error_set("Vulkan device %s speaks %u.%u; 1.2 is needed",
				 p.deviceName, VK_API_VERSION_MAJOR(p.apiVersion),
				 VK_API_VERSION_MINOR(p.apiVersion));
		return -ENODEV;
	}
	vk->vkGetPhysicalDeviceQueueFamilyProperties(vk->phys, &n, NULL);
	q = calloc(n ? n : 1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	vk->vkGetPhysicalDeviceQueueFamilyProperties(vk->phys, &n, q);
	compute = vk->queue_family < n &&
		  (q[vk->queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT);
	free(q);
	if (!compute) {
		gpubuf_error_set("queue family %u of %s cannot compute",
				 vk->queue_family, p.deviceName);
		return -EINVAL;
	}
	if (((features & GPUBUF_VK_FEATURE_HOST_IMPORT) &&
	     !vk->vkGetMemoryHostPointerPropertiesEXT) ||
	    ((features & GPUBUF_VK_FEATURE_DMA_BUF_IMPORT) &&
	     !vk->vkGetMemoryFdPropertiesKHR)) {
		gpubuf_error_set("the device was not created with the extensions of the imports it claims (VK_EXT_external_memory_host; VK_KHR_external_memory_fd and VK_EXT_external_memory_dma_buf)");
		return -EINVAL;
	}
	return 0;
}

GPUBUF_EXPORT int gpubuf_vk_wrap(const struct gpubuf_vk_device *d,
				 struct gpubuf_vk **out)
{
	GPUBUF_KEEP_ERRNO;
	PFN_vkGetInstanceProcAddr gipa;
	uint64_t max_flops;
	struct gpubuf_vk *vk;
	int err;

	gpubuf_error_clear();
	if (!out || !gpubuf_vk_device_ok(d))
		return -EINVAL;
	err = gpubuf_vk_max_flops_env(&max_flops);
	if (err)
		return err;
	gipa = (PFN_vkGetInstanceProcAddr)d->get_instance_proc_addr;
	if (!gipa) {
		err = gpubuf_vk_loader(&gipa);
		if (err)
			return err;
	}
	vk = gpubuf_vk_new();
	if (!vk)
		return -ENOMEM;
	vk->max_flops = max_flops;
	vk->instance = (VkInstance)d->instance;
	vk->phys = (VkPhysicalDevice)d->physical_device;
	vk->dev = (VkDevice)d->device;
	vk->queue = (VkQueue)d->queue;
	vk->queue_family = d->queue_family;
	err = gpubuf_vk_resolve_instance(vk, gipa);
	if (!err)
		err = gpubuf_vk_resolve_device(vk);
	if (!err)
		err = gpubuf_vk_check_wrapped(vk, d->features);
	if (!err) {
		/* What the application says it enabled is what is used. */
		vk->info.features = d->features;
		gpubuf_vk_read_properties(vk);
		err = gpubuf_vk_kernels_init(vk);
	}
	if (err) {
		gpubuf_vk_free(vk);
		return err;
	}
	*out = vk;
	return 0;
}

GPUBUF_EXPORT void gpubuf_vk_close(struct gpubuf_vk *vk)
{
	GPUBUF_KEEP_ERRNO;

	if (vk)
		gpubuf_vk_put(vk);
}

GPUBUF_EXPORT int gpubuf_vk_info(struct gpubuf_vk *vk,
				 struct gpubuf_vk_info *info)
{
	GPUBUF_KEEP_ERRNO;

	int err;

	gpubuf_error_clear();
	if (!vk || !info)
		return -EINVAL;
	err = gpubuf_vk_check_process(vk);
	if (err)
		return err;
	*info = vk->info;
	info->validation_errors = atomic_load(&vk->validation_errors);
	return 0;
}

#else /* !GPUBUF_HAVE_VULKAN */

static int gpubuf_no_vulkan(void)
{
	gpubuf_error_set("libgpubuf was built without Vulkan support (no vulkan/vulkan.h at build time)");
	return -EOPNOTSUPP;
}

GPUBUF_EXPORT int gpubuf_vk_open(int index, unsigned int flags,
				 struct gpubuf_vk **vk)
{
	(void)index;
	gpubuf_error_clear();
	if (!vk || (flags & ~GPUBUF_VK_OPEN_VALID_FLAGS))
		return -EINVAL;
	return gpubuf_no_vulkan();
}

GPUBUF_EXPORT int gpubuf_vk_wrap(const struct gpubuf_vk_device *d,
				 struct gpubuf_vk **vk)
{
	gpubuf_error_clear();
	if (!vk || !gpubuf_vk_device_ok(d))
		return -EINVAL;
	return gpubuf_no_vulkan();
}

/* Nothing can have been opened. */
GPUBUF_EXPORT void gpubuf_vk_close(struct gpubuf_vk *vk)
{
	(void)vk;
}

GPUBUF_EXPORT int gpubuf_vk_info(struct gpubuf_vk *vk,
				 struct gpubuf_vk_info *info)
{
	gpubuf_error_clear();
	if (!vk || !info)
		return -EINVAL;
	return gpubuf_no_vulkan();
}

#endif /* GPUBUF_HAVE_VULKAN */
