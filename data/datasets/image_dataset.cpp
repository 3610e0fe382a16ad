#include "data/datasets/image_dataset.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "base/error.h"
#include "data/audio/decode.h"
#include "data/audio/resample.h"
#include "data/augment/augment_key.h"
#include "data/image/image_file.h"
#include "data/image/image_resize.h"
#include "engine/ops.h"

namespace sonata {
namespace {

constexpr double kTopDb = 80.0;

// Refuses a split of both audio and image files, and options that do not fit image files.
void check_image_split(const std::string& name, const std::string& manifest, int64_t image_files,
                       int64_t entries, const ImageSplitOptions& options) {
  SONATA_CHECK(image_files == 0 || image_files == entries, "--", name, " ", manifest, " mixes ",
               image_files, " image files with ", entries - image_files,
               " audio files; one split holds one kind");
  if (image_files == 0) return;
  SONATA_CHECK(options.jitter.brightness == 0 && options.jitter.contrast == 0,
               "--brightness and --contrast apply to spectrogram images of audio, not to the "
               "image files of --",
               name, " ", manifest);
  check_image_normalize(options.normalize, options.channels, "--image-mean / --image-std");
}

}  // namespace

Tensor spectrogram_image(std::span<const float> slice, const FeatureExtractor& extractor,
                         int64_t width) {
  const Tensor mel = extractor.log_mel(slice);  // [frames, H] in dB, floored at max - 80
  const int64_t frames = mel.size(0), height = mel.size(1);
  const float* db = mel.data<float>();
  const float peak = *std::max_element(db, db + mel.numel());
  Tensor image = empty({height, width});
  float* out = image.data<float>();
  // Linear resize along time with half-pixel centres (align_corners = False).
  const double scale = double(frames) / double(width);
  for (int64_t x = 0; x < width; ++x) {
    const double source = std::clamp((double(x) + 0.5) * scale - 0.5, 0.0, double(frames - 1));
    const int64_t left = int64_t(source);
    const int64_t right = std::min(left + 1, frames - 1);
    const double t = source - double(left);
    for (int64_t y = 0; y < height; ++y) {
      const double value = (1 - t) * db[left * height + y] + t * db[right * height + y];
      // Top row is the highest band, as an image of the spectrogram is drawn.
      const double unit = std::clamp((value - (peak - kTopDb)) / kTopDb, 0.0, 1.0);
      out[(height - 1 - y) * width + x] = float((unit - 0.5) / 0.5);
    }
  }
  return image;
}

Tensor cqt_image(std::span<const float> slice, const ConstantQ& cqt, int64_t height,
                 int64_t width) {
  const Tensor db = cqt.db(slice);  // [bins, frames], in [-top_db, 0]
  const int64_t bins = db.size(0), frames = db.size(1);
  const double top_db = cqt.config().top_db > 0 ? cqt.config().top_db : kTopDb;
  Tensor flipped = empty({1, bins, frames});
  const float* in = db.data<float>();
  float* out = flipped.data<float>();
  for (int64_t k = 0; k < bins; ++k)
    for (int64_t t = 0; t < frames; ++t)
      out[(bins - 1 - k) * frames + t] =
          float(std::clamp((double(in[k * frames + t]) + top_db) / top_db, 0.0, 1.0));
  Tensor image = resize_bilinear(flipped, height, width);
  normalize_image(image, {{0.5}, {0.5}});
  return image.view({height, width});
}

Tensor image_file_item(const std::string& path, int64_t channels, int64_t height, int64_t width,
                       const ImageNormalize& normalize, int64_t max_pixels) {
  Tensor image = resize_bilinear(read_image(path, channels, max_pixels), height, width);
  normalize_image(image, normalize);
  return image;
}

std::vector<ClassEntry> class_entries(const std::string& path, const InputPolicy& policy) {
  return std::filesystem::is_directory(path) ? scan_class_folders(path)
                                             : read_class_manifest(path, manifest_options(policy));
}

ImageSplit load_image_split(const std::string& name, const std::string& manifest,
                            const LabelMap& label_map, const std::string& labels_source,
                            const ImageSplitOptions& options, int64_t workers,
                            const InputPolicy& policy) {
  const std::vector<ClassEntry> entries = class_entries(manifest, policy);
  SONATA_CHECK(!entries.empty(), "--", name, " ", manifest, " lists no tracks");
  // A label outside the map is a mistake in the manifests, not a bad track: it always stops.
  std::vector<int64_t> labels;
  for (const ClassEntry& entry : entries) {
    const auto label = label_map.find(entry.label);
    SONATA_CHECK(label.has_value(), manifest, ": label '", entry.label, "' of ", entry.path,
                 " is not among the ", label_map.size(), " labels of ", labels_source);
    labels.push_back(*label);
  }
  const int64_t rate = options.sample_rate;
  const int64_t slice = int64_t(std::llround(options.slice_seconds * double(rate)));
  const int64_t image_files = std::count_if(
      entries.begin(), entries.end(), [](const ClassEntry& e) { return is_image_path(e.path); });
  check_image_split(name, manifest, image_files, int64_t(entries.size()), options);
  SONATA_CHECK(image_files > 0 || options.cqt || options.mel, "load_image_split: --", name, " ",
               manifest, " holds audio and no front end (mel or cqt) was given");
  std::vector<std::vector<Tensor>> images(entries.size());
  std::vector<double> seconds(entries.size());
  std::vector<double> too_long(entries.size(), 0);  // the seconds of a track over max_duration
  const std::vector<std::string> problems = load_inputs(
      int64_t(entries.size()), workers, policy, [&](int64_t i) { return entries[size_t(i)].path; },
      [&](int64_t i) {
        const ClassEntry& entry = entries[size_t(i)];
        if (image_files > 0) {
          images[size_t(i)].push_back(image_file_item(entry.path, options.channels, options.height,
                                                      options.width, options.normalize,
                                                      options.max_pixels));
          return;
        }
        // Over --max-duration by its header: left out before its samples are allocated.
        const double declared = policy.max_duration > 0 ? declared_seconds(entry.path) : 0;
        if (over_max_duration(declared, policy)) {
          too_long[size_t(i)] = declared;
          return;
        }
        Audio decoded = decode_audio(entry.path);
        const std::vector<float> audio = decoded.sample_rate == rate
                                             ? std::move(decoded.samples)
                                             : resample(decoded.samples, decoded.sample_rate, rate);
        seconds[size_t(i)] = double(audio.size()) / double(rate);
        // Padding a short track to a slice would make a mostly silent image the model learns
        // as the track's class.
        SONATA_CHECK(int64_t(audio.size()) >= slice, entry.path, " lasts ", seconds[size_t(i)],
                     " s, shorter than one --slice-seconds ", options.slice_seconds, " slice");
        if (over_max_duration(seconds[size_t(i)], policy)) {
          too_long[size_t(i)] = seconds[size_t(i)];
          return;
        }
        for (int64_t start = 0; start + slice <= int64_t(audio.size()); start += slice) {
          const std::span<const float> piece(audio.data() + start, size_t(slice));
          images[size_t(i)].push_back(
              options.cqt ? cqt_image(piece, *options.cqt, options.height, options.width)
                          : spectrogram_image(piece, *options.mel, options.width));
        }
      });
  ImageSplit split;
  split.name = name;
  split.skipped = bad_inputs(problems);
  for (size_t i = 0; i < entries.size(); ++i)
    if (too_long[i] > 0) split.too_long.push_back({entries[i].path, too_long[i]});
  for (const size_t i : good_inputs(problems)) {
    if (too_long[i] > 0) continue;
    for (Tensor& image : images[i]) {
      split.images.push_back(std::move(image));
      split.labels.push_back(labels[i]);
      split.tracks.push_back(split.track_count);
    }
    ++split.track_count;
    split.seconds += seconds[i];
  }
  SONATA_CHECK(
      split.track_count > 0, "--", name, " ", manifest, ": every track is bad (",
      split.skipped.empty() ? describe_too_long(split.too_long, policy) : split.skipped.front(),
      ")");
  return split;
}

ImageBatcher::ImageBatcher(int64_t channels, int64_t height, int64_t width, double slice_seconds,
                           ImageJitter jitter, uint64_t seed, bool jitter_on_step)
    : channels_(channels),
      height_(height),
      width_(width),
      slice_seconds_(slice_seconds),
      jitter_(jitter),
      seed_(seed),
      jitter_on_step_(jitter_on_step) {}

HostBatch ImageBatcher::batch(const ImageSplit& data, const std::vector<int64_t>& items) const {
  const int64_t batch = int64_t(items.size());
  Tensor images = empty({batch, channels_, height_, width_});
  float* out = images.data<float>();
  std::vector<int64_t> labels, tracks;
  for (int64_t n = 0; n < batch; ++n) {
    const Tensor& item = data.images[size_t(items[size_t(n)])];
    const float* image = item.data<float>();
    // A spectrogram plane is replicated to the channels; an image file has them all.
    const bool all_channels = item.numel() == channels_ * height_ * width_;
    for (int64_t c = 0; c < channels_; ++c)
      std::copy_n(image + (all_channels ? c * height_ * width_ : 0), height_ * width_,
                  out + (n * channels_ + c) * height_ * width_);
    labels.push_back(data.labels[size_t(items[size_t(n)])]);
    tracks.push_back(data.tracks[size_t(items[size_t(n)])]);
  }
  HostBatch host;
  host.items = batch;
  host.audio_seconds = double(batch) * slice_seconds_;
  host.add(std::string(ImageBatch::image), images, /*staged=*/true);
  host.add(std::string(ImageBatch::label), from_vector(labels, {batch}));
  host.add(std::string(ImageBatch::track), from_vector(tracks, {batch}));
  return host;
}

bool ImageBatcher::jitters_on_step() const {
  return jitter_on_step_ && (jitter_.brightness != 0 || jitter_.contrast != 0);
}

HostBatch ImageBatcher::training(const ImageSplit& data, const std::vector<int64_t>& items,
                                 int64_t epoch) const {
  HostBatch host = batch(data, items);
  if (jitter_.brightness == 0 && jitter_.contrast == 0) return host;
  if (jitter_on_step_) {
    // The jitter runs on the device in step_jitter, keyed by these (their bits as i64).
    std::vector<int64_t> keys;
    for (const int64_t item : items) keys.push_back(int64_t(augment_key(epoch, item)));
    host.add(std::string(ImageBatch::augment_keys), from_vector(keys, {int64_t(items.size())}));
    return host;
  }
  // One draw per image, the same for its replicated channels.
  const int64_t plane = height_ * width_;
  float* images = host[ImageBatch::image].data<float>();
  for (size_t n = 0; n < items.size(); ++n) {
    float* first = images + int64_t(n) * channels_ * plane;
    image_jitter(std::span<float>(first, size_t(plane)), jitter_, seed_,
                 augment_key(epoch, items[n]));
    for (int64_t c = 1; c < channels_; ++c) std::copy_n(first, plane, first + c * plane);
  }
  return host;
}

Tensor ImageBatcher::step_jitter(const Tensor& images, const HostBatch& batch) const {
  std::vector<uint64_t> keys;
  for (const int64_t key : batch[ImageBatch::augment_keys].to_vector<int64_t>())
    keys.push_back(uint64_t(key));
  const Tensor first = image_jitter_batch(images.slice(1, 0, 1), jitter_, seed_, keys);
  return first.expand({-1, channels_, -1, -1}).contiguous();
}

}  // namespace sonata
