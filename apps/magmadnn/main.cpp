// The magmadnn command: everything lives in cli.cpp and the *_command.cpp files.
#include <iostream>
#include <string>
#include <vector>

#include "cli.h"
#include "magmadnn/core/init.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const int rc = magmadnn::cli::run_cli(args, std::cout, std::cerr);
  magmadnn::magmadnn_finalize();
  return rc;
}
