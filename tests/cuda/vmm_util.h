/* vmm_util.h - the two steps every virtual memory test takes, for
   tests/cuda/test_vmm.c and tests/preload/vmm.c: the properties of a pinned
   physical allocation at a location, and read-write access for a device
   to a mapped range. Include <cuda.h> first. */
#ifndef VMM_UTIL_H
#define VMM_UTIL_H
#include <string.h>

static CUmemAllocationProp vmm_prop(int type, int id) {
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = (CUmemLocationType)type;
    p.location.id = id;
    return p;
}

static CUresult vmm_set_access(CUdeviceptr va, size_t n, int dev) {
    CUmemAccessDesc a;
    memset(&a, 0, sizeof a);
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = dev;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return cuMemSetAccess(va, n, &a, 1);
}
#endif
