/// @file image_folder.h
/// Image folders as data sets (ImageNet's layout): root/<class>/<image>,
/// one sub-folder per class, classes labelled 0, 1, ... in the order of
/// their names, images .jpg, .jpeg or .png (any case). Images are decoded
/// and augmented as each batch is assembled, never held as a whole: a data
/// set costs its list of files and nothing per pixel.
///
/// Preparing one image (prepare_image) for a sample shape {C, H, W}:
///  - decode to C channels (data/image_decode.h: grey, RGB and RGBA inputs
///    become 1 or 3 channels);
///  - with a random generator (training rows of the DataLoader) and
///    `augment`: a random resized crop as torchvision's RandomResizedCrop
///    (area fraction uniform in [min_scale, 1], aspect ratio log-uniform in
///    [3/4, 4/3], 10 tries, else the centre crop of clamped ratio), resized
///    to H x W bilinearly, then mirrored left-right with probability 1/2;
///  - without one (evaluation, validation, or augment off): the centre crop
///    whose shorter side is `center_crop` of the image's shorter side (with
///    H x W's aspect ratio; 0.875 is torchvision's Resize(256) +
///    CenterCrop(224)), resized to H x W. With center_crop 1 an image of
///    exactly H x W passes unchanged;
///  - pixels p become (p / 255 - mean[c]) / std[c].
/// Bilinear resizing samples at pixel centres and does not filter: a crop
/// shrunk more than twice aliases (torchvision's antialias=False).
///
/// Determinism: a row depends only on (file, the generator's draws), never
/// on the thread count or timing, so a seeded DataLoader serves the same
/// batches with any number of decode threads.
///
/// Bad files: scan_image_folder names each file that cannot be listed as an
/// image (another extension, zero bytes, unreadable, no JPEG or PNG header;
/// with `verify` also undecodable data) and, by `on_bad`, leaves it out
/// (BadImage::Skip: recorded in FolderIndex::skipped) or throws ImageError
/// naming it (BadImage::Refuse). A file whose data fails only when it is
/// decoded for a batch (a truncated JPEG, without `verify`) is, with Skip,
/// served as a blank row (every value 0, i.e. the mean colour after
/// normalisation) and recorded once in decode_failures(); with Refuse the
/// batch throws ImageError naming it (the DataLoader rethrows it from
/// next()). A class folder without images, or a root without class folders,
/// is an IOError.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "magmadnn/data/image_decode.h"
#include "magmadnn/data/sample_rng.h"
#include "magmadnn/data/samples.h"

namespace magmadnn::data {

/// What to do with a file that is not a readable image.
enum class BadImage { Skip, Refuse };

struct ImageFolderOptions {
  int channels = 3;  ///< 1 or 3
  std::int64_t height = 224, width = 224;
  /// Per-channel normalisation: 1 value for every channel, or `channels` values.
  std::vector<double> mean{0.0}, std{1.0};
  bool augment = true;        ///< random crop and flip for rows given a generator
  double min_scale = 0.08;    ///< smallest area fraction of the random resized crop, in (0, 1]
  double center_crop = 0.875; ///< evaluation crop: fraction of the shorter side, in (0, 1]
  BadImage on_bad = BadImage::Skip;
  bool verify = false;        ///< the scan decodes every file (else it reads headers only)
  /// Decode threads per batch; 0: tuned at run time (ImageFolderSource).
  int threads = 0;
  /// Largest thread count the tuning tries (0: the hardware threads).
  int max_threads = 0;
  /// Class names in label order; empty: the root's sub-folders. A test
  /// folder is read with its training folder's classes, so labels agree.
  std::vector<std::string> classes;
};

/// A file left out, and why.
struct BadFile {
  std::string file, reason;
};

/// The images of a folder, in label order then name order.
struct FolderIndex {
  std::string root;
  std::vector<std::string> classes;   ///< label order
  std::vector<std::string> files;     ///< paths
  std::vector<std::int64_t> labels;   ///< one per file
  std::vector<BadFile> skipped;       ///< left out by the scan (BadImage::Skip)
};

/// Checks `o` (ValueError naming the option) and lists the images of `root`
/// as the file comment says. Sub-folders of class folders and names that
/// start with '.' are ignored. Throws IOError for a missing root, a root
/// without class folders, a class folder left without images, a class not
/// in o.classes; ImageError for a bad file with BadImage::Refuse;
/// NotSupportedError when this build has no image decoding.
FolderIndex scan_image_folder(const std::string& root, const ImageFolderOptions& o);

/// The sub-folder names of `root` that scan_image_folder takes as classes,
/// sorted (IOError for a missing root or one without sub-folders).
std::vector<std::string> image_folder_classes(const std::string& root);

/// Writes `img` prepared as the file comment says to dst, {o.channels,
/// o.height, o.width} values. `rng`: null for the evaluation form.
/// Requires img.channels == o.channels.
template <typename T>
void prepare_image(const Image8& img, const ImageFolderOptions& o, SampleRng* rng, T* dst);

/// How the decode threads were chosen.
struct DecodeTuning {
  bool tuned = false;  ///< false: fixed by the options, or still measuring
  int threads = 1;     ///< in use now
  /// (threads, images per second) measured for each candidate.
  std::vector<std::pair<int, double>> measured;
};

/// A RowSource that reads, decodes and prepares the images of a
/// FolderIndex, the rows of a batch spread over decode threads started for
/// that batch. With options.threads 0 the count is tuned (dMath §2.2): after
/// one warm-up batch, each candidate 1, 2, 4, ... up to max_threads decodes
/// two batches, images per second are measured, and the fastest count is
/// kept (a larger count only when at least 5% faster).
template <typename T>
class ImageFolderSource : public RowSource<T> {
 public:
  ImageFolderSource(FolderIndex index, ImageFolderOptions o);
  ~ImageFolderSource() override;

  void fill(const std::int64_t* ids, std::int64_t count, T* dst, SampleRng* rngs) const override;

  std::int64_t size() const { return static_cast<std::int64_t>(index_.files.size()); }
  /// {channels, height, width}.
  std::vector<std::int64_t> sample_shape() const { return {opts_.channels, opts_.height, opts_.width}; }
  const FolderIndex& index() const noexcept { return index_; }
  const ImageFolderOptions& options() const noexcept { return opts_; }
  /// Files that failed while batches were prepared (BadImage::Skip), each
  /// once, in the order found.
  std::vector<BadFile> decode_failures() const;
  /// Rows served blank because their file failed.
  std::int64_t blank_rows() const;
  DecodeTuning tuning() const;

 private:
  struct State;
  void fill_row(std::int64_t id, T* dst, SampleRng* rng) const;
  FolderIndex index_;
  ImageFolderOptions opts_;
  std::unique_ptr<State> state_;
};

/// Samples {N, C, H, W} computed by `source` (Samples::from_source).
template <typename T>
Samples<T> image_folder_samples(std::shared_ptr<const ImageFolderSource<T>> source);

}  // namespace magmadnn::data
