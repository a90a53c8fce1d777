/// @file flight_analysis.h
/// `magmadnn flight`: the flight-recorder files of a failed job
/// (comm/flight_recorder.h), merged, and the first place where the ranks
/// diverge named.
///
/// Findings, in the order they are reported:
///  - ranks whose file is missing (killed by SIGKILL, or writing elsewhere);
///  - a mismatch: the first collective (communicator, sequence number) that
///    two ranks recorded as different operations or sizes;
///  - a straggler: on a communicator, the ranks whose last collective is
///    behind the others', with that last collective, and the collective the
///    others were waiting in (since when, and for how long before the dump);
///  - collectives every rank started but some did not finish.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace magmadnn::cli {

/// One collective as a rank recorded it.
struct FlightCall {
  unsigned comm = 0;
  long long seq = 0;
  std::string op;
  long long bytes = 0;
  long long step = -1;
  long long start_us = 0;
  std::optional<long long> end_us;
};

/// One rank's file.
struct FlightRecord {
  std::string file;
  int rank = 0;
  int size = 1;
  std::string host;
  std::string reason;
  long long dumped_us = 0;
  std::vector<FlightCall> calls;  // oldest first
};

/// Reads one file; ValueError naming the file and what is wrong (not JSON,
/// not a flight-recorder file, a field missing).
FlightRecord read_flight_record(const std::string& path);
/// Every flight.rank<R>.json in `dir`, by rank (IOError when none can be
/// read). Without `unreadable`, a file that cannot be read throws its
/// ValueError; with it, such files (and the .part file of a rank stopped while
/// writing) are skipped and described there, so their ranks count as missing.
std::vector<FlightRecord> read_flight_dir(const std::string& dir, std::vector<std::string>* unreadable = nullptr);

/// What the files show.
struct FlightFindings {
  std::vector<int> missing_ranks;
  std::vector<int> stragglers;        // behind on some communicator
  std::optional<long long> first_mismatch_seq;
  std::vector<std::string> lines;     // the report, one finding per line
};
/// Merges the records (any order) and names where they diverge.
FlightFindings analyze_flight(const std::vector<FlightRecord>& records);

}  // namespace magmadnn::cli
