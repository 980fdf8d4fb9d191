// qdqrt: the command-line tool. Subcommands register themselves in tools/commands.h.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "tools/commands.h"

int main(int argc, char** argv) {
  try {
    CLI::App app{"qdqrt: INT8 inference for explicit-QDQ ONNX models on x86 CPUs"};
    app.require_subcommand(1);
    qdqrt::tools::add_run_command(app);
    CLI11_PARSE(app, argc, argv);
    return qdqrt::tools::exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qdqrt: error: %s\n", e.what());
    return 1;
  }
}
