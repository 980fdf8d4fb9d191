#include "tools/calibration/calibration_cache.h"

#include "core/file_reading.h"

#include <cerrno>
#include <cmath>
#include <iterator>
#include <cstdint>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

namespace qdqrt::calibration {

const char* tensorrt_algorithm_name(const MethodSpec& method) {
  return method.method == Method::kMax ? "MinMaxCalibration" : "EntropyCalibration2";
}

std::string format_calibration_cache(const std::map<std::string, float>& scales, const MethodSpec& method) {
  std::string text = fmt::format("{}-{}\n", kTensorRTCacheVersion, tensorrt_algorithm_name(method));
  for (const auto& [name, scale] : scales) {
    uint32_t bits = 0;
    std::memcpy(&bits, &scale, sizeof(bits));
    text += fmt::format("{}: {:08x}\n", name, bits);
  }
  return text;
}

Status write_calibration_cache(const std::string& path, const std::map<std::string, float>& scales,
                               const MethodSpec& method) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return io_error("cannot write calibration cache '{}': {}", path, std::strerror(errno));
  file << format_calibration_cache(scales, method);
  file.close();
  if (!file) return io_error("cannot write calibration cache '{}'", path);
  return Status::ok();
}

Result<std::map<std::string, float>> parse_calibration_cache(const std::string& text) {
  std::map<std::string, float> scales;
  size_t begin = 0;
  int line_number = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line_number == 1) {
      if (line.rfind("TRT-", 0) != 0) {
        return invalid_argument("line 1: '{}' is not a calibration cache header (TRT-<version>-<algorithm>)", line);
      }
      continue;
    }
    size_t colon = line.rfind(": ");
    std::string hex = colon == std::string::npos ? "" : line.substr(colon + 2);
    if (hex.empty() || hex.size() > 8 || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
      return invalid_argument("line {}: '{}' is not 'tensor: <8 hex digits>'", line_number, line);
    }
    auto bits = static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
    float scale = 0;
    std::memcpy(&scale, &bits, sizeof(scale));
    if (!std::isfinite(scale) || scale < 0) {
      return invalid_argument("line {}: tensor '{}' has scale {}", line_number, line.substr(0, colon), scale);
    }
    scales[line.substr(0, colon)] = scale;
  }
  if (line_number == 0) return invalid_argument("the calibration cache is empty");
  return scales;
}

Result<std::map<std::string, float>> read_calibration_cache(const std::string& path) {
  // A cache holds one short line per tensor: 64 MiB is far beyond any model's.
  QDQRT_ASSIGN_OR_RETURN(std::string text, read_regular_file(path, "calibration cache", size_t{64} << 20));
  auto scales = parse_calibration_cache(text);
  if (!scales.ok()) return scales.status().with_context(fmt::format("calibration cache '{}'", path));
  return scales;
}

}  // namespace qdqrt::calibration
