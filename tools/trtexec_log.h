// trtexec's log format for `qdqrt exec`: every line is "[MM/DD/YYYY-HH:MM:SS] [I] text", the form
// TREx's parse_trtexec_log and other trtexec log readers match. A line written as "[W] text"
// (or "[E] ", "[V] ") keeps that severity instead of [I].
#pragma once

#include <ctime>
#include <ostream>
#include <streambuf>
#include <string>

namespace qdqrt::tools {

// "[11/24/2026-21:45:57]" in local time, as trtexec prints it.
std::string trtexec_timestamp(std::time_t time);
// "[<timestamp>] [I] line", or "[<timestamp>] [W] rest" for a line that starts with "[W] ".
std::string prefix_log_line(const std::string& line, const std::string& timestamp);

// The command line this process was started with, its arguments joined by spaces (from
// /proc/self/cmdline), for trtexec's "&&&& RUNNING ... # <command line>" lines.
std::string process_command_line();

// A stream buffer that prefixes each complete line and passes it on to `sink`. Partial lines wait
// for their newline (or the destructor).
class TrtexecLogBuffer : public std::streambuf {
 public:
  explicit TrtexecLogBuffer(std::ostream& sink) : sink_(sink) {}
  ~TrtexecLogBuffer() override;
  TrtexecLogBuffer(const TrtexecLogBuffer&) = delete;
  TrtexecLogBuffer& operator=(const TrtexecLogBuffer&) = delete;

 protected:
  int_type overflow(int_type character) override;
  std::streamsize xsputn(const char* text, std::streamsize count) override;
  int sync() override;

 private:
  void emit_line();
  std::ostream& sink_;
  std::string line_;
};

}  // namespace qdqrt::tools
