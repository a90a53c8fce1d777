/// @file base64.h
/// Base64 (RFC 4648, standard alphabet, '=' padding, no line breaks), for
/// data: URIs in report.html.
///
/// Guarantees: the result has 4 * ceil(n / 3) characters for n input bytes.
#pragma once

#include <string>
#include <string_view>

namespace magmadnn::cli {

std::string base64_encode(std::string_view bytes);

}  // namespace magmadnn::cli
