/// @file temp_dir.h
/// A fresh directory under the system temp dir, removed with its contents
/// when the object goes out of scope; and small file helpers for the data tests.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace magmadnn::test {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("magmadnn_data_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}
inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}
inline std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace magmadnn::test

/// Expects `stmt` to throw `exc` whose message contains every string of `parts`.
#define EXPECT_THROW_WITH(stmt, exc, ...)                                            \
  do {                                                                               \
    try {                                                                            \
      stmt;                                                                          \
      ADD_FAILURE() << "no exception from " #stmt;                                   \
    } catch (const exc& e) {                                                         \
      const std::string msg = e.what();                                              \
      for (const std::string& part : std::vector<std::string>{__VA_ARGS__})          \
        EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' not in: " << msg; \
    }                                                                                \
  } while (0)
