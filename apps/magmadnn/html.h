/// @file html.h
/// Escaping of text placed in report.html.
#pragma once

#include <string>

namespace magmadnn::cli {

/// `s` with &, <, >, " and ' replaced by entities: safe both as element text
/// and inside a quoted attribute.
std::string html_escape(const std::string& s);

}  // namespace magmadnn::cli
