#include "tools/calibration/calibration_cache.h"

#include <cerrno>
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

}  // namespace qdqrt::calibration
