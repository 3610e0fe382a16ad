#pragma once
// The emulated devices: how many (env SONATA_EMU_DEVICES, default 8), the properties each
// reports (an H100 SXM), the device each host thread has selected, and each device's sticky
// error (a fault inside work poisons its device: every later call on it returns the error).
#include <string>

#include "driver_types.h"

namespace sonata::emu {

int device_count();
bool valid_device(int device);
const cudaDeviceProp& device_properties(int device);

// The value cudaDeviceGetAttribute reports; false for an attribute the emulator lacks.
bool device_attribute(int device, cudaDeviceAttr attr, int* value);

// Makes `device` the calling thread's current device (cudaSetDevice).
void select_device(int device);

// The calling thread's device without the selection rule (0 until it selects one).
int thread_device();

// The device's sticky error (cudaSuccess while it is healthy).
cudaError_t sticky_error(int device);

// Poisons `device` with `error` unless it already carries one; prints `message` once.
void set_sticky_error(int device, cudaError_t error, const std::string& message);

// cudaDeviceReset: the device is healthy again.
void clear_sticky_error(int device);

// Testing: forgets every thread's and the process's device selection (the selection rule's
// memory), so that tests of the rule do not leak into one another.
void forget_device_selections();

}  // namespace sonata::emu
