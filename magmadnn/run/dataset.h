/// @file dataset.h
/// The image classification data the `magmadnn` command trains on: MNIST or
/// Fashion-MNIST IDX files (gzip or plain) in one folder, ready for a
/// network: images {N, 1, 28, 28} kept as the file's uint8 (1 byte a pixel)
/// and read as floats scaled to [0, 1] (data::Samples promotes each batch),
/// labels as one-hot float rows {N, classes}.
///
/// Guarantees: a missing file names the folder, the names looked for and the
/// Debian package that provides them; images and labels of different counts,
/// or a label outside [0, classes), throw IOError naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <memory>

#include "magmadnn/data/image_folder.h"
#include "magmadnn/data/samples.h"
#include "magmadnn/run/spec.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::run {

struct Split {
  data::Samples<float> x;            ///< {N, 1, H, W}, uint8 in memory
  Tensor<float> y;                   ///< {N, classes}, one-hot
  std::vector<std::int64_t> labels;  ///< N class indices
  std::string source;                ///< the image file, for messages
  std::string label_source;          ///< the label file, for messages
  /// An image folder's reader (dataset "folder"; null otherwise): its scan
  /// report, decode failures and decode-thread tuning, for the run's log.
  std::shared_ptr<const data::ImageFolderSource<float>> folder;
};

/// The "train" or "test" split of a config's data, by data.dataset:
///  - fashion-mnist, mnist, idx: load_split(d.dir, ...);
///  - cifar10, cifar100: the binary files in d.dir (data/cifar.h: CIFAR-10's
///    data_batch_1..5.bin and test_batch.bin, CIFAR-100's train.bin and
///    test.bin with its 100 fine labels), images {N, 3, 32, 32} kept as uint8
///    and read as floats in [0, 1];
///  - synthetic: d.train_samples or d.test_samples images of d.shape whose
///    values, uniform in [0, 1), are computed from (seed, split, sample) each
///    time a batch is assembled (data::Samples::generated: no memory for the
///    images), and labels drawn uniformly from d.classes the same way (held
///    as one-hot rows: 4 x classes bytes a sample). Its source is "synthetic".
///  - folder: the JPEG and PNG images of d.train_dir or d.test_dir
///    (data/image_folder.h), classes named by the training folder's
///    sub-folders (so the test folder's labels agree with it), samples
///    d.shape computed as batches are assembled: training rows given a
///    generator by the DataLoader are randomly cropped and flipped, all
///    others centre-cropped; d.on_error "skip" leaves bad files out (named in
///    Split::folder's index), "refuse" throws naming the first. A limit
///    keeps that many files spread evenly over the listing (every class
///    keeps its share), not the first ones.
/// The first d.limit_train / d.limit_test samples (0: all). `classes` as in
/// load_split (0: from the data). IOError for a missing or malformed file.
Split load_data(const DataSpec& d, const std::string& split, std::int64_t classes, std::uint64_t seed);

/// The class count of a config's data: dataset_classes(d.dataset), or
/// d.classes for synthetic data, or the training folder's sub-folders for
/// an image folder.
std::int64_t dataset_classes(const DataSpec& d);

/// The class count of a config's data.dataset: 10 for "fashion-mnist" and
/// "mnist" (so a label outside [0, 10) is an error naming its file and
/// position), 10 for "cifar10", 100 for "cifar100", 0 for "idx" (any MNIST-format folder: one more than the
/// largest training label).
std::int64_t dataset_classes(const std::string& dataset);

/// Throws IOError, naming s.source and both shapes, unless the samples of
/// `s` have shape `want` ("the network's input is", "the training images are").
void check_sample_shape(const Split& s, const std::vector<std::int64_t>& want, const std::string& want_what);

/// "train" or "test" split from `dir`, the first `limit` samples (0: all).
/// `classes` 0 means "one more than the largest label".
Split load_split(const std::string& dir, const std::string& split, std::int64_t limit = 0, std::int64_t classes = 0);

/// The samples `rows` of `s` (in that order), labels included; new storage
/// of the same type (uint8 images stay uint8).
Split subset(const Split& s, const std::vector<std::int64_t>& rows);

/// Images of an IDX file ({N, sample_shape...}, or {N, H, W} for a
/// sample_shape {1, H, W}; uint8, or float32/float64 raw values) or a CSV
/// file read by io::read_csv (one sample per line, `sample_size`
/// comma-separated values; a first line none of whose cells is a number is a
/// header and is skipped, while a bad cell anywhere else is an IOError naming
/// its line and column), as {N, sample_shape...} floats. Both hold raw pixel
/// values, scaled by 1/255 like the training data: a value that is not
/// finite or outside [0, 255] is an IOError naming the file and the sample
/// (IDX) or the line and column (CSV); so are a shape other than the
/// network's, an IDX of integer type other than uint8, and no samples.
Tensor<float> load_inputs(const std::string& path, const std::vector<std::int64_t>& sample_shape);

/// The names of the classes of `dataset` (the config's data.dataset), in
/// label order, for people to read: Fashion-MNIST's ten garment names,
/// CIFAR-10's ten object names, the digits "0".."9" for MNIST. Any other data set, or a class count that does
/// not match the data set's, gives the indices "0".."classes-1".
/// Guarantees: exactly `classes` names (none for classes <= 0).
std::vector<std::string> class_names(const std::string& dataset, std::int64_t classes);

}  // namespace magmadnn::run
