#pragma once
// Names and descriptions of the runtime's error codes, as cudaGetErrorName and
// cudaGetErrorString give them.

namespace sonata::emu {

// "cudaErrorNotReady" for 600; nullptr for a value that is no error code.
const char* error_name(int error);

// The runtime's description of an error ("device not ready"), or its name where the
// emulator has no description for it.
const char* error_description(int error);

}  // namespace sonata::emu
