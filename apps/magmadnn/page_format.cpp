#include "page_format.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace magmadnn::cli::page {

std::string printf1(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string fmt(double v, int digits) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string percent(double fraction) { return std::isfinite(fraction) ? printf1("%.2f%%", 100 * fraction) : "-"; }
std::string fixed4(double v) { return std::isfinite(v) ? printf1("%.4f", v) : "-"; }
std::string seconds(double s) { return std::isfinite(s) ? printf1("%.2f s", s) : "-"; }
std::string mib(double bytes) { return std::isfinite(bytes) ? printf1("%.1f MiB", bytes / 1048576.0) : "-"; }

std::string grouped(double v) {
  if (!std::isfinite(v)) return "-";
  const std::string digits = printf1("%.0f", std::abs(v));
  std::string out = v < 0 && digits != "0" ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string count_of(std::int64_t n, const std::string& one, const std::string& many) {
  return grouped(static_cast<double>(n)) + " " + (n == 1 ? one : many);
}

double number(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>()
                                                                : std::numeric_limits<double>::quiet_NaN();
}

std::string text(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

const Json& member(const Json& j, const char* key) {
  static const Json none;
  return j.is_object() && j.contains(key) ? j[key] : none;
}

}  // namespace magmadnn::cli::page
