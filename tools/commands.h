// Each subcommand of the qdqrt CLI adds itself to the app; its callback sets the exit code.
#pragma once

#include <CLI/CLI.hpp>

namespace qdqrt::tools {

void add_run_command(CLI::App& app);  // qdqrt run: reference executor on a model

void set_exit_code(int code);
int exit_code();

}  // namespace qdqrt::tools
