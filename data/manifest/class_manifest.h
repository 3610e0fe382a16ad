#pragma once
// Audio-classification datasets, as torchaudio / NeMo / torchvision users lay them out:
//   .tsv            path<TAB>label
//   .jsonl / .json  {"audio_filepath" (or "path"): ..., "label": ...} per line; a label may
//                   be a string or an integer (kept as its decimal text); other keys ignored
//   a folder tree   ROOT/<class>/**/<audio files> (GTZAN, torchvision's ImageFolder):
//                   classes are the sub-folders sorted by name, files found recursively
//                   (symbolic links followed) and ordered as torchvision orders them
// Relative paths in a manifest are taken from its folder. Errors are one sentence naming the
// manifest (or folder) and the line (see manifest_file.h).
#include <string>
#include <vector>

#include "data/manifest/label_map.h"
#include "data/manifest/manifest_file.h"

namespace sonata {

struct ClassEntry {
  std::string path;
  std::string label;
};

std::vector<ClassEntry> read_class_manifest(const std::string& path,
                                            const ManifestOptions& options = {});

// The folder-per-class tree. Files count as audio by extension, case-insensitively: .wav,
// .flac, .ogg, .oga, .opus, .mp3, .au, .snd, .aif, .aiff, .aifc; and as images: .png, .jpg,
// .jpeg (the classification task reads those as images, data/image/image_file.h). Unlike
// torchvision, folders and files whose names start with '.' (.ipynb_checkpoints, ._x.wav) are
// skipped. Throws naming the root when it is not a folder or has no class folder, and naming the
// classes that hold no audio or image file.
std::vector<ClassEntry> scan_class_folders(const std::string& root);

// The sorted unique labels of `entries` (LabelMap::from_labels).
LabelMap label_map_of(const std::vector<ClassEntry>& entries);

}  // namespace sonata
