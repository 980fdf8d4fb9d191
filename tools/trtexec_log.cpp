#include "tools/trtexec_log.h"

#include <fmt/format.h>

#include <fstream>
#include <iterator>

namespace qdqrt::tools {

std::string process_command_line() {
  std::ifstream file("/proc/self/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& character : text) {
    if (character == '\0') character = ' ';
  }
  return text;
}

std::string trtexec_timestamp(std::time_t time) {
  std::tm local{};
  localtime_r(&time, &local);
  return fmt::format("[{:02}/{:02}/{:04}-{:02}:{:02}:{:02}]", local.tm_mon + 1, local.tm_mday, local.tm_year + 1900,
                     local.tm_hour, local.tm_min, local.tm_sec);
}

std::string prefix_log_line(const std::string& line, const std::string& timestamp) {
  for (const char* severity : {"[W] ", "[E] ", "[V] ", "[I] "}) {
    if (line.rfind(severity, 0) == 0) return timestamp + " " + line;
  }
  return timestamp + " [I] " + line;
}

TrtexecLogBuffer::~TrtexecLogBuffer() {
  if (!line_.empty()) emit_line();
  sink_.flush();
}

void TrtexecLogBuffer::emit_line() {
  sink_ << prefix_log_line(line_, trtexec_timestamp(std::time(nullptr))) << '\n';
  line_.clear();
}

TrtexecLogBuffer::int_type TrtexecLogBuffer::overflow(int_type character) {
  if (traits_type::eq_int_type(character, traits_type::eof())) return traits_type::not_eof(character);
  if (traits_type::to_char_type(character) == '\n') {
    emit_line();
  } else {
    line_.push_back(traits_type::to_char_type(character));
  }
  return character;
}

std::streamsize TrtexecLogBuffer::xsputn(const char* text, std::streamsize count) {
  for (std::streamsize i = 0; i < count; ++i) overflow(traits_type::to_int_type(text[i]));
  return count;
}

int TrtexecLogBuffer::sync() {
  sink_.flush();
  return 0;
}

}  // namespace qdqrt::tools
