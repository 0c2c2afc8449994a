/* What leaves the OpenCL backend's folder: its registry entry (registry.h).
 * Device numbers are the backend's: every device of every platform the ICD
 * loader lists, in its order (opencl0, opencl1 ...). */
#ifndef HEARTH_OPENCL_BACKEND_H
#define HEARTH_OPENCL_BACKEND_H

#include "backend/registry.h"

/* device.c; instances from backend.c */
extern const hl_backend_reg hl_opencl_backend;

#endif
