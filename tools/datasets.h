// Image data sets for calibration and evaluation, named by a SPEC string:
//
//   fashion-mnist:DIR:train|test   IDX files (train-images-idx3-ubyte[.gz], t10k-...) under DIR;
//   fashion-mnist:train|test       the same under /usr/share/datasets/fashion-mnist (Debian's package)
//   npy:DIR  (or a plain DIR)      every DIR/*.npy except labels.npy, in name order: [H,W] or [C,H,W]
//                                  = one image, [N,C,H,W] = N images; DIR/labels.npy = integer labels
//   pb:DIR   (or a plain DIR)      the same with ONNX TensorProto files (*.pb, labels.pb), or the ONNX
//                                  backend-test layout DIR/test_data_set_*/input_0.pb
//   FILE.npy / FILE.pb             one file of images (no labels)
//
// Images come back as float32 NCHW. 8-bit pixels are scaled to [0, 1] first; then each channel is
// normalized as (x - mean[c]) / std[c]. Files whose images differ in size are an error, unless
// DatasetOptions::allow_mixed_sizes (eval and calibrate, for models with symbolic dims there): then
// the images come back as runs of equal size (Dataset::image_groups).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace qdqrt::tools {

inline constexpr const char* kDefaultFashionMnistDir = "/usr/share/datasets/fashion-mnist";

struct DatasetOptions {
  // One value for every channel or one per channel; empty = 0 / 1 (no normalization).
  std::vector<float> mean;
  std::vector<float> std;
  // Read at most this many images (the first ones); < 0 = all.
  int64_t max_images = -1;
  // Images of different sizes (C, H, W) are kept, in runs of one size, instead of refused.
  bool allow_mixed_sizes = false;
};

struct Dataset {
  Tensor images;  // float32 [N, C, H, W] when every image has one size
  // When the images differ in size (only with allow_mixed_sizes): consecutive images of one size
  // stacked, each float32 [n, C, H, W], in data set order; `images` is then undefined.
  std::vector<Tensor> image_groups;
  std::optional<Tensor> labels;  // int64 [N] when the data set has labels
  std::string description;      // "fashion-mnist test (/usr/share/...)" for messages
  // Where each file's images start (index of its first image, path), for messages.
  std::vector<std::pair<int64_t, std::string>> file_starts;

  bool mixed_sizes() const { return !image_groups.empty(); }
  int64_t size() const {
    if (images.defined()) return images.dim(0);
    int64_t count = 0;
    for (const Tensor& group : image_groups) count += group.dim(0);
    return count;
  }
  // The image runs of one size: image_groups, or `images` alone.
  std::vector<Tensor> groups() const { return mixed_sizes() ? image_groups : std::vector<Tensor>{images}; }
  // The file image `index` came from ("" when unknown).
  std::string source_of(int64_t index) const;
};

Result<Dataset> load_dataset(const std::string& spec, const DatasetOptions& options = {});

// Reads an IDX file (the MNIST family's format; gzip-compressed or not) of unsigned bytes.
Result<Tensor> read_idx_file(const std::string& path, int64_t max_items = -1);

// Parses "0.2860" or "0.485,0.456,0.406" (the --mean/--std flags).
Result<std::vector<float>> parse_float_list(const std::string& text, const std::string& flag);

// Checks that images [N, C, H, W] fit a model input of `dims` (-1 = dynamic). Error names both.
Status check_images_fit_input(const Tensor& images, const std::vector<int64_t>& dims, const std::string& input_name);
// The same for every image of the data set; images of different sizes fit only where the model's
// dims are dynamic (the error names the first image that does not fit, its file and both shapes).
Status check_dataset_fits_input(const Dataset& data, const std::vector<int64_t>& dims, const std::string& input_name);

}  // namespace qdqrt::tools
