// The image decoder's fuzz entry (builds with JPEG and PNG decoding only).
#include <vector>

#include "fuzz_entries.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/data/image_folder.h"

namespace magmadnn::fuzz {

bool image(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return false;
  const std::uint8_t sel = data[0];
  try {
    data::ImageFolderOptions o;
    o.channels = (sel & 1) ? 3 : 1;
    o.height = 1 + (sel >> 1 & 7);
    o.width = 1 + (sel >> 4 & 7);
    const data::Image8 img = data::decode_image(data + 1, size - 1, o.channels, "fuzz");
    std::vector<float> out(static_cast<std::size_t>(o.channels * o.height * o.width));
    data::SampleRng rng(sel, size);
    data::prepare_image(img, o, (sel & 0x80) ? &rng : nullptr, out.data());
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace magmadnn::fuzz
