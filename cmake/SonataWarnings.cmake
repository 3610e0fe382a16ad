# One warning policy for every target: -Wall -Wextra, and the build is kept free of them.
add_library(sonata_warnings INTERFACE)
target_compile_options(sonata_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>)
