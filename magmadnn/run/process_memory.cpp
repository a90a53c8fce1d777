#include "magmadnn/run/process_memory.h"

#include <fstream>
#include <sstream>
#include <string>

namespace magmadnn::run {

std::uint64_t peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream s(line.substr(6));
      std::uint64_t kib = 0;
      s >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return f.good();
}

}  // namespace magmadnn::run
