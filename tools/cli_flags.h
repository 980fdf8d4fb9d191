// Flag helpers shared by the qdqrt subcommands (run, inspect, exec): the CLI11 validators of
// --shapes and --loadInputs, and the merging of repeated list flags into one value.
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

// Repeated or comma-separated flags merged: "input 'x' is given twice" when a name repeats.
Result<std::map<std::string, Shape>> collect_shapes(const std::vector<std::string>& texts);
Result<std::vector<InputFileSpec>> collect_load_inputs(const std::vector<std::string>& texts);

}  // namespace qdqrt::tools
