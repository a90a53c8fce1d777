/// @file journal.h
/// The search's journal: DIR/journal.jsonl, one JSON object per line, only
/// ever appended, written by the master alone. Events:
///   {"event": "begin",    "tune": <the tune config>, "seed": S, "t": 0}
///   {"event": "resume",   "t": T}
///   {"event": "started",  "trial": i, "attempt": a, "worker": w, "config": c, "rung": r, "params": {...}, "t": T}
///   {"event": "finished", "trial": i, "attempt": a, "worker": w, "outcome": {...}, "t": T}
///   {"event": "failed",   "trial": i, "attempt": a, "worker": w, "error": "...", "outcome": {...}, "t": T}
///   {"event": "lost",     "trial": i, "attempt": a, "worker": w, "reason": "...", "t": T}
///   {"event": "end",      "t": T}
/// (t: seconds of search so far, over all sessions.)
///
/// Durability: a journal the constructor creates has its directory fsynced;
/// append() buffers; commit() writes the buffered lines with one
/// write and fsyncs the file before returning, so the master commits once
/// per round of events (group commit) and sends trials only after their
/// "started" lines are on disk. A line cut short by a crash (no final
/// newline) is dropped by read_journal and cut off by the next Journal
/// opened on the file, so the file stays a sequence of whole lines.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "magmadnn/run/spec.h"

namespace magmadnn::tune {

using run::Json;

class Journal {
 public:
  /// Opens `path` for appending (creating it), cutting off a torn last line.
  explicit Journal(std::string path);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  void append(const Json& event);
  /// Writes and fsyncs what append() buffered (IOError naming the file on failure).
  void commit();
  /// Lines committed by this object so far.
  std::size_t committed() const noexcept { return committed_; }
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::string buffer_;
  std::size_t pending_ = 0, committed_ = 0;
};

/// Every whole line of the journal at `path`, parsed (empty when absent);
/// ValueError naming the file and line for a line that is not JSON.
std::vector<Json> read_journal(const std::string& path);

}  // namespace magmadnn::tune
