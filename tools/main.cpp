// qdqrt: the command-line tool. Subcommands register themselves via tools/commands.h.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/version.h"
#include "tools/cli_flags.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  using namespace qdqrt::tools;
  try {
    CLI::App app{"qdqrt: INT8 inference for explicit-QDQ ONNX models on x86 CPUs.\n"
                 "Run 'qdqrt <command> --help' for the options of a command."};
    app.name("qdqrt");
    app.set_version_flag("--version", std::string("qdqrt ") + qdqrt::kVersion, "Print qdqrt's version and exit");
    app.require_subcommand(1);
    std::vector<Command> commands = {add_run_command(app), add_inspect_command(app), add_exec_command(app),
                                     add_calibrate_command(app), add_eval_command(app), add_serve_command(app),
                                     add_compare_command(app)};
    app.failure_message([](const CLI::App* failed, const CLI::Error& error) {
      std::string command = failed->get_name();
      std::vector<CLI::App*> chosen = failed->get_subcommands();
      if (!chosen.empty()) command += " " + chosen.front()->get_name();
      // A misspelt flag first: "--onxx" would otherwise show up as "--onnx is required".
      std::string message = error.what();
      if (!chosen.empty() && !chosen.front()->remaining().empty()) {
        message = describe_unknown_arguments(chosen.front()->remaining(), *chosen.front());
      }
      return fmt::format("{}: error: {}\nRun '{} --help' for the options.\n", command, message, command);
    });
    // CLI11 would report an unknown command as "A subcommand is required": name it instead.
    std::vector<std::string> names;
    for (const Command& command : commands) names.push_back(command.app->get_name());
    if (argc > 1 && argv[1][0] != '-' && std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      std::fprintf(stderr, "qdqrt: error: unknown command '%s' (commands: %s)\nRun 'qdqrt --help' for usage.\n",
                   argv[1], fmt::format("{}", fmt::join(names, ", ")).c_str());
      return kExitUsage;
    }
    // Unknown flags are collected rather than refused by CLI11, so the error can suggest a flag.
    for (const Command& command : commands) command.app->allow_extras();
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
      int code = app.exit(error);  // prints help, or the error with a usage hint
      return code == static_cast<int>(CLI::ExitCodes::Success) ? kExitSuccess : kExitUsage;
    }
    for (const Command& command : commands) {
      if (!command.app->parsed()) continue;
      std::vector<std::string> extras = command.app->remaining();
      if (!extras.empty()) {
        std::string name = command.app->get_name();
        std::fprintf(stderr, "qdqrt %s: error: %s\nRun 'qdqrt %s --help' for the options.\n", name.c_str(),
                     describe_unknown_arguments(extras, *command.app).c_str(), name.c_str());
        return kExitUsage;
      }
      return command.run();
    }
    return kExitUsage;
  } catch (const std::exception& e) {
    // Subcommands report errors as Status; this only catches what escapes (e.g. bad_alloc).
    std::fprintf(stderr, "qdqrt: error: %s\n", e.what());
    return kExitFailure;
  }
}
