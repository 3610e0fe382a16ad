#pragma once
// Speech-recognition manifests, as NeMo and torchaudio recipes write them:
//   .tsv            path<TAB>transcript
//   .jsonl / .json  {"audio_filepath": ..., "text": ..., "duration": ...} per line (NeMo);
//                   duration is optional and other keys (offset, lang, ...) are ignored
// Relative audio paths are taken from the manifest's folder. Transcripts are kept as written:
// normalise them (data/text/normalise.h) before encoding. Errors are one sentence naming
// the manifest and the line (see manifest_file.h).
#include <string>
#include <vector>

#include "data/manifest/manifest_file.h"

namespace sonata {

struct AsrEntry {
  std::string path;        // resolved: absolute, or relative to the working folder
  std::string transcript;  // may be empty (silence clips)
  double duration = -1;    // seconds; -1 when the manifest does not say
};

std::vector<AsrEntry> read_asr_manifest(const std::string& path,
                                        const ManifestOptions& options = {});

}  // namespace sonata
