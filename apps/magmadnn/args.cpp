#include "args.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace magmadnn::cli {

std::string ParsedArgs::str(const std::string& name, const std::string& def) const {
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second;
}

std::int64_t ParsedArgs::integer(const std::string& name, std::int64_t min, std::int64_t max) const {
  const std::string v = str(name);
  std::size_t used = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  // stoll throws out_of_range past 64 bits; `used` is then 0 and the value is refused like any other.
  if (used != v.size() || v.empty() || x < min || x > max) {
    throw UsageError(command_ + ": --" + name + ": expected an integer in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "], got \"" + v + "\"");
  }
  return x;
}

namespace {
// The whole of `v` as a finite number.
bool finite_number(const std::string& v, double& x) {
  std::size_t used = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    return false;
  }
  return !v.empty() && used == v.size() && std::isfinite(x);
}
}  // namespace

double ParsedArgs::number(const std::string& name, double lo, double hi) const {
  const std::string v = str(name);
  double x = 0;
  if (!finite_number(v, x) || !(x >= lo) || !(x < hi)) {
    std::ostringstream want;
    want << "expected a number in [" << lo << ", " << hi << ")";
    throw UsageError(command_ + ": --" + name + ": " + want.str() + ", got \"" + v + "\"");
  }
  return x;
}

double ParsedArgs::positive(const std::string& name) const {
  const std::string v = str(name);
  double x = 0;
  if (!finite_number(v, x) || x <= 0) {
    throw UsageError(command_ + ": --" + name + ": expected a positive number, got \"" + v + "\"");
  }
  return x;
}

ParsedArgs parse_args(const std::string& command, const std::vector<std::string>& args,
                      const std::vector<OptionSpec>& spec) {
  ParsedArgs out;
  out.command_ = command;
  const std::string hint = " (see " + command + " --help)";
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      out.values_["help"] = "";
      continue;
    }
    if (a.rfind("--", 0) != 0 || a.size() == 2) throw UsageError(command + ": unexpected argument \"" + a + "\"" + hint);
    std::string name = a.substr(2), value;
    const auto eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    auto it = std::find_if(spec.begin(), spec.end(), [&](const OptionSpec& o) { return o.name == name; });
    if (it == spec.end()) throw UsageError(command + ": unknown option --" + name + hint);
    if (it->value_name.empty()) {
      if (inline_value) throw UsageError(command + ": --" + name + " takes no value, got \"" + value + "\"");
    } else if (!inline_value) {
      if (i + 1 >= args.size()) throw UsageError(command + ": --" + name + " needs a value (" + it->value_name + ")");
      value = args[++i];
    }
    out.values_[name] = value;
  }
  return out;
}

SplitArgs split_positional(const std::vector<std::string>& args, const std::vector<OptionSpec>& spec) {
  SplitArgs out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("-", 0) != 0) {
      out.positional.push_back(a);
      continue;
    }
    out.options.push_back(a);
    const auto it = std::find_if(spec.begin(), spec.end(), [&](const OptionSpec& o) { return a == "--" + o.name; });
    if (it != spec.end() && !it->value_name.empty() && i + 1 < args.size()) out.options.push_back(args[++i]);
  }
  return out;
}

std::string choices_text(const std::string& title, const std::vector<std::pair<std::string, std::string>>& entries) {
  std::size_t width = 0;
  for (const auto& [name, help] : entries) width = std::max(width, name.size());
  std::string s = "\n\n" + title + ":";
  for (const auto& [name, help] : entries) s += "\n  " + name + std::string(width - name.size() + 2, ' ') + help;
  return s;
}

std::string usage_text(const std::string& synopsis, const std::string& about, const std::vector<OptionSpec>& spec) {
  std::ostringstream o;
  o << "usage: " << synopsis << "\n\n" << about << "\n\noptions:\n";
  std::size_t width = 6;
  for (const auto& s : spec) width = std::max(width, s.name.size() + (s.value_name.empty() ? 0 : s.value_name.size() + 1));
  for (const auto& s : spec) {
    std::string left = s.name + (s.value_name.empty() ? "" : " " + s.value_name);
    o << "  --" << left << std::string(width - left.size() + 2, ' ') << s.help << "\n";
  }
  o << "  --help" << std::string(width - 4 + 2, ' ') << "show this help\n";
  return o.str();
}

}  // namespace magmadnn::cli
