/// @file flight_recorder.h
/// The flight recorder: each process keeps its last K collectives (which
/// communicator, sequence number, operation, bytes, training step, start and
/// end time) in a ring buffer, and writes them to a file when a job fails:
/// when the watchdog or another communication error ends it (abort_job),
/// and on a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) or the
/// SIGTERM with which a launcher (mpirun, srun, scancel) stops the ranks of a
/// failed job, so that a rank that hangs writes its record too (a signal
/// after abort_job has written the record keeps that record and its reason).
/// `magmadnn flight DIR` (flight_analysis.h) merges the files of a job and
/// names the first rank and collective where the ranks diverge.
///
/// Settings (read once, at the first use):
///  - MAGMADNN_FLIGHT_RECORDER=K: entries kept per process (default 256; 0
///    turns the recorder off: nothing recorded, nothing written);
///  - MAGMADNN_FLIGHT_DIR=DIR: where the files go (default: the folder
///    set_flight_dir() names, else the working directory). A process writes
///    DIR/flight.rank<R>.json, R its rank in the world communicator.
///
/// Guarantees: recording takes no lock (an atomic increment and two clock
/// reads: about 90 ns per collective, docs/notes/communicators.md); the dump from a
/// signal handler uses only async-signal-safe calls (open, write, close,
/// rename) on memory allocated at start; a dump never throws; a record is
/// written as flight.rank<R>.json.part and renamed when complete, so a rank
/// killed while writing leaves no cut-short record under the record's name.
#pragma once

#include <cstdint>
#include <string>

namespace magmadnn::distributed::flight {

/// Marks the start of a collective; returns its slot for end(). `op` must be
/// a string with static storage (an operation's name). `comm` tells apart
/// the communicators of one process (their creation order, the same on
/// every rank that creates them in the same order). Returns -1 when off.
std::int64_t begin(std::uint32_t comm, std::uint64_t seq, const char* op, std::uint64_t bytes,
                   std::int64_t step) noexcept;
/// Marks the collective of `slot` complete (ignored when the ring has since
/// reused the slot, or for -1).
void end(std::int64_t slot) noexcept;

/// The world rank and size written into the dump (set by the first MPI
/// communicator; 0 of 1 before).
void set_world(int rank, int size) noexcept;
/// The folder dumps go to when MAGMADNN_FLIGHT_DIR is unset (train sets its
/// run folder). Not for use from a signal handler.
void set_flight_dir(const std::string& dir);
/// A new identifier for a communicator (0, 1, 2, ... in creation order).
std::uint32_t next_comm_id() noexcept;

/// Writes the record now to DIR/flight.rank<R>.json with `reason` (at most
/// 200 bytes are kept); returns false when off, in a process whose world
/// has one rank (set_world), or when the file cannot be written (DIR
/// missing: a rank other than 0 may fail before rank 0 made the run
/// folder). Async-signal-safe.
bool dump(const char* reason) noexcept;
/// The file dump() writes ("" when off). Not async-signal-safe.
std::string dump_path();

/// Installs the signal handlers above (once; later calls do nothing). A
/// handler dumps, then restores the previous handler and raises the signal
/// again, so the process ends as it would have.
void install_signal_handlers() noexcept;

/// Entries kept (0 when off).
std::size_t capacity() noexcept;
/// For tests: forgets every entry and re-reads the settings.
void reset_for_testing();

}  // namespace magmadnn::distributed::flight
