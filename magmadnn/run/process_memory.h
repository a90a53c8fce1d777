// Peak resident memory of this process, for the memory line of summary.json.
#pragma once

#include <cstdint>

namespace magmadnn::run {

/// The process's peak resident set (VmHWM) in bytes; 0 where /proc is missing.
std::uint64_t peak_rss_bytes();
/// Restarts the peak at the current resident set (Linux clear_refs "5").
/// Returns false where the kernel refuses; the peak then stays the process's.
bool reset_peak_rss();

}  // namespace magmadnn::run
