#pragma once
// A training manifest edited in place between a stop and its resume: each checkpoint records
// what its --train file held (its path, size and CRC-32C). A resume with the same --train
// path whose file now differs is refused in the middle of an epoch (the rest of the epoch's
// batches were drawn from the old items) and said at an epoch's start, where another
// training set may come in (as another --train file may). Checkpoints written before the
// record resume as before; a --train folder (classification) is not fingerprinted.
#include <map>
#include <string>

namespace sonata {

// The checkpoint texts that hold the record.
inline constexpr char kTrainManifestKey[] = "train_manifest.fingerprint";
inline constexpr char kTrainManifestPathKey[] = "train_manifest.path";

// "<size> bytes, CRC-32C <8 hex digits>" of a regular file's bytes; "" for anything else or a
// file that cannot be read.
std::string manifest_fingerprint(const std::string& path);

// For a resume from `checkpoint` (a step folder) whose `texts` record --train: "" when they
// record another path, nothing, or what `manifest` holds `now`; else a notice naming the
// change when the resume starts an epoch, and throws, in one sentence naming --train, the
// checkpoint and how to go on, when it is `mid_epoch`.
std::string manifest_change(const std::map<std::string, std::string>& texts,
                            const std::string& manifest, const std::string& now,
                            const std::string& checkpoint, bool mid_epoch);

}  // namespace sonata
