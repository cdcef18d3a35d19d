/*
 * Copyright (c) 2026, llmserve developers
 * GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A stand-in for the CUDA runtime library (libcudart) -- tests only, no GPU involved.
 *
 * It exports the runtime calls that roles/iommu_preflight/files/p2p_check.py makes, with the C types
 * of the real runtime (cudaIpcMemHandle_t is a 64-byte struct passed by value), so a ctypes caller
 * that gets the ABI wrong fails here as it would on a GPU. "Device memory" is POSIX shared memory:
 * a buffer exported with cudaIpcGetMemHandle in one process is the very memory another process maps
 * with cudaIpcOpenMemHandle. Configuration (environment, read on every call):
 *
 *   CUDART_STANDIN_GPUS        comma-separated PCI addresses; device N is the N-th (no GPUs when unset)
 *   CUDART_STANDIN_DROP        "src>dst,...": peer/IPC writes issued from device src into memory owned by
 *                              device dst succeed but are not applied (a broken P2P path)
 *   CUDART_STANDIN_OPEN_FAIL   "src>dst,...": cudaIpcOpenMemHandle on device src of memory owned by dst
 *                              fails with cudaErrorPeerAccessUnsupported; cudaDeviceCanAccessPeer says 0
 *   CUDART_STANDIN_HANG        "src>dst,...": such peer/IPC writes never return (a hung P2P path)
 *   CUDART_STANDIN_SHM_PREFIX  name prefix of the shared memory segments (default "cudart-standin")
 *
 * src and dst are device numbers or PCI addresses of CUDART_STANDIN_GPUS. See README.md for the limits.
 */

#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int cudaError_t;
typedef struct cudaIpcMemHandle_st {
    char reserved[64];
} cudaIpcMemHandle_t;

enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorPeerAccessUnsupported = 217,
    cudaErrorInvalidResourceHandle = 400,
};

enum { HostToHost = 0, HostToDevice = 1, DeviceToHost = 2, DeviceToDevice = 3, Default = 4 };

#define MAX_GPUS 16
#define MAX_ALLOCS 64
#define HEADER_SIZE 4096 /* one page before the data, so device pointers stay page aligned */
#define HANDLE_MAGIC 0x31495343u /* "CSI1" little endian */
#define HANDLE_VERSION 1
#define NAME_OFFSET 32
#define NAME_SIZE 32
#define PREFIX_MAX 12

/* Layout of the 64 handle bytes: the name is not at offset 0 and the fixed fields hold zero bytes, so a
 * copy that stops at the first zero byte (or a zeroed struct) cannot pass for a handle. */
struct handle_layout {
    uint32_t magic;      /*  0 */
    uint16_t version;    /*  4: 01 00 */
    uint16_t device;     /*  6: owner device */
    uint64_t size;       /*  8 */
    uint64_t nonce;      /* 16: also in the segment header */
    uint32_t owner_pid;  /* 24 */
    uint32_t zero;       /* 28 */
    char name[NAME_SIZE]; /* 32: shm name, NUL-terminated */
};

/* Start of every segment. */
struct segment_header {
    uint32_t magic;
    uint32_t device;
    uint64_t size;
    uint64_t nonce;
};

struct allocation {
    int used;
    int imported;     /* opened with cudaIpcOpenMemHandle (else allocated here) */
    int device;       /* owner device of the memory */
    char *data;       /* the device pointer handed out */
    size_t size;
    void *map;
    size_t map_size;
    uint64_t nonce;
    char name[NAME_SIZE];
};

static struct allocation allocations[MAX_ALLOCS];
static int current_device = 0;
static unsigned long segment_counter = 0;

_Static_assert(sizeof(cudaIpcMemHandle_t) == 64, "cudaIpcMemHandle_t is 64 bytes");
_Static_assert(sizeof(struct handle_layout) == 64, "handle layout is 64 bytes");

/* ---- configuration ------------------------------------------------------------------------------ */

struct pci_address {
    unsigned domain, bus, device, function;
};

static int parse_pci(const char *text, size_t length, struct pci_address *out)
{
    char buffer[64];
    char tail;
    if (length == 0 || length >= sizeof(buffer))
        return 0;
    memcpy(buffer, text, length);
    buffer[length] = '\0';
    if (sscanf(buffer, "%x:%x:%x.%x%c", &out->domain, &out->bus, &out->device, &out->function, &tail) == 4)
        return strchr(buffer, ':') != strrchr(buffer, ':');
    out->domain = 0; /* bb:dd.f, as cudaDeviceGetByPCIBusId accepts it */
    return sscanf(buffer, "%x:%x.%x%c", &out->bus, &out->device, &out->function, &tail) == 3;
}

static int same_pci(const struct pci_address *a, const struct pci_address *b)
{
    return a->domain == b->domain && a->bus == b->bus && a->device == b->device && a->function == b->function;
}

/* Fills addresses from CUDART_STANDIN_GPUS; returns the number of GPUs, -1 when the variable is malformed. */
static int read_gpus(struct pci_address addresses[MAX_GPUS])
{
    const char *spec = getenv("CUDART_STANDIN_GPUS");
    int count = 0;
    if (spec == NULL)
        return 0;
    while (*spec) {
        const char *end = strchr(spec, ',');
        size_t length = end ? (size_t)(end - spec) : strlen(spec);
        while (length > 0 && isspace((unsigned char)*spec)) {
            spec++;
            length--;
        }
        while (length > 0 && isspace((unsigned char)spec[length - 1]))
            length--;
        if (length > 0) {
            if (count == MAX_GPUS || !parse_pci(spec, length, &addresses[count]))
                return -1;
            count++;
        }
        spec += end ? (size_t)(end - spec) + 1 : strlen(spec);
    }
    return count;
}

static int device_count(void)
{
    struct pci_address addresses[MAX_GPUS];
    int count = read_gpus(addresses);
    return count < 0 ? 0 : count;
}

/* A device number or PCI address of CUDART_STANDIN_GPUS -> device number, -1 when it names none. */
static int resolve_device(const char *text, size_t length)
{
    struct pci_address addresses[MAX_GPUS];
    struct pci_address wanted;
    int count = read_gpus(addresses);
    int index;
    if (count <= 0 || length == 0)
        return -1;
    if (memchr(text, ':', length)) {
        if (!parse_pci(text, length, &wanted))
            return -1;
        for (index = 0; index < count; index++)
            if (same_pci(&addresses[index], &wanted))
                return index;
        return -1;
    }
    index = 0;
    for (size_t i = 0; i < length; i++) {
        if (!isdigit((unsigned char)text[i]) || index > MAX_GPUS)
            return -1;
        index = index * 10 + (text[i] - '0');
    }
    return index < count ? index : -1;
}

/* True when the "src>dst,..." list in the environment variable holds the pair. */
static int pair_listed(const char *variable, int src, int dst)
{
    const char *spec = getenv(variable);
    if (spec == NULL)
        return 0;
    while (*spec) {
        const char *end = strchr(spec, ',');
        size_t length = end ? (size_t)(end - spec) : strlen(spec);
        const char *arrow = memchr(spec, '>', length);
        if (arrow != NULL && resolve_device(spec, (size_t)(arrow - spec)) == src &&
            resolve_device(arrow + 1, length - (size_t)(arrow - spec) - 1) == dst)
            return 1;
        spec += end ? length + 1 : length;
    }
    return 0;
}

/* ---- allocation table --------------------------------------------------------------------------- */

/* The allocation holding [pointer, pointer + count), NULL when the range is not device memory. */
static struct allocation *find_range(const void *pointer, size_t count)
{
    const char *p = pointer;
    for (int i = 0; i < MAX_ALLOCS; i++) {
        struct allocation *a = &allocations[i];
        if (a->used && p >= a->data && p < a->data + a->size && count <= (size_t)(a->data + a->size - p))
            return a;
    }
    return NULL;
}

static int is_device_pointer(const void *pointer)
{
    const char *p = pointer;
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (allocations[i].used && p >= allocations[i].data && p < allocations[i].data + allocations[i].size)
            return 1;
    return 0;
}

static struct allocation *free_slot(void)
{
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (!allocations[i].used)
            return &allocations[i];
    return NULL;
}

static uint64_t make_nonce(void)
{
    uint64_t nonce = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &nonce, sizeof(nonce)) != (ssize_t)sizeof(nonce))
            nonce = 0;
        close(fd);
    }
    if (nonce == 0) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        nonce = ((uint64_t)now.tv_nsec << 20) ^ (uint64_t)now.tv_sec ^ ((uint64_t)getpid() << 40) ^ 1u;
    }
    return nonce;
}

static void segment_name(char name[NAME_SIZE])
{
    const char *prefix = getenv("CUDART_STANDIN_SHM_PREFIX");
    char clean[PREFIX_MAX + 1];
    size_t length = 0;
    if (prefix == NULL || *prefix == '\0')
        prefix = "cudart-standin";
    for (; *prefix && length < PREFIX_MAX; prefix++)
        if (isalnum((unsigned char)*prefix) || *prefix == '-' || *prefix == '_')
            clean[length++] = *prefix;
    clean[length] = '\0';
    snprintf(name, NAME_SIZE, "/%s-%x-%lx", clean, (unsigned)getpid(), ++segment_counter);
}

/* A write of count bytes at pointer, issued from the current device. Returns 1 to apply it, 0 to drop it;
 * never returns for a hung pair. */
static int write_applies(const struct allocation *target)
{
    int peer_write = target->imported || target->device != current_device;
    if (!peer_write)
        return 1;
    if (pair_listed("CUDART_STANDIN_HANG", current_device, target->device))
        for (;;)
            pause();
    return !pair_listed("CUDART_STANDIN_DROP", current_device, target->device);
}

/* ---- the runtime API ---------------------------------------------------------------------------- */

EXPORT const char *cudaGetErrorString(cudaError_t error)
{
    switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorPeerAccessUnsupported: return "peer access is not supported between these two devices";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    default: return "unrecognized error code";
    }
}

EXPORT cudaError_t cudaRuntimeGetVersion(int *version)
{
    if (version == NULL)
        return cudaErrorInvalidValue;
    *version = 13000;
    return cudaSuccess;
}

EXPORT cudaError_t cudaDriverGetVersion(int *version)
{
    if (version == NULL)
        return cudaErrorInvalidValue;
    *version = 13000;
    return cudaSuccess;
}

EXPORT cudaError_t cudaGetDeviceCount(int *count)
{
    struct pci_address addresses[MAX_GPUS];
    int found;
    if (count == NULL)
        return cudaErrorInvalidValue;
    found = read_gpus(addresses);
    *count = found < 0 ? 0 : found;
    if (found < 0)
        return cudaErrorInitializationError;
    return found == 0 ? cudaErrorNoDevice : cudaSuccess;
}

EXPORT cudaError_t cudaDeviceGetByPCIBusId(int *device, const char *pci_bus_id)
{
    int index;
    if (device == NULL || pci_bus_id == NULL)
        return cudaErrorInvalidValue;
    if (device_count() == 0)
        return cudaErrorNoDevice;
    if (strchr(pci_bus_id, '>') || strchr(pci_bus_id, ',') || strchr(pci_bus_id, ':') == NULL)
        return cudaErrorInvalidValue;
    index = resolve_device(pci_bus_id, strlen(pci_bus_id));
    if (index < 0)
        return cudaErrorInvalidDevice;
    *device = index;
    return cudaSuccess;
}

EXPORT cudaError_t cudaSetDevice(int device)
{
    int count = device_count();
    if (count == 0)
        return cudaErrorNoDevice;
    if (device < 0 || device >= count)
        return cudaErrorInvalidDevice;
    current_device = device;
    return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceCanAccessPeer(int *can_access, int device, int peer)
{
    int count = device_count();
    if (can_access == NULL)
        return cudaErrorInvalidValue;
    if (device < 0 || device >= count || peer < 0 || peer >= count)
        return cudaErrorInvalidDevice;
    *can_access = device != peer && !pair_listed("CUDART_STANDIN_OPEN_FAIL", device, peer);
    return cudaSuccess;
}

EXPORT cudaError_t cudaMalloc(void **pointer, size_t size)
{
    struct allocation *slot;
    struct segment_header *header;
    int fd, error;
    if (pointer == NULL)
        return cudaErrorInvalidValue;
    if (device_count() == 0)
        return cudaErrorNoDevice;
    if (size == 0) {
        *pointer = NULL;
        return cudaSuccess;
    }
    if (size > ((size_t)1 << 40) || (slot = free_slot()) == NULL)
        return cudaErrorMemoryAllocation;
    memset(slot, 0, sizeof(*slot));
    segment_name(slot->name);
    fd = shm_open(slot->name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return cudaErrorMemoryAllocation;
    slot->map_size = HEADER_SIZE + size;
    error = posix_fallocate(fd, 0, (off_t)slot->map_size); /* reserve it now: no SIGBUS on a full /dev/shm */
    slot->map = error ? MAP_FAILED : mmap(NULL, slot->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (slot->map == MAP_FAILED) {
        shm_unlink(slot->name);
        return cudaErrorMemoryAllocation;
    }
    slot->nonce = make_nonce();
    header = slot->map;
    header->magic = HANDLE_MAGIC;
    header->device = (uint32_t)current_device;
    header->size = size;
    header->nonce = slot->nonce;
    slot->data = (char *)slot->map + HEADER_SIZE;
    slot->size = size;
    slot->device = current_device;
    slot->imported = 0;
    slot->used = 1;
    *pointer = slot->data;
    return cudaSuccess;
}

EXPORT cudaError_t cudaFree(void *pointer)
{
    struct allocation *a;
    if (pointer == NULL)
        return cudaSuccess;
    a = find_range(pointer, 0);
    if (a == NULL || a->imported || a->data != pointer)
        return cudaErrorInvalidValue;
    munmap(a->map, a->map_size);
    shm_unlink(a->name);
    memset(a, 0, sizeof(*a));
    return cudaSuccess;
}

EXPORT cudaError_t cudaMemset(void *pointer, int value, size_t count)
{
    struct allocation *a = find_range(pointer, count);
    if (a == NULL)
        return cudaErrorInvalidValue;
    if (write_applies(a))
        memset(pointer, value, count);
    return cudaSuccess;
}

EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, int kind)
{
    struct allocation *target = NULL;
    int dst_device = is_device_pointer(dst);
    int src_device = is_device_pointer(src);
    if (kind == Default) {
        kind = src_device ? (dst_device ? DeviceToDevice : DeviceToHost) : (dst_device ? HostToDevice : HostToHost);
    } else if (kind < HostToHost || kind > DeviceToDevice) {
        return cudaErrorInvalidMemcpyDirection;
    }
    if (count == 0)
        return cudaSuccess;
    if (kind == HostToDevice || kind == DeviceToDevice) {
        if ((target = find_range(dst, count)) == NULL)
            return cudaErrorInvalidValue;
    } else if (dst == NULL || dst_device) {
        return cudaErrorInvalidValue;
    }
    if (kind == DeviceToHost || kind == DeviceToDevice) {
        if (find_range(src, count) == NULL)
            return cudaErrorInvalidValue;
    } else if (src == NULL || src_device) {
        return cudaErrorInvalidValue;
    }
    if (target == NULL || write_applies(target))
        memmove(dst, src, count);
    return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceSynchronize(void)
{
    return device_count() == 0 ? cudaErrorNoDevice : cudaSuccess;
}

EXPORT cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *pointer)
{
    struct handle_layout layout;
    struct allocation *a;
    if (handle == NULL)
        return cudaErrorInvalidValue;
    a = find_range(pointer, 0);
    if (a == NULL || a->imported || a->data != pointer)
        return cudaErrorInvalidValue;
    memset(&layout, 0, sizeof(layout));
    layout.magic = HANDLE_MAGIC;
    layout.version = HANDLE_VERSION;
    layout.device = (uint16_t)a->device;
    layout.size = a->size;
    layout.nonce = a->nonce;
    layout.owner_pid = (uint32_t)getpid();
    memcpy(layout.name, a->name, NAME_SIZE);
    memcpy(handle->reserved, &layout, sizeof(layout));
    return cudaSuccess;
}

EXPORT cudaError_t cudaIpcOpenMemHandle(void **pointer, cudaIpcMemHandle_t handle, unsigned int flags)
{
    struct handle_layout layout;
    struct allocation *slot;
    struct segment_header *header;
    struct stat info;
    void *map;
    int fd;
    if (pointer == NULL || flags > 1)
        return cudaErrorInvalidValue;
    memcpy(&layout, handle.reserved, sizeof(layout));
    if (layout.magic != HANDLE_MAGIC || layout.version != HANDLE_VERSION || layout.size == 0 || layout.nonce == 0 ||
        layout.zero != 0 || layout.name[0] != '/' || memchr(layout.name, '\0', NAME_SIZE) == NULL ||
        (int)layout.device >= device_count())
        return cudaErrorInvalidValue;
    if (layout.owner_pid == (uint32_t)getpid()) /* the real runtime refuses handles of its own process */
        return cudaErrorInvalidValue;
    if (pair_listed("CUDART_STANDIN_OPEN_FAIL", current_device, layout.device))
        return cudaErrorPeerAccessUnsupported;
    if ((slot = free_slot()) == NULL)
        return cudaErrorMemoryAllocation;
    fd = shm_open(layout.name, O_RDWR, 0);
    if (fd < 0)
        return cudaErrorInvalidValue; /* no such memory (freed, or never exported) */
    if (fstat(fd, &info) != 0 || (uint64_t)info.st_size != HEADER_SIZE + layout.size) {
        close(fd);
        return cudaErrorInvalidValue;
    }
    map = mmap(NULL, HEADER_SIZE + layout.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return cudaErrorMemoryAllocation;
    header = map;
    if (header->magic != HANDLE_MAGIC || header->nonce != layout.nonce || header->size != layout.size ||
        header->device != layout.device) {
        munmap(map, HEADER_SIZE + layout.size);
        return cudaErrorInvalidValue;
    }
    memset(slot, 0, sizeof(*slot));
    slot->used = 1;
    slot->imported = 1;
    slot->device = layout.device;
    slot->map = map;
    slot->map_size = HEADER_SIZE + layout.size;
    slot->data = (char *)map + HEADER_SIZE;
    slot->size = layout.size;
    slot->nonce = layout.nonce;
    memcpy(slot->name, layout.name, NAME_SIZE);
    *pointer = slot->data;
    return cudaSuccess;
}

EXPORT cudaError_t cudaIpcCloseMemHandle(void *pointer)
{
    struct allocation *a = find_range(pointer, 0);
    if (a == NULL || !a->imported || a->data != pointer)
        return cudaErrorInvalidResourceHandle;
    munmap(a->map, a->map_size);
    memset(a, 0, sizeof(*a));
    return cudaSuccess;
}
