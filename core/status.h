// Status and Result<T>: the error type at every qdqrt boundary (parser, optimizer, engine, CLI).
// A malformed model never aborts the process: functions return a Status naming what is wrong.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace qdqrt {

enum class StatusCode {
  kOk = 0,
  kInvalidModel,     // the ONNX file is malformed or inconsistent
  kUnsupported,      // valid ONNX that qdqrt does not handle (op, opset, dtype)
  kInvalidArgument,  // bad user input: flags, shapes, tensors
  kIoError,          // file cannot be read or written
  kInternal,         // a bug in qdqrt
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid model: Conv 'conv1': ..." style text for printing.
  std::string to_string() const;

  // Prefixes the message with context, e.g. "node 'conv1' (Conv): ".
  Status with_context(const std::string& context) const {
    if (is_ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <class... Args>
Status invalid_model(fmt::format_string<Args...> format, Args&&... args) {
  return Status(StatusCode::kInvalidModel, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
Status unsupported(fmt::format_string<Args...> format, Args&&... args) {
  return Status(StatusCode::kUnsupported, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
Status invalid_argument(fmt::format_string<Args...> format, Args&&... args) {
  return Status(StatusCode::kInvalidArgument, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
Status io_error(fmt::format_string<Args...> format, Args&&... args) {
  return Status(StatusCode::kIoError, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
Status internal_error(fmt::format_string<Args...> format, Args&&... args) {
  return Status(StatusCode::kInternal, fmt::format(format, std::forward<Args>(args)...));
}

// A value or the Status explaining why there is none.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.is_ok()) status_ = internal_error("Result constructed from an OK status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace qdqrt

#define QDQRT_CONCAT_INNER(a, b) a##b
#define QDQRT_CONCAT(a, b) QDQRT_CONCAT_INNER(a, b)

#define QDQRT_RETURN_IF_ERROR(expr)                 \
  do {                                              \
    ::qdqrt::Status qdqrt_status_ = (expr);         \
    if (!qdqrt_status_.is_ok()) return qdqrt_status_; \
  } while (0)

#define QDQRT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

// QDQRT_ASSIGN_OR_RETURN(auto x, function_returning_result());
#define QDQRT_ASSIGN_OR_RETURN(lhs, expr) \
  QDQRT_ASSIGN_OR_RETURN_IMPL(QDQRT_CONCAT(qdqrt_result_, __LINE__), lhs, expr)
