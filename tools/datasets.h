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
// normalized as (x - mean[c]) / std[c].
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
};

struct Dataset {
  Tensor images;                // float32 [N, C, H, W]
  std::optional<Tensor> labels;  // int64 [N] when the data set has labels
  std::string description;      // "fashion-mnist test (/usr/share/...)" for messages
  int64_t size() const { return images.defined() ? images.dim(0) : 0; }
};

Result<Dataset> load_dataset(const std::string& spec, const DatasetOptions& options = {});

// Reads an IDX file (the MNIST family's format; gzip-compressed or not) of unsigned bytes.
Result<Tensor> read_idx_file(const std::string& path, int64_t max_items = -1);

// Parses "0.2860" or "0.485,0.456,0.406" (the --mean/--std flags).
Result<std::vector<float>> parse_float_list(const std::string& text, const std::string& flag);

// Checks that images [N, C, H, W] fit a model input of `dims` (-1 = dynamic). Error names both.
Status check_images_fit_input(const Tensor& images, const std::vector<int64_t>& dims, const std::string& input_name);

}  // namespace qdqrt::tools
