#pragma once
#include <mpi.h>

#include <string>

#include "base/error.h"

namespace sonata {
inline std::string describe_mpi(int status) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(status, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(status);
  return std::string(text, length);
}
}  // namespace sonata

#define MPI_CHECK(call) SONATA_LIB_CHECK("MPI", call, MPI_SUCCESS, ::sonata::describe_mpi)
