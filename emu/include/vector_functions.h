#pragma once
// vector_functions.h: the make_* helpers live in vector_types.h in the emulator.
#include "vector_types.h"
