// Flag helpers shared by the qdqrt subcommands (run, inspect, exec): the CLI11 validators of
// --shapes and --loadInputs, the merging of repeated list flags into one value, "did you mean"
// for unknown flags, and trtexec's flags that have no meaning on a CPU.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "tools/run_command.h"

namespace qdqrt::tools {

// The validator without its description, so --help shows only the option's type name.
CLI::Validator quiet(CLI::Validator validator);
// Parse-time syntax checks (a bad value is then reported like any other flag error).
CLI::Validator shapes_validator();       // parse_shapes()
CLI::Validator load_inputs_validator();  // parse_load_inputs() and every file exists
CLI::Validator threads_validator();      // an integer engine::check_context_threads() accepts

// Repeated or comma-separated flags merged: "input 'x' is given twice" when a name repeats.
Result<std::map<std::string, Shape>> collect_shapes(const std::vector<std::string>& texts);
Result<std::vector<InputFileSpec>> collect_load_inputs(const std::vector<std::string>& texts);

// Writes an output file named by a flag: "--json: cannot open 'x' for writing" on failure.
Status write_text_file(const std::string& flag, const std::string& path, const std::string& text);

// Edit distance (insertions, deletions, substitutions), ignoring case.
size_t edit_distance(const std::string& a, const std::string& b);
// The known flag closest to `unknown` ("--fp61" -> "--fp16", "--loadengine" -> "--loadEngine"),
// or "" when none is close (at most 1 edit per 3 letters, at least 2).
std::string suggest_flag(const std::string& unknown, const std::vector<std::string>& known);
// The long names of `app`'s options ("--onnx", ...).
std::vector<std::string> long_flag_names(const CLI::App& app);
// "unknown flag --fp61 (did you mean --fp16?)" for each unknown flag among `extras` (CLI11's
// unparsed arguments); other extras are "unexpected argument 'x'". Empty when `extras` is.
std::string describe_unknown_arguments(const std::vector<std::string>& extras, const CLI::App& app);

// trtexec flags that have nothing to do on a CPU: accepted so trtexec command lines run unchanged,
// each reported once as "not applicable on CPU: --fp16 (why)".
struct ForeignFlag {
  const char* name;    // "--fp16"
  bool takes_value;    // --workspace=N takes one, --fp16 none
  const char* reason;  // why there is nothing to do
};
const std::vector<ForeignFlag>& trtexec_flags_without_cpu_meaning();
// Adds them to `app` under their own --help group; each one given appends its line to `notes`.
void add_not_applicable_flags(CLI::App& app, std::vector<std::string>& notes);

}  // namespace qdqrt::tools
