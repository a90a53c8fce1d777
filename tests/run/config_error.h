// The message parse_config throws for a config, for the tests of the run
// spec (test_spec.cpp, test_spec_schema.cpp).
#pragma once

#include <string>

#include "magmadnn/run/spec.h"

namespace magmadnn::run::testing {

/// parse_config(j)'s ConfigError message, or "" if `j` parses.
inline std::string error_of(const Json& j) {
  try {
    parse_config(j);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace magmadnn::run::testing
