// libFuzzer driver for the JPEG and PNG decoder (built only with -DMAGMADNN_FUZZ=ON).
#include <cstddef>
#include <cstdint>

#include "fuzz_entries.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  magmadnn::fuzz::image(data, size);
  return 0;
}
