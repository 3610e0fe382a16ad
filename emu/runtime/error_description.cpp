// cudaGetErrorString's texts for the errors the emulator returns (the real runtime's
// wording); any other code is described by its name.
#include "emu/runtime/error_names.h"

namespace sonata::emu {

const char* error_description(int error) {
  switch (error) {
    case 0:
      return "no error";
    case 1:
      return "invalid argument";
    case 2:
      return "out of memory";
    case 3:
      return "initialization error";
    case 4:
      return "driver shutting down";
    case 9:
      return "invalid configuration argument";
    case 17:
      return "invalid device pointer";
    case 21:
      return "invalid copy direction for memcpy";
    case 98:
      return "invalid device function";
    case 100:
      return "no CUDA-capable device is detected";
    case 101:
      return "invalid device ordinal";
    case 201:
      return "invalid device context";
    case 209:
      return "no kernel image is available for execution on the device";
    case 400:
      return "invalid resource handle";
    case 600:
      return "device not ready";
    case 700:
      return "an illegal memory access was encountered";
    case 701:
      return "too many resources requested for launch";
    case 710:
      return "device-side assert triggered";
    case 715:
      return "an illegal instruction was encountered";
    case 716:
      return "misaligned address";
    case 719:
      return "unspecified launch failure";
    case 800:
      return "operation not permitted";
    case 801:
      return "operation not supported";
    case 909:
      return "the operation timed out";
    case 999:
      return "unknown error";
    default: {
      const char* name = error_name(error);
      return name ? name : "unrecognized error code";
    }
  }
}

}  // namespace sonata::emu
