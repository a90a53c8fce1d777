// magmadnn flight: the flight-recorder files of a failed job, merged (flight_analysis.h).
#include <ostream>

#include "args.h"
#include "cli.h"
#include "flight_analysis.h"

namespace magmadnn::cli {
namespace {

const std::vector<OptionSpec> kOptions = {};

const char* kAbout =
    "Reads the flight-recorder files (flight.rank<R>.json) that the ranks of a failed job wrote into\n"
    "DIR (the run folder of magmadnn train, or MAGMADNN_FLIGHT_DIR), and names the ranks without a\n"
    "file, the first collective the ranks called differently, and the ranks behind the others with\n"
    "their last collective. Exit status 0 when the ranks agree, 1 when they diverge.";

}  // namespace

int flight_command(const std::vector<std::string>& args, std::ostream& out) {
  const SplitArgs split = split_positional(args, kOptions);
  const ParsedArgs p = parse_args("magmadnn flight", split.options, kOptions);
  if (p.has("help")) {
    out << usage_text("magmadnn flight DIR", kAbout, kOptions);
    return 0;
  }
  if (split.positional.size() != 1) throw UsageError("magmadnn flight: give one folder (usage: magmadnn flight DIR)");
  std::vector<std::string> unreadable;
  const std::vector<FlightRecord> records = read_flight_dir(split.positional[0], &unreadable);
  out << "magmadnn flight: " << records.size() << " of " << records.front().size << " ranks wrote a record in "
      << split.positional[0] << "\n";
  for (const std::string& u : unreadable) out << "  unreadable, counted as missing: " << u << "\n";
  for (const FlightRecord& r : records) {
    out << "  rank " << r.rank << " (" << r.host << "): " << r.reason << ", " << r.calls.size() << " collectives\n";
  }
  const FlightFindings f = analyze_flight(records);
  for (const std::string& line : f.lines) out << line << "\n";
  const bool diverged = !f.missing_ranks.empty() || !f.stragglers.empty() || f.first_mismatch_seq;
  return diverged ? 1 : 0;
}

}  // namespace magmadnn::cli
