/// @file errors.h
/// The exceptions magmadnn throws, and the macros that throw them.
///
/// User mistakes (wrong shapes, bad indices, missing devices, corrupt files)
/// raise a typed exception derived from magmadnn::Error whose message names
/// the shapes, indices, files or devices involved, plus the file:line that
/// detected it. `assert` is kept for internal invariants only. The library
/// never calls exit() or abort().
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace magmadnn {

/// Base of every magmadnn exception.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// Tensor shapes that do not fit together.
class ShapeError : public Error { public: using Error::Error; };
/// An index outside a tensor or buffer.
class IndexError : public Error { public: using Error::Error; };
/// An argument with a wrong value (negative size, unknown name, NaN where a number is required).
class ValueError : public Error { public: using Error::Error; };
/// A device that is missing or failed (no GPU, CUDA/cuBLAS/cuDNN/NCCL error).
class DeviceError : public Error { public: using Error::Error; };
/// An operation not available in this build or on this backend.
class NotSupportedError : public Error { public: using Error::Error; };
/// A file that cannot be read or written, or whose content is malformed.
class IOError : public Error { public: using Error::Error; };
/// A failure of the communication layer (MPI, NCCL, a dead rank).
class CommError : public Error { public: using Error::Error; };

namespace detail {
template <typename E>
[[noreturn]] void throw_at(const char* file, int line, const std::string& msg) {
  std::ostringstream os;
  os << msg << " [" << file << ":" << line << "]";
  throw E(os.str());
}

// Builds a message from a stream expression: MAGMADNN_MSG("shape " << s).
struct MsgBuilder {
  std::ostringstream os;
  template <typename V>
  MsgBuilder& operator<<(const V& v) {
    os << v;
    return *this;
  }
  std::string str() const { return os.str(); }
};
}  // namespace detail

}  // namespace magmadnn

/// Throw `ExcType` with a streamed message and the current file:line.
///   MAGMADNN_THROW(ShapeError, "matmul: " << a << " x " << b);
#define MAGMADNN_THROW(ExcType, stream_expr)                                                  \
  ::magmadnn::detail::throw_at<::magmadnn::ExcType>(__FILE__, __LINE__,                       \
                                                    (::magmadnn::detail::MsgBuilder() << stream_expr).str())

/// Throw `ExcType` unless `cond` holds.
#define MAGMADNN_CHECK(cond, ExcType, stream_expr) \
  do {                                             \
    if (!(cond)) MAGMADNN_THROW(ExcType, stream_expr); \
  } while (0)
