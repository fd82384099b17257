// The bodies of the `autobatch` subcommands, separate from argument parsing (main.cpp).
// Each returns the process exit code: 0 success, 1 bad program or input (the message is
// already printed to stderr), 2 bad usage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/run.h"
#include "tools/backends.h"
#include "tools/expected.h"

namespace ab::cli {

int check_command(const std::string& file);

struct IrCommand {
  std::string file;
  std::string entry = "main";
  bool lowered = false;
};
int ir_command(const IrCommand& command);

struct RunCommand {
  std::string file;
  std::string backend;
  std::string entry = "main";
  std::optional<uint32_t> batch;
  std::vector<std::string> inputs;
  std::vector<std::string> uniforms;
  RunOptions options;
  std::string heuristic = "min-pc";
  std::string format = "table";
  std::string out_dir;
  DeviceOptions device;
};
int run_command(const RunCommand& command);

// Prints "error: <message>" (or a formatted message as it is) to stderr; returns 1.
int report_error(const Error& error);

}  // namespace ab::cli
