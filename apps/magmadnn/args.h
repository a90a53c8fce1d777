/// @file args.h
/// Command-line options of the `magmadnn` subcommands: `--name value`,
/// `--name=value` and value-less switches, each declared with its help text,
/// so that parsing and `--help` come from one table.
///
/// Guarantees: an unknown option, a missing value or a value of the wrong
/// kind throws UsageError naming the subcommand, the option and the value.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "magmadnn/core/errors.h"

namespace magmadnn::cli {

/// A mistake on the command line (message meant for the user, no file:line).
class UsageError : public ValueError {
 public:
  using ValueError::ValueError;
};

struct OptionSpec {
  std::string name;        ///< without the leading "--"
  std::string value_name;  ///< e.g. "N", "FILE"; empty for a switch
  std::string help;
};

class ParsedArgs {
 public:
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string str(const std::string& name, const std::string& def = "") const;
  /// An integer in [min, max] (UsageError naming the flag and the range otherwise).
  std::int64_t integer(const std::string& name, std::int64_t min, std::int64_t max) const;
  /// A finite number > 0.
  double positive(const std::string& name) const;
  /// A finite number in [lo, hi) (UsageError otherwise).
  double number(const std::string& name, double lo, double hi) const;

 private:
  friend ParsedArgs parse_args(const std::string&, const std::vector<std::string>&, const std::vector<OptionSpec>&);
  std::string command_;
  std::map<std::string, std::string> values_;
};

/// Parses `args` (what follows the subcommand) against `spec`; "--help" and
/// "-h" are always accepted. Positional arguments are errors.
ParsedArgs parse_args(const std::string& command, const std::vector<std::string>& args,
                      const std::vector<OptionSpec>& spec);

/// `args` split into positional arguments and options (an option's value,
/// given apart as "--name VALUE", stays with it), for commands that take
/// operands besides their options: parse_args then reads `options`.
struct SplitArgs {
  std::vector<std::string> positional, options;
};
SplitArgs split_positional(const std::vector<std::string>& args, const std::vector<OptionSpec>& spec);

/// A --help section listing registered choices (strategies, searchers,
/// objectives): a blank line, "title:", then one aligned "  name  help" line
/// per entry, in the order given.
std::string choices_text(const std::string& title, const std::vector<std::pair<std::string, std::string>>& entries);

/// The --help text: `synopsis`, `about`, then one aligned line per option.
std::string usage_text(const std::string& synopsis, const std::string& about, const std::vector<OptionSpec>& spec);

}  // namespace magmadnn::cli
