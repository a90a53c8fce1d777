#include "magmadnn/tune/master.h"

#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>

#include "magmadnn/tune/journal.h"
#include "magmadnn/tune/worker.h"

namespace magmadnn::tune {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr double kShortTrial = 0.01;  // seconds
constexpr std::size_t kPrefetch = 8;

// An integer of a journal line or a worker's message (`def` when absent). A
// float is refused: converting one outside the integer's range (1e300) is
// undefined.
template <typename T>
T integer_at(const Json& e, const char* key, std::optional<T> def = std::nullopt) {
  if (def && !e.contains(key)) return *def;
  const Json& v = e.at(key);
  // The JSON library's own error type, so that a journal's replay names the file (replay_journal).
  if (!v.is_number_integer())
    throw Json::type_error::create(302, "\"" + std::string(key) + "\": expected an integer, got " + v.dump(), &v);
  return v.get<T>();
}

class Master {
 public:
  Master(const TuneConfig& config, MasterChannel& channel, const MasterOptions& options)
      : config_(config), channel_(channel), options_(options), searcher_(config.make_searcher()),
        journal_path_((fs::path(options.out_dir) / "journal.jsonl").string()) {}

  SearchResult run() {
    fs::create_directories(options_.out_dir);
    const bool present = fs::exists(journal_path_);
    const bool exists = present && fs::file_size(journal_path_) > 0;
    if (options_.resume) {
      MAGMADNN_CHECK(present, ValueError, "--resume: " << journal_path_ << " does not exist: there is no search to continue");
      MAGMADNN_CHECK(exists, ValueError,
                     "--resume: " << journal_path_
                                  << " is empty (0 bytes): the search stopped before it wrote its first line, so "
                                     "there is nothing to continue; start it again without --resume after "
                                     "removing the empty journal");
      replay_journal();
    } else {
      MAGMADNN_CHECK(!exists, ValueError,
                     options_.out_dir << " already holds a search (journal.jsonl): pass --resume to continue it, "
                                         "or choose another folder");
    }
    journal_.emplace(journal_path_);
    if (options_.resume) {
      ++sessions_;
      journal_->append({{"event", "resume"}, {"workers", channel_.workers()}, {"t", now()}});
    } else {
      journal_->append({{"event", "begin"}, {"tune", config_.source}, {"seed", config_.context.seed},
                        {"workers", channel_.workers()}, {"t", 0.0}});
    }
    loop();
    journal_->append({{"event", "end"}, {"t", now()}});
    commit();
    channel_.shut_down();
    return result();
  }

 private:
  double now() const { return offset_ + std::chrono::duration<double>(Clock::now() - start_).count(); }

  // -- resume ---------------------------------------------------------------
  // replay() with the JSON library's own errors (a line of another shape: no
  // "trial", a string where a number belongs) turned into the ValueError
  // every other damaged journal gets, naming the file.
  void replay_journal() {
    const std::vector<Json> events = read_journal(journal_path_);
    try {
      replay(events);
    } catch (const Json::exception& x) {
      MAGMADNN_THROW(ValueError, journal_path_ << " has a line that is not an event of a search journal ("
                                               << x.what() << "): the journal is damaged");
    }
  }

  void replay(const std::vector<Json>& events) {
    MAGMADNN_CHECK(!events.empty() && events[0].value("event", "") == "begin", ValueError,
                   journal_path_ << " does not begin with a \"begin\" line: not a search journal");
    // value(), never the const operator[]: a key the line lacks would be
    // undefined behaviour there (tests/fuzz's journal target found a begin
    // line without "tune").
    // The same document with its keys in another order is the same config.
    if (const auto d = first_difference(events[0].value("tune", Json()), config_.source)) {
      MAGMADNN_THROW(ValueError, "--resume: the config differs from the one the search in "
                                     << options_.out_dir << " began with (the first line of " << journal_path_
                                     << "): at " << (d->path.empty() ? std::string("(the document)") : d->path)
                                     << " the search began with " << d->was << ", the config given now has "
                                     << d->now);
    }
    const Json seed = events[0].value("seed", Json());
    MAGMADNN_CHECK(seed == config_.context.seed, ValueError,
                   "--resume: the seed differs from the one the search in "
                       << options_.out_dir << " began with: " << seed.dump() << " then, "
                       << config_.context.seed << " now (--seed, or the config's \"seed\")");
    for (const Json& e : events) {
      const std::string kind = e.value("event", "");
      offset_ = std::max(offset_, e.value("t", 0.0));
      if (kind == "resume") ++sessions_;
      if (kind != "started" && kind != "finished" && kind != "failed" && kind != "lost") continue;
      const std::int64_t i = integer_at<std::int64_t>(e, "trial");
      if (kind == "started") {
        if (records_.count(i) == 0) {
          Proposal p = searcher_->next(e.value("t", 0.0));
          const Json params = e.value("params", Json());
          MAGMADNN_CHECK(p.kind == Proposal::Kind::trial && p.trial.index == i && p.trial.params == params, ValueError,
                         "--resume: " << journal_path_ << " does not match this search: its trial " << i << " ("
                                      << params.dump() << ") is not what the searcher proposes now");
          records_[i].trial = std::move(p.trial);
        }
        TrialRecord& r = records_.at(i);
        r.attempts = integer_at<int>(e, "attempt", r.attempts + 1);
        r.worker = integer_at<int>(e, "worker", -1);
        continue;
      }
      MAGMADNN_CHECK(records_.count(i) != 0, ValueError,
                     journal_path_ << ": trial " << i << " ends before it started: the journal is damaged");
      TrialRecord& r = records_.at(i);
      if (kind == "lost") {
        losses_[i].push_back(e.value("reason", ""));
        continue;
      }
      if (r.done()) continue;  // cannot happen in a journal this master wrote; never count a trial twice
      finish(r, kind == "finished" ? "ok" : "failed", TrialOutcome::from_json(e.value("outcome", Json::object())),
             e.value("error", ""), /*journal=*/false);
    }
    // Trials started but not finished when the last session stopped run again, once each.
    for (auto& [i, r] : records_)
      if (!r.done()) {
        r.trial.attempt = r.attempts + 1;
        pending_.push_back(r.trial);
      }
  }

  // -- the loop -------------------------------------------------------------
  void loop() {
    const int n = channel_.workers();
    queue_.assign(static_cast<std::size_t>(n), {});
    alive_.assign(static_cast<std::size_t>(n), true);
    bool searcher_done = false;
    for (;;) {
      // Fill the workers round-robin up to the depth, so trials spread evenly.
      std::vector<std::pair<int, std::string>> outbox;
      bool more = true;
      for (std::size_t level = 0; more && level < depth(); ++level) {
        for (int w = 0; more && w < n; ++w) {
          const auto k = static_cast<std::size_t>(w);
          if (!alive_[k] || queue_[k].size() > level) continue;
          std::optional<Trial> t;
          // The time the searcher sees is the one journaled, so a replay asks it the same question.
          const double at = now();
          if (!pending_.empty()) {
            t = std::move(pending_.front());
            pending_.pop_front();
          } else if (!searcher_done) {
            Proposal p = searcher_->next(at);
            if (p.kind == Proposal::Kind::done) searcher_done = true;
            if (p.kind == Proposal::Kind::trial) t = std::move(p.trial);
          }
          if (!t) more = false;
          else start(w, std::move(*t), at, outbox);
        }
      }
      commit();  // the "started" lines are on disk before their trials leave
      for (auto& [w, m] : outbox) channel_.send(w, m);
      if (running() == 0) {
        if (searcher_done && pending_.empty()) return;
        MAGMADNN_CHECK(any_alive(), CommError, "tune: every worker was lost; " << pending_.size()
                                                                               << " trials could not run");
        // Free workers took nothing: the searcher waits, and no running trial can unblock it.
        MAGMADNN_THROW(ValueError, "tune: the " << searcher_->name() << " searcher waits with no trial running");
      }
      for (ChannelEvent& ev : channel_.wait()) handle(ev);
    }
  }

  // Trials a worker holds at once: one, or while trials are short (a few
  // milliseconds, comparable to the journal's fsync) several, so that a
  // round of outcomes shares one fsync and a worker never idles waiting for
  // the master. A worker runs its trials in the order sent.
  std::size_t depth() const { return mean_seconds_ >= 0 && mean_seconds_ < kShortTrial ? kPrefetch : 1; }

  void start(int w, Trial t, double at, std::vector<std::pair<int, std::string>>& outbox) {
    TrialRecord& r = records_[t.index];
    if (r.attempts == 0) r.trial = t;
    r.attempts = t.attempt;
    r.worker = w;
    journal_->append({{"event", "started"}, {"trial", t.index}, {"attempt", t.attempt}, {"worker", w},
                      {"config", t.config}, {"rung", t.rung}, {"params", t.params}, {"t", at}});
    outbox.emplace_back(w, trial_message(t));
    queue_[static_cast<std::size_t>(w)].push_back(std::move(t));
  }

  void handle(ChannelEvent& ev) {
    std::deque<Trial>& queue = queue_.at(static_cast<std::size_t>(ev.worker));
    if (ev.kind == ChannelEvent::Kind::lost) {
      if (!queue.empty()) {
        // The first trial was running: that attempt is lost. The others never
        // started; they go back to the front of the line as they were.
        const Trial t = std::move(queue.front());
        queue.pop_front();
        for (auto it = queue.rbegin(); it != queue.rend(); ++it) pending_.push_front(std::move(*it));
        queue.clear();
        lost(t, ev);
      }
      if (!channel_.replace(ev.worker)) alive_[static_cast<std::size_t>(ev.worker)] = false;
      return;
    }
    const Json m = Json::parse(ev.payload);
    if (m.value("type", "") != "result") return;  // a goodbye, or an answer to nothing asked
    MAGMADNN_CHECK(!queue.empty() && queue.front().index == integer_at<std::int64_t>(m, "trial"), CommError,
                   "tune: " << channel_.describe(ev.worker) << " answered trial " << m.at("trial")
                            << ", which it was not running");
    queue.pop_front();
    const TrialOutcome o = TrialOutcome::from_json(m.at("outcome"));
    const double s = std::max(0.0, o.seconds);
    mean_seconds_ = mean_seconds_ < 0 ? s : 0.8 * mean_seconds_ + 0.2 * s;
    finish(records_.at(m["trial"].get<std::int64_t>()), o.ok ? "ok" : "failed", o, o.error, true);
  }

  void lost(const Trial& t, const ChannelEvent& ev) {
    std::vector<std::string>& why = losses_[t.index];
    why.push_back(ev.payload);
    journal_->append({{"event", "lost"}, {"trial", t.index}, {"attempt", t.attempt}, {"worker", ev.worker},
                      {"reason", ev.payload}, {"t", now()}});
    if (static_cast<int>(why.size()) <= config_.retries) {
      Trial again = t;
      again.attempt = t.attempt + 1;
      pending_.push_front(std::move(again));
      return;
    }
    std::string reason = "the worker running it was lost " + std::to_string(why.size()) + " times: ";
    for (std::size_t k = 0; k < why.size(); ++k) reason.append(k ? "; " : "").append(why[k]);
    TrialOutcome o;
    o.ok = false;
    o.error = reason;
    finish(records_.at(t.index), "failed", o, reason, true);
  }

  void finish(TrialRecord& r, const std::string& status, const TrialOutcome& o, const std::string& error,
              bool journal) {
    r.status = status;
    r.outcome = o;
    if (status == "failed" && r.outcome.error.empty()) r.outcome.error = error;
    r.objective = config_.context.objective.evaluate(r);
    if (journal) {
      Json e{{"event", status == "ok" ? "finished" : "failed"}, {"trial", r.trial.index}, {"attempt", r.attempts},
             {"worker", r.worker}};
      if (status != "ok") e["error"] = r.outcome.error;
      e["outcome"] = o.to_json();
      e["t"] = now();
      journal_->append(e);
      finished_now_.push_back(r.trial.index);
    }
    searcher_->report(r);
  }

  void commit() {
    journal_->commit();
    if (options_.after_commit) options_.after_commit(journal_->committed());
    if (options_.on_trial_end)
      for (std::int64_t i : finished_now_) options_.on_trial_end(records_.at(i));
    finished_now_.clear();
  }

  std::size_t running() const {
    std::size_t k = 0;
    for (const auto& q : queue_) k += q.size();
    return k;
  }
  bool any_alive() const {
    for (bool a : alive_)
      if (a) return true;
    return false;
  }

  SearchResult result() const {
    SearchResult s;
    s.searcher = searcher_->describe();
    s.searcher_name = searcher_->name();
    s.sessions = sessions_;
    s.workers = channel_.workers();
    s.seconds = now();
    for (const auto& [i, r] : records_) {
      TrialRecord f = r;
      f.status = searcher_->final_status(r);
      s.trials.push_back(std::move(f));
    }
    const Objective& obj = config_.context.objective;
    const TrialRecord* best = nullptr;
    for (const TrialRecord& r : s.trials) {
      if (r.status == "failed" || !r.objective || !searcher_->competes(r)) continue;
      if (best == nullptr || obj.better(r.objective, best->objective)) best = &r;  // ties: the lower index
    }
    if (best != nullptr) s.best = best->trial.index;
    return s;
  }

  const TuneConfig& config_;
  MasterChannel& channel_;
  const MasterOptions& options_;
  std::unique_ptr<Searcher> searcher_;
  std::string journal_path_;
  std::optional<Journal> journal_;
  std::map<std::int64_t, TrialRecord> records_;
  std::map<std::int64_t, std::vector<std::string>> losses_;
  std::deque<Trial> pending_;
  std::vector<std::deque<Trial>> queue_;  // per worker: sent, not answered, in the order sent
  double mean_seconds_ = -1;              // moving mean of trial seconds (-1: none yet)
  std::vector<bool> alive_;
  std::vector<std::int64_t> finished_now_;
  Clock::time_point start_ = Clock::now();
  double offset_ = 0;
  int sessions_ = 1;
};

}  // namespace

SearchResult run_search(const TuneConfig& config, MasterChannel& channel, const MasterOptions& options) {
  return Master(config, channel, options).run();
}

}  // namespace magmadnn::tune
