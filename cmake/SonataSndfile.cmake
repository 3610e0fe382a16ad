# libsndfile decodes audio (data/audio/decode.cpp): WAV, FLAC, Ogg/Vorbis, Opus, MP3, as the
# installed library was built. AUTO switches it on when pkg-config finds `sndfile`; without it
# everything still builds and decode_audio throws, saying libsndfile was not available.
set(SONATA_SNDFILE AUTO CACHE STRING "Decode audio with libsndfile: AUTO, ON or OFF")
set_property(CACHE SONATA_SNDFILE PROPERTY STRINGS AUTO ON OFF)
set(SONATA_WITH_SNDFILE OFF)
if(NOT SONATA_SNDFILE STREQUAL "OFF")
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(SNDFILE QUIET IMPORTED_TARGET sndfile)
  endif()
  if(SNDFILE_FOUND)
    set(SONATA_WITH_SNDFILE ON)
  elseif(SONATA_SNDFILE STREQUAL "ON")
    message(FATAL_ERROR "SONATA_SNDFILE=ON, but pkg-config finds no sndfile "
                        "(Debian: apt-get install libsndfile1-dev)")
  endif()
endif()
