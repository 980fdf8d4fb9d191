#include <cstdio>

#include "tools/commands.h"

namespace qdqrt::tools {

namespace {
int g_exit_code = 0;
}

void set_exit_code(int code) { g_exit_code = code; }
int exit_code() { return g_exit_code; }

void add_run_command(CLI::App& app) {
  CLI::App* run = app.add_subcommand("run", "Run a model with the reference executor");
  run->callback([] {
    std::fprintf(stderr, "qdqrt run: not implemented yet\n");
    set_exit_code(1);
  });
}

}  // namespace qdqrt::tools
