#include "data/audio/decode.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <new>
#include <sstream>

#include "base/error.h"

#if SONATA_WITH_SNDFILE
#include <sndfile.h>
#endif

namespace sonata {

#if SONATA_WITH_SNDFILE
namespace {

constexpr sf_count_t kChunkFrames = 1 << 16;

struct CloseFile {
  void operator()(SNDFILE* file) const { sf_close(file); }
};
using File = std::unique_ptr<SNDFILE, CloseFile>;

// sf_open_virtual's view of a byte buffer.
struct Memory {
  const unsigned char* bytes;
  sf_count_t size, position;
};
sf_count_t memory_length(void* user) {
  return static_cast<Memory*>(user)->size;
}
sf_count_t memory_seek(sf_count_t offset, int whence, void* user) {
  Memory& m = *static_cast<Memory*>(user);
  const sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m.position : m.size;
  m.position = std::clamp<sf_count_t>(base + offset, 0, m.size);
  return m.position;
}
sf_count_t memory_read(void* out, sf_count_t count, void* user) {
  Memory& m = *static_cast<Memory*>(user);
  const sf_count_t n = std::clamp<sf_count_t>(m.size - m.position, 0, count);
  std::copy(m.bytes + m.position, m.bytes + m.position + n, static_cast<unsigned char*>(out));
  m.position += n;
  return n;
}
sf_count_t memory_write(const void*, sf_count_t, void*) {
  return 0;
}
sf_count_t memory_tell(void* user) {
  return static_cast<Memory*>(user)->position;
}

std::string quoted(const std::string& name) {
  return str("audio file '", name, "'");
}

[[noreturn]] void open_failed(const std::string& name) {
  const int code = sf_error(nullptr);
  const std::string reason = sf_strerror(nullptr);
  if (code == SF_ERR_UNRECOGNISED_FORMAT)
    throw Error(str(quoted(name),
                    " is not in a format libsndfile recognises (it reads WAV, FLAC, "
                    "Ogg/Vorbis, Opus, MP3 and others)"));
  if (code == SF_ERR_UNSUPPORTED_ENCODING)
    throw Error(
        str(quoted(name), " uses an encoding this libsndfile cannot decode (", reason, ")"));
  if (code == SF_ERR_SYSTEM) throw Error(str(quoted(name), " could not be read (", reason, ")"));
  throw Error(
      str(quoted(name), " is corrupt or truncated: libsndfile cannot open it (", reason, ")"));
}

// The size a writer that cannot seek back (a recorder streaming, sox or ffmpeg writing to a
// pipe) leaves in a WAV's RIFF and data chunk headers: "to the end of the file".
constexpr char kStreamingSize[] = "4294967295";  // 0xFFFFFFFF

// libsndfile shortens a RIFF/AIFF data chunk that claims more bytes than the file holds, and
// says so in its log as "data : 96000 (should be 49956)"; the samples it then returns are
// all there is, so the file is truncated, unless the claim was the streaming size.
bool data_chunk_truncated(SNDFILE* file) {
  char log[16384] = {};
  sf_command(file, SFC_GET_LOG_INFO, log, sizeof(log));
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    if ((line.starts_with("data") || line.starts_with("SSND")) &&
        line.find("(should be") != std::string::npos &&
        line.find(std::string(": ") + kStreamingSize + " ") == std::string::npos)
      return true;
  }
  return false;
}

Audio read_all(SNDFILE* file, const SF_INFO& info, const std::string& name) {
  SONATA_CHECK(info.channels >= 1 && info.samplerate > 0, quoted(name), " declares ", info.channels,
               " channels at ", info.samplerate, " Hz, which cannot be decoded");
  SONATA_CHECK(info.frames != 0, quoted(name), " holds no audio samples (zero-length audio)");
  // Integers to [-1, 1) by 1 / 2^(bits - 1), as torchaudio; libsndfile's default, made explicit.
  sf_command(file, SFC_SET_NORM_FLOAT, nullptr, SF_TRUE);

  Audio audio;
  audio.sample_rate = info.samplerate;
  audio.source_channels = info.channels;
  const int64_t channels = info.channels;
  // Ogg streams without an end mark report SF_COUNT_MAX frames: the length is unknown.
  const bool length_known = info.frames > 0 && info.frames != SF_COUNT_MAX;
  if (length_known) audio.samples.reserve(size_t(info.frames));
  std::vector<float> chunk(size_t(kChunkFrames * channels));
  for (;;) {
    const sf_count_t got = sf_readf_float(file, chunk.data(), kChunkFrames);
    if (got <= 0) break;
    const int64_t done = int64_t(audio.samples.size());
    for (int64_t i = 0; i < got * channels; ++i) {
      if (!std::isfinite(chunk[size_t(i)]))
        throw Error(str(quoted(name), " holds a non-finite sample (", chunk[size_t(i)],
                        ") at frame ", done + i / channels, ", channel ", i % channels));
    }
    if (channels == 1) {
      audio.samples.insert(audio.samples.end(), chunk.begin(), chunk.begin() + got);
    } else {
      for (sf_count_t f = 0; f < got; ++f) {
        float sum = 0;
        for (int64_t c = 0; c < channels; ++c) sum += chunk[size_t(f * channels + c)];
        audio.samples.push_back(sum / float(channels));
      }
    }
  }
  const int64_t read = int64_t(audio.samples.size());
  if (sf_error(file) != SF_ERR_NO_ERROR)
    throw Error(str(quoted(name), " is corrupt or truncated: decoding failed after ", read,
                    " frames (", sf_strerror(file), ")"));
  const bool exact_length = (info.format & SF_FORMAT_TYPEMASK) != SF_FORMAT_MPEG;
  if (length_known && exact_length && read < info.frames)
    throw Error(str(quoted(name), " is truncated or corrupt: its stream ends after ", read,
                    " of the ", info.frames, " frames its header declares"));
  if (data_chunk_truncated(file))
    throw Error(str(quoted(name),
                    " is truncated: its data chunk is shorter than its header "
                    "declares (",
                    read, " frames remain)"));
  SONATA_CHECK(read > 0, quoted(name),
               length_known ? " holds no audio samples (zero-length audio)"
                            : " is corrupt or truncated: no audio could be decoded from it");
  return audio;
}

}  // namespace

Audio decode_audio(const std::string& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  SONATA_CHECK(std::filesystem::exists(status), quoted(path), " does not exist");
  SONATA_CHECK(!std::filesystem::is_directory(status), quoted(path), " is a directory");
  SONATA_CHECK(std::filesystem::file_size(path, error) != 0 || error, quoted(path),
               " is empty (0 bytes)");
  SF_INFO info{};
  const File file(sf_open(path.c_str(), SFM_READ, &info));
  if (!file) open_failed(path);
  try {
    return read_all(file.get(), info, path);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& error) {
    // std::bad_alloc, std::length_error: a header declaring more frames than memory holds
    // (the samples are reserved up front).
    throw Error(str(quoted(path), " declares ", info.frames, " frames at ", info.samplerate,
                    " Hz: out of memory decoding it (", error.what(), ")"));
  }
}

double declared_seconds(const std::string& path) {
  SF_INFO info{};
  const File file(sf_open(path.c_str(), SFM_READ, &info));
  const bool exact = file && info.samplerate > 0 && info.frames > 0 &&
                     info.frames != SF_COUNT_MAX &&
                     (info.format & SF_FORMAT_TYPEMASK) != SF_FORMAT_MPEG;
  return exact ? double(info.frames) / double(info.samplerate) : 0.0;
}

Audio decode_audio_memory(const void* bytes, size_t size, const std::string& name) {
  SONATA_CHECK(size > 0, quoted(name), " is empty (0 bytes)");
  Memory memory{static_cast<const unsigned char*>(bytes), sf_count_t(size), 0};
  SF_VIRTUAL_IO io{memory_length, memory_seek, memory_read, memory_write, memory_tell};
  SF_INFO info{};
  const File file(sf_open_virtual(&io, SFM_READ, &info, &memory));
  if (!file) open_failed(name);
  return read_all(file.get(), info, name);
}

bool audio_decoding_available() {
  return true;
}

#else  // no libsndfile

namespace {
[[noreturn]] void unavailable(const std::string& name) {
  throw Error(str("cannot decode audio file '", name,
                  "': sonata was built without libsndfile (it was not found at configure time, "
                  "or SONATA_SNDFILE=OFF; install libsndfile1-dev and reconfigure)"));
}
}  // namespace

Audio decode_audio(const std::string& path) {
  unavailable(path);
}
Audio decode_audio_memory(const void*, size_t, const std::string& name) {
  unavailable(name);
}
double declared_seconds(const std::string&) {
  return 0;
}
bool audio_decoding_available() {
  return false;
}

#endif

}  // namespace sonata
