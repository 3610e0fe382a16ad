# libpng and libjpeg-turbo decode the classification task's images (data/image/). AUTO switches
# them on when CMake's FindPNG and FindJPEG find both (Debian: libpng-dev, libjpeg62-turbo-dev);
# without them everything still builds and read_image throws, saying the libraries were not
# available (the GPU machines have no Debian packages).
set(SONATA_IMAGE AUTO CACHE STRING "Decode PNG/JPEG images with libpng and libjpeg: AUTO, ON or OFF")
set_property(CACHE SONATA_IMAGE PROPERTY STRINGS AUTO ON OFF)
set(SONATA_WITH_IMAGE OFF)
if(NOT SONATA_IMAGE STREQUAL "OFF")
  find_package(PNG QUIET)
  find_package(JPEG QUIET)
  if(PNG_FOUND AND JPEG_FOUND)
    set(SONATA_WITH_IMAGE ON)
  elseif(SONATA_IMAGE STREQUAL "ON")
    message(FATAL_ERROR "SONATA_IMAGE=ON, but libpng or libjpeg is missing "
                        "(Debian: apt-get install libpng-dev libjpeg62-turbo-dev)")
  endif()
endif()
message(STATUS "sonata: IMAGE=${SONATA_WITH_IMAGE} (libpng + libjpeg)")
