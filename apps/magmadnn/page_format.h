/// @file page_format.h
/// How the HTML pages (report.html, compare's page) write numbers, and how
/// they read the run's JSON leniently, so that one run's values read the
/// same on every page.
///
/// Formats: percent "%.2f%%" of 100 x the fraction, fixed4 "%.4f", seconds
/// "%.2f s", mib "%.1f MiB" (2^20 bytes), grouped: an integer with ','
/// between thousands (48,123), fmt: "%.*g". Every one writes "-" for a
/// value that is not finite.
#pragma once

#include <cstdint>
#include <string>

#include "run_names.h"

namespace magmadnn::cli::page {

std::string printf1(const char* format, double v);
std::string fmt(double v, int digits = 4);
std::string percent(double fraction);
std::string fixed4(double v);
std::string seconds(double s);
std::string mib(double bytes);
std::string grouped(double v);
/// "1 epoch", "2,000 epochs".
std::string count_of(std::int64_t n, const std::string& one, const std::string& many);

/// j[key] when it is a number, else NaN (an in-progress summary has little).
double number(const Json& j, const char* key);
/// j[key] when it is a string, else "".
std::string text(const Json& j, const char* key);
/// j[key], or null when there is no such key.
const Json& member(const Json& j, const char* key);

}  // namespace magmadnn::cli::page
