#include "tools/datasets.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "core/file_reading.h"
#include "tools/npy.h"
#include "parser/onnx_loader.h"

namespace qdqrt::tools {
namespace {

namespace fs = std::filesystem;

constexpr uint8_t kIdxUnsignedByte = 0x08;

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// gzread reads gzip and plain files alike, so one reader serves both kinds of IDX file.
Result<std::vector<uint8_t>> read_maybe_gzipped(const std::string& path, size_t max_bytes) {
  // gzdopen takes the descriptor of a file checked to be regular (a FIFO would block gzopen).
  QDQRT_ASSIGN_OR_RETURN(RegularFile regular, open_regular_file(path, "data set file"));
  const int descriptor = ::dup(regular.descriptor());
  gzFile file = descriptor < 0 ? nullptr : gzdopen(descriptor, "rb");
  if (file == nullptr) {
    if (descriptor >= 0) ::close(descriptor);
    return io_error("cannot open '{}': {}", path, std::strerror(errno));
  }
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> chunk(1 << 20);
  while (bytes.size() < max_bytes) {
    unsigned want = static_cast<unsigned>(std::min(chunk.size(), max_bytes - bytes.size()));
    int got = gzread(file, chunk.data(), want);
    if (got < 0) {
      int code = 0;
      std::string message = gzerror(file, &code);
      gzclose(file);
      return io_error("cannot read '{}': {}", path, message);
    }
    if (got == 0) break;
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + got);
  }
  gzclose(file);
  return bytes;
}

uint32_t read_big_endian_u32(const uint8_t* bytes) {
  return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) | uint32_t{bytes[3]};
}

// Pixels (uint8 -> [0, 1]) or floats to float32 NCHW, normalized per channel.
Result<Tensor> to_normalized_nchw(const Tensor& raw, const DatasetOptions& options, const std::string& source) {
  Tensor images = raw;
  if (images.rank() == 3) images = images.reshaped({images.dim(0), 1, images.dim(1), images.dim(2)});
  if (images.rank() != 4) {
    return invalid_argument("{}: images must be [N, H, W] or [N, C, H, W], got {}", source,
                            shape_to_string(raw.shape()));
  }
  const int64_t channels = images.dim(1);
  auto per_channel = [&](const std::vector<float>& values, float fallback, const char* flag) -> Result<std::vector<float>> {
    if (values.empty()) return std::vector<float>(static_cast<size_t>(channels), fallback);
    if (values.size() == 1) return std::vector<float>(static_cast<size_t>(channels), values[0]);
    if (static_cast<int64_t>(values.size()) != channels) {
      return invalid_argument("--{} has {} values but the images of {} have {} channels", flag, values.size(), source,
                              channels);
    }
    return values;
  };
  QDQRT_ASSIGN_OR_RETURN(std::vector<float> mean, per_channel(options.mean, 0.0f, "mean"));
  QDQRT_ASSIGN_OR_RETURN(std::vector<float> stddev, per_channel(options.std, 1.0f, "std"));
  for (float value : stddev) {
    if (!(value > 0.0f)) return invalid_argument("--std values must be positive, got {}", value);
  }

  float pixel_scale = 1.0f;
  switch (images.dtype()) {
    case DataType::kUint8: pixel_scale = 1.0f / 255.0f; break;
    case DataType::kFloat: case DataType::kDouble: case DataType::kFloat16: break;
    default:
      return invalid_argument("{}: images must be uint8 pixels or floats, got {}", source, dtype_name(images.dtype()));
  }
  Tensor result(DataType::kFloat, images.shape());
  float* out = result.data<float>();
  const int64_t plane = images.dim(2) * images.dim(3);
  const bool bytes = images.dtype() == DataType::kUint8;
  const bool floats = images.dtype() == DataType::kFloat;
  for (int64_t i = 0; i < images.numel(); ++i) {
    float value = bytes ? static_cast<float>(images.data<uint8_t>()[i]) * pixel_scale
                        : floats ? images.data<float>()[i] : static_cast<float>(images.value_as_double(i));
    size_t channel = static_cast<size_t>((i / plane) % channels);
    out[i] = (value - mean[channel]) / stddev[channel];
  }
  return result;
}

Result<Tensor> to_labels(const Tensor& raw, const std::string& source) {
  if (raw.rank() != 1 && !(raw.rank() == 2 && raw.dim(1) == 1)) {
    return invalid_argument("{}: labels must be [N], got {}", source, shape_to_string(raw.shape()));
  }
  switch (raw.dtype()) {
    case DataType::kUint8: case DataType::kInt8: case DataType::kInt16: case DataType::kUint16:
    case DataType::kInt32: case DataType::kUint32: case DataType::kInt64: case DataType::kUint64: break;
    default: return invalid_argument("{}: labels must be integers, got {}", source, dtype_name(raw.dtype()));
  }
  Tensor labels(DataType::kInt64, {raw.numel()});
  for (int64_t i = 0; i < raw.numel(); ++i) labels.data<int64_t>()[i] = raw.value_as_int64(i);
  return labels;
}

Tensor first_items(const Tensor& tensor, int64_t count) {
  if (count < 0 || count >= tensor.dim(0)) return tensor;
  Shape shape = tensor.shape();
  shape[0] = count;
  Tensor result(tensor.dtype(), shape);
  std::memcpy(result.raw_data(), tensor.raw_data(), result.nbytes());
  return result;
}

// Images read from files, stacked: one [N,C,H,W] per run of consecutive images of one size (one
// run in all unless `allow_mixed` lets sizes differ).
struct StackedImages {
  std::vector<Tensor> groups;
  std::vector<std::pair<int64_t, std::string>> file_starts;
};

Shape image_shape_of(const Tensor& batch) { return Shape(batch.shape().begin() + 1, batch.shape().end()); }

// Stacks single images ([H,W], [C,H,W]) and batches ([N,C,H,W]) from files.
Result<StackedImages> stack_images(const std::vector<std::pair<std::string, Tensor>>& parts, int64_t max_images,
                                   bool allow_mixed) {
  std::vector<std::pair<std::string, Tensor>> batches;
  int64_t seen = 0;
  for (const auto& [path, tensor] : parts) {
    Tensor batch = tensor;
    if (tensor.rank() == 2) batch = tensor.reshaped({1, 1, tensor.dim(0), tensor.dim(1)});
    else if (tensor.rank() == 3) batch = tensor.reshaped({1, tensor.dim(0), tensor.dim(1), tensor.dim(2)});
    else if (tensor.rank() != 4) {
      return invalid_argument("'{}': an image file must be [H, W], [C, H, W] or [N, C, H, W], got {}", path,
                              shape_to_string(tensor.shape()));
    }
    if (!batches.empty()) {
      const Tensor& first = batches.front().second;
      if (batch.dtype() != first.dtype()) {
        return invalid_argument("'{}' holds {} images but '{}' holds {}: all images must have one type", path,
                                dtype_name(batch.dtype()), batches.front().first, dtype_name(first.dtype()));
      }
      if (!allow_mixed && image_shape_of(batch) != image_shape_of(first)) {
        return invalid_argument(
            "'{}' (image {}) holds {} images but '{}' holds {}: all images must match (eval and "
            "calibrate take images of different sizes for a model whose dims there are symbolic)",
            path, seen, shape_to_string(image_shape_of(batch)), batches.front().first,
            shape_to_string(image_shape_of(first)));
      }
    }
    seen += batch.dim(0);
    batches.emplace_back(path, batch);
  }
  if (batches.empty()) return invalid_argument("no images found");
  // Runs of one size: [first batch, last batch) and their image count (max_images applied).
  StackedImages stacked;
  int64_t remaining = max_images >= 0 ? max_images : std::numeric_limits<int64_t>::max();
  size_t start = 0;
  int64_t image = 0;
  while (start < batches.size() && (remaining > 0 || stacked.groups.empty())) {
    const Shape shape = image_shape_of(batches[start].second);
    size_t end = start;
    int64_t count = 0;
    while (end < batches.size() && image_shape_of(batches[end].second) == shape && count < remaining) {
      stacked.file_starts.emplace_back(image + count, batches[end].first);
      count += std::min(batches[end].second.dim(0), remaining - count);
      ++end;
    }
    Shape group_shape = batches[start].second.shape();
    group_shape[0] = count;
    Tensor group(batches[start].second.dtype(), group_shape);
    size_t offset = 0;
    for (size_t index = start; index < end && offset < group.nbytes(); ++index) {
      const Tensor& batch = batches[index].second;
      const size_t bytes = std::min(batch.nbytes(), group.nbytes() - offset);
      std::memcpy(static_cast<std::byte*>(group.raw_data()) + offset, batch.raw_data(), bytes);
      offset += bytes;
    }
    stacked.groups.push_back(std::move(group));
    remaining -= count;
    image += count;
    start = end;
  }
  return stacked;
}

Result<Dataset> finish(const StackedImages& raw_images, std::optional<Tensor> raw_labels, const std::string& source,
                       const DatasetOptions& options) {
  Dataset dataset;
  dataset.description = source;
  dataset.file_starts = raw_images.file_starts;
  if (raw_images.groups.size() == 1) {
    QDQRT_ASSIGN_OR_RETURN(dataset.images, to_normalized_nchw(raw_images.groups.front(), options, source));
  } else {
    for (const Tensor& group : raw_images.groups) {
      QDQRT_ASSIGN_OR_RETURN(Tensor normalized, to_normalized_nchw(group, options, source));
      dataset.image_groups.push_back(std::move(normalized));
    }
  }
  if (raw_labels) {
    QDQRT_ASSIGN_OR_RETURN(Tensor labels, to_labels(*raw_labels, source + " labels"));
    if (labels.numel() < dataset.size() || (options.max_images < 0 && labels.numel() != dataset.size())) {
      return invalid_argument("{}: {} images but {} labels", source, dataset.size(), labels.numel());
    }
    dataset.labels = first_items(labels, dataset.size());
  }
  return dataset;
}

Result<Dataset> finish(Tensor raw_images, std::optional<Tensor> raw_labels, const std::string& source,
                       const DatasetOptions& options) {
  StackedImages stacked;
  stacked.groups.push_back(std::move(raw_images));
  return finish(stacked, std::move(raw_labels), source, options);
}

Result<Dataset> load_fashion_mnist(const std::string& dir, const std::string& split_name, const DatasetOptions& options) {
  std::string prefix;
  if (split_name == "train") prefix = "train";
  else if (split_name == "test") prefix = "t10k";
  else return invalid_argument("fashion-mnist split must be 'train' or 'test', got '{}'", split_name);
  auto find = [&](const std::string& stem) -> Result<std::string> {
    for (const std::string& name : {stem + ".gz", stem}) {
      fs::path path = fs::path(dir) / name;
      if (fs::exists(path)) return path.string();
    }
    return io_error("fashion-mnist: neither '{}' nor '{}.gz' exists in '{}' (Debian: apt install dataset-fashion-mnist)",
                    stem, stem, dir);
  };
  QDQRT_ASSIGN_OR_RETURN(std::string images_path, find(prefix + "-images-idx3-ubyte"));
  QDQRT_ASSIGN_OR_RETURN(std::string labels_path, find(prefix + "-labels-idx1-ubyte"));
  QDQRT_ASSIGN_OR_RETURN(Tensor images, read_idx_file(images_path, options.max_images));
  QDQRT_ASSIGN_OR_RETURN(Tensor labels, read_idx_file(labels_path, options.max_images));
  if (images.rank() != 3) {
    return invalid_argument("'{}': expected [N, H, W] images, got {}", images_path, shape_to_string(images.shape()));
  }
  return finish(images, labels, fmt::format("fashion-mnist {} ({})", split_name, dir), options);
}

// Files in `dir` with `extension`, by name; `labels_name` is split off.
struct DirectoryFiles {
  std::vector<std::string> images;
  std::optional<std::string> labels;
};

DirectoryFiles list_files(const std::string& dir, const std::string& extension) {
  DirectoryFiles files;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    if (!entry.is_regular_file()) continue;
    std::string name = entry.path().filename().string();
    if (!ends_with(name, extension)) continue;
    if (name == "labels" + extension) files.labels = entry.path().string();
    else files.images.push_back(entry.path().string());
  }
  std::sort(files.images.begin(), files.images.end());
  return files;
}

Result<Dataset> load_file_directory(const std::string& dir, const std::string& extension,
                                    const std::function<Result<Tensor>(const std::string&)>& read,
                                    const DatasetOptions& options) {
  if (!fs::is_directory(dir)) return io_error("'{}' is not a directory", dir);
  DirectoryFiles files = list_files(dir, extension);
  if (extension == ".pb" && files.images.empty()) {
    // The ONNX backend-test layout: DIR/test_data_set_N/input_0.pb.
    std::vector<std::string> sets;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(dir, error)) {
      if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
        sets.push_back(entry.path().string());
      }
    }
    std::sort(sets.begin(), sets.end());
    for (const std::string& set : sets) {
      fs::path input = fs::path(set) / "input_0.pb";
      if (fs::exists(input)) files.images.push_back(input.string());
    }
  }
  if (files.images.empty()) return invalid_argument("'{}' holds no image files (*{})", dir, extension);
  std::vector<std::pair<std::string, Tensor>> parts;
  int64_t count = 0;
  for (const std::string& path : files.images) {
    if (options.max_images >= 0 && count >= options.max_images) break;
    QDQRT_ASSIGN_OR_RETURN(Tensor tensor, read(path));
    count += tensor.rank() == 4 ? tensor.dim(0) : 1;
    parts.emplace_back(path, tensor);
  }
  auto stacked = stack_images(parts, options.max_images, options.allow_mixed_sizes);
  if (!stacked.ok()) return stacked.status().with_context(dir);
  std::optional<Tensor> labels;
  if (files.labels) {
    // With max_images only the first labels are used; finish() checks there are enough.
    QDQRT_ASSIGN_OR_RETURN(labels, read(*files.labels));
  }
  return finish(*stacked, labels, dir, options);
}

}  // namespace

Result<Tensor> read_idx_file(const std::string& path, int64_t max_items) {
  // Header first (magic + up to 4 dims), then only the bytes of the items asked for.
  QDQRT_ASSIGN_OR_RETURN(std::vector<uint8_t> header, read_maybe_gzipped(path, 4 + 4 * 4));
  if (header.size() < 4 || header[0] != 0 || header[1] != 0) {
    return invalid_argument("'{}' is not an IDX file (bad magic number)", path);
  }
  if (header[2] != kIdxUnsignedByte) {
    return unsupported("'{}': IDX element type 0x{:02x} is not unsigned byte (0x08)", path, header[2]);
  }
  const int rank = header[3];
  if (rank < 1 || rank > 4 || header.size() < static_cast<size_t>(4 + 4 * rank)) {
    return invalid_argument("'{}': IDX header with {} dimensions is truncated or unsupported", path, rank);
  }
  Shape shape;
  for (int i = 0; i < rank; ++i) shape.push_back(read_big_endian_u32(header.data() + 4 + 4 * i));
  const int64_t available = shape[0];
  if (max_items >= 0) shape[0] = std::min(shape[0], max_items);
  const size_t header_bytes = static_cast<size_t>(4 + 4 * rank);
  const size_t data_bytes = static_cast<size_t>(shape_numel(shape));
  QDQRT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_maybe_gzipped(path, header_bytes + data_bytes));
  if (bytes.size() != header_bytes + data_bytes) {
    return invalid_argument("'{}' is truncated: header says {} items of {} but the file holds {} bytes", path, available,
                            shape_to_string(Shape(shape.begin() + 1, shape.end())), bytes.size());
  }
  Tensor tensor(DataType::kUint8, shape);
  std::memcpy(tensor.raw_data(), bytes.data() + header_bytes, data_bytes);
  return tensor;
}

Result<std::vector<float>> parse_float_list(const std::string& text, const std::string& flag) {
  std::vector<float> values;
  for (const std::string& part : split(text, ',')) {
    char* end = nullptr;
    errno = 0;
    float value = std::strtof(part.c_str(), &end);
    if (part.empty() || end != part.c_str() + part.size() || errno != 0) {
      return invalid_argument("--{}: '{}' is not a number (expected e.g. 0.2860 or 0.485,0.456,0.406)", flag, part);
    }
    values.push_back(value);
  }
  return values;
}

Status check_images_fit_input(const Tensor& images, const std::vector<int64_t>& dims, const std::string& input_name) {
  if (dims.size() != 4) {
    return invalid_argument("model input '{}' has rank {}; image data sets need an [N, C, H, W] input", input_name,
                            dims.size());
  }
  for (size_t axis = 1; axis < 4; ++axis) {
    if (dims[axis] >= 0 && dims[axis] != images.dim(static_cast<int64_t>(axis))) {
      Shape image(images.shape().begin() + 1, images.shape().end());
      Shape wanted(dims.begin() + 1, dims.end());
      return invalid_argument("the data set's images are {} but model input '{}' wants {} (C, H, W)",
                              shape_to_string(image), input_name, shape_to_string(wanted));
    }
  }
  return Status::ok();
}

std::string Dataset::source_of(int64_t index) const {
  std::string source;
  for (const auto& [first, path] : file_starts) {
    if (first > index) break;
    source = path;
  }
  return source;
}

Status check_dataset_fits_input(const Dataset& data, const std::vector<int64_t>& dims, const std::string& input_name) {
  if (!data.mixed_sizes()) return check_images_fit_input(data.images, dims, input_name);
  if (dims.size() != 4) return check_images_fit_input(data.image_groups.front(), dims, input_name);
  const Shape first(data.image_groups.front().shape().begin() + 1, data.image_groups.front().shape().end());
  int64_t image = 0;
  for (const Tensor& group : data.image_groups) {
    const Shape shape(group.shape().begin() + 1, group.shape().end());
    for (size_t axis = 1; axis < 4; ++axis) {
      if (dims[axis] >= 0 && dims[axis] != group.dim(static_cast<int64_t>(axis))) {
        const std::string source = data.source_of(image);
        return invalid_argument(
            "the data set's images differ in size: image {}{} is {}, image 0 is {}, and model input '{}' wants {} "
            "(C, H, W); only a model whose dims there are symbolic takes images of different sizes",
            image, source.empty() ? "" : fmt::format(" ('{}')", source), shape_to_string(shape), shape_to_string(first),
            input_name, shape_to_string(Shape(dims.begin() + 1, dims.end())));
      }
    }
    image += group.dim(0);
  }
  return Status::ok();
}

Result<Dataset> load_dataset(const std::string& spec, const DatasetOptions& options) {
  if (spec.empty()) return invalid_argument("empty data SPEC");
  std::vector<std::string> parts = split(spec, ':');
  const std::string& kind = parts[0];
  if (kind == "fashion-mnist") {
    if (parts.size() == 2) return load_fashion_mnist(kDefaultFashionMnistDir, parts[1], options);
    if (parts.size() == 3) return load_fashion_mnist(parts[1].empty() ? kDefaultFashionMnistDir : parts[1], parts[2], options);
    return invalid_argument("bad data SPEC '{}': expected fashion-mnist:DIR:train|test or fashion-mnist:train|test", spec);
  }
  auto read_pb = [](const std::string& path) { return read_tensor_pb_file(path); };
  auto read_numpy = [](const std::string& path) { return read_npy(path); };
  if (kind == "npy" || kind == "pb") {
    std::string path = spec.substr(kind.size() + 1 > spec.size() ? spec.size() : kind.size() + 1);
    if (parts.size() < 2 || path.empty()) return invalid_argument("bad data SPEC '{}': expected {}:DIR", spec, kind);
    if (kind == "npy") return load_file_directory(path, ".npy", read_numpy, options);
    return load_file_directory(path, ".pb", read_pb, options);
  }
  // A plain path: a directory (npy or pb files) or a single file.
  if (fs::is_directory(spec)) {
    if (!list_files(spec, ".npy").images.empty()) return load_file_directory(spec, ".npy", read_numpy, options);
    return load_file_directory(spec, ".pb", read_pb, options);
  }
  if (fs::is_regular_file(spec) && (ends_with(spec, ".npy") || ends_with(spec, ".pb"))) {
    QDQRT_ASSIGN_OR_RETURN(Tensor tensor, ends_with(spec, ".npy") ? read_npy(spec) : read_tensor_pb_file(spec));
    auto stacked = stack_images({{spec, tensor}}, options.max_images, false);
    if (!stacked.ok()) return stacked.status();
    return finish(*stacked, std::nullopt, spec, options);
  }
  return invalid_argument(
      "bad data SPEC '{}': expected fashion-mnist:DIR:train|test, npy:DIR, pb:DIR, a directory or a .npy/.pb file "
      "(and the path must exist)",
      spec);
}

}  // namespace qdqrt::tools
