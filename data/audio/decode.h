#pragma once
// Audio files to mono float samples, through libsndfile: WAV (PCM, float, and the rest of
// libsndfile's RIFF family), FLAC, Ogg/Vorbis, Opus, MP3 and the other formats the installed
// libsndfile was built with. The container is recognised from the bytes, not the name.
//
// Channels are downmixed by their mean. Integer PCM is scaled as torchaudio scales it, into
// [-1, 1): x / 32768 for 16-bit, x / 2^(bits-1) in general (libsndfile's normalised float
// reads); float files are returned as stored.
//
// Each failure throws sonata::Error with one sentence naming the file and the reason: the
// file is missing or unreadable, its format is not one libsndfile reads, its stream is
// corrupt or truncated (a data chunk shorter than its header says, a FLAC/Opus stream that
// ends before its declared length), it holds no samples, or it holds a NaN or infinite
// sample. MP3 declares no exact length, so a truncated MP3 decodes to what is there.
//
// In a build without libsndfile (SONATA_SNDFILE=OFF, or not found) every call throws saying so.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sonata {

struct Audio {
  std::vector<float> samples;  // mono
  int sample_rate = 0;
  int64_t source_channels = 0;  // channels in the file, before the downmix
};

Audio decode_audio(const std::string& path);
// The same from an encoded file held in memory; `name` stands for it in errors.
Audio decode_audio_memory(const void* bytes, size_t size, const std::string& name);

// The seconds of audio a file's header declares, read without decoding it, so that a clip too
// long to load can be left out before its samples are allocated; 0 when the header declares
// no exact length (MP3, an Ogg stream without an end mark) or the file does not open (then
// decode_audio says why).
double declared_seconds(const std::string& path);

// Whether this build can decode (it was built with libsndfile).
bool audio_decoding_available();

}  // namespace sonata
