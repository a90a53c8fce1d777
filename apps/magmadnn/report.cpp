#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>

#include "base64.h"
#include "page_format.h"
#include "png.h"

namespace magmadnn::cli {
namespace {

const char* const kTrainColor = "#1f77b4";
const char* const kValColor = "#e6550d";
const char* const kTestColor = "#2ca02c";  // test_every_epoch only

// Numbers as the page writes them (the formats in report.h) and the summary
// and config read leniently: an in-progress page has little.
using page::count_of;
using page::fixed4;
using page::fmt;
using page::grouped;
using page::member;
using page::mib;
using page::number;
using page::percent;
using page::printf1;
using page::seconds;
using page::text;
std::string printf_g(int digits, double v) {  // unlike fmt, writes nan and inf as they are
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string class_name(const ReportInput& in, std::int64_t c) {
  return c >= 0 && c < static_cast<std::int64_t>(in.class_names.size()) ? in.class_names[static_cast<std::size_t>(c)]
                                                                         : std::to_string(c);
}

// ---- headline ----------------------------------------------------------------------

struct Card {
  std::string label, value, note;
  std::string extra_html;  // already HTML
  std::string css_class;
};

std::string card_html(const Card& c) {
  std::ostringstream o;
  o << "<div class=\"card" << (c.css_class.empty() ? "" : " " + c.css_class) << "\"><div class=\"label\">"
    << html_escape(c.label) << "</div><div class=\"value\">" << html_escape(c.value) << "</div>";
  if (!c.note.empty()) o << "<div class=\"note\">" << html_escape(c.note) << "</div>";
  o << c.extra_html << "</div>\n";
  return o.str();
}

// Peak resident memory next to the parts training must hold, as two bars on
// one scale, so "how much more than needed" is seen rather than computed.
Card memory_card(const Json& m) {
  const double peak = number(m, "peak_rss_bytes");
  const struct {
    const char* key;
    const char* name;
    const char* color;
  } parts[] = {{"dataset_bytes", "data", "#6baed6"},
               {"parameter_bytes", "parameters", "#31a354"},
               {"gradient_bytes", "gradients", "#fd8d3c"},
               {"optimizer_state_bytes", "optimizer state", "#9e9ac8"}};
  double need = 0;
  for (const auto& p : parts) need += std::isfinite(number(m, p.key)) ? number(m, p.key) : 0.0;
  const double scale = std::max({std::isfinite(peak) ? peak : 0.0, need, 1.0});
  auto width = [&](double v) { return printf1("%.1f%%", 100.0 * std::max(0.0, v) / scale); };

  std::ostringstream bars;
  bars << "<div class=\"membar\" title=\"training needs " << mib(need) << "\">";
  for (const auto& p : parts) {
    const double v = number(m, p.key);
    if (!(v > 0)) continue;
    bars << "<span style=\"width:" << width(v) << ";background:" << p.color << "\" title=\"" << p.name << ' '
         << mib(v) << "\"></span>";
  }
  bars << "</div><div class=\"membar peak\" title=\"peak " << mib(peak) << "\"><span style=\"width:" << width(peak)
       << "\"></span></div><div class=\"legend\">";
  for (const auto& p : parts) {
    const double v = number(m, p.key);
    if (!std::isfinite(v)) continue;
    bars << "<span><i style=\"background:" << p.color << "\"></i>" << p.name << ' ' << mib(v) << "</span> ";
  }
  // The peak is either training's own (reset before fit) or the whole process's.
  const std::string scope = text(m, "peak_rss_scope");
  bars << "<span><i class=\"peak\"></i>peak"
       << (scope == "training" ? " (during training)" : scope == "process" ? " (whole process)" : "") << "</span></div>";
  std::string note = "training needs " + mib(need);
  if (need > 0 && std::isfinite(peak)) note += " (peak " + printf1("%.2f", peak / need) + "x)";
  return {"Peak memory", mib(peak), note, bars.str(), "memory"};
}

std::string headline(const ReportInput& in) {
  const Json& s = in.summary;
  const model::EpochRecord* last = in.history.empty() ? nullptr : &in.history.back();
  std::vector<Card> cards;
  if (in.test) {
    const model::Evaluation& ev = in.test->evaluation;
    cards.push_back({"Test accuracy", percent(ev.accuracy), count_of(ev.samples, "test sample", "test samples"), "",
                     "accent"});
    std::string loss = text(in.config, "loss");  // e.g. cross_entropy
    std::replace(loss.begin(), loss.end(), '_', ' ');
    cards.push_back({"Test loss", fixed4(ev.loss), loss, "", ""});
  } else {
    const double total = number(in.config, "epochs");
    std::string where = last ? "epoch " + std::to_string(last->epoch) : "starting";
    if (last && std::isfinite(total)) where += " of " + grouped(total);
    cards.push_back({"Training", where, "test results follow the last epoch", "", "accent"});
    if (last && std::isfinite(last->val_accuracy)) {
      cards.push_back({"Validation accuracy", percent(last->val_accuracy), "epoch " + std::to_string(last->epoch), "",
                       ""});
    } else if (last) {
      cards.push_back({"Train accuracy", percent(last->train_accuracy), "epoch " + std::to_string(last->epoch), "",
                       ""});
    }
  }

  double train_s = number(s, "train_seconds");
  std::string time_label = "Training time";
  if (!std::isfinite(train_s) && last) {
    train_s = 0;
    for (const auto& r : in.history) train_s += r.seconds;
    time_label = "Training time so far";
  }
  if (std::isfinite(train_s)) {
    std::string note = count_of(static_cast<std::int64_t>(in.history.size()), "epoch", "epochs");
    if (std::isfinite(number(s, "wall_seconds"))) note += ", wall " + seconds(number(s, "wall_seconds"));
    cards.push_back({time_label, seconds(train_s), note, "", ""});
  }

  double sps = number(s, "samples_per_second");
  std::string sps_note;
  if (std::isfinite(number(s, "train_samples"))) {
    sps_note = grouped(number(s, "train_samples")) + " training samples per epoch";
  }
  if (!std::isfinite(sps) && last) {
    sps = last->samples_per_second;
    sps_note = "epoch " + std::to_string(last->epoch);
  }
  if (std::isfinite(sps)) cards.push_back({"Samples/s", grouped(sps), sps_note, "", ""});

  if (member(s, "memory").is_object()) cards.push_back(memory_card(member(s, "memory")));

  const std::string device = text(s, "device");
  if (!device.empty()) {
    const double threads = number(s, "threads");
    cards.push_back({"Device", device,
                     std::isfinite(threads) ? count_of(static_cast<std::int64_t>(threads), "thread", "threads") : "",
                     "", ""});
  }
  std::ostringstream o;
  o << "<section class=\"cards\" aria-label=\"headline\">\n";
  for (const auto& c : cards) o << card_html(c);
  o << "</section>\n";
  return o.str();
}

// One line under the title: what was trained, on what, how.
std::string subtitle(const ReportInput& in) {
  std::vector<std::string> parts;
  const std::string dataset = text(member(in.config, "data"), "dataset");
  if (dataset == "synthetic") {
    parts.push_back("synthetic data (seeded random images and labels: speed only, the accuracy means nothing)");
  } else if (!dataset.empty()) {
    parts.push_back(dataset);
  }
  if (std::isfinite(number(in.summary, "parameters"))) {
    parts.push_back(grouped(number(in.summary, "parameters")) + " parameters");
  }
  if (std::isfinite(number(in.config, "epochs"))) {
    parts.push_back(count_of(static_cast<std::int64_t>(number(in.config, "epochs")), "epoch", "epochs"));
  }
  if (std::isfinite(number(in.config, "batch_size"))) {
    parts.push_back("batch " + grouped(number(in.config, "batch_size")));
  }
  const Json& opt = member(in.config, "optimizer");
  if (!text(opt, "type").empty()) {
    parts.push_back(text(opt, "type") + ", learning rate " + fmt(number(opt, "learning_rate")));
  }
  if (std::isfinite(number(in.config, "seed"))) parts.push_back("seed " + grouped(number(in.config, "seed")));
  std::string line;
  for (const auto& p : parts) line += (line.empty() ? "" : " \xc2\xb7 ") + p;  // U+00B7 middle dot
  return line.empty() ? "" : "<p class=\"sub\">" + html_escape(line) + "</p>\n";
}

// ---- curves and epochs ---------------------------------------------------------------

std::string curves(const ReportInput& in) {
  std::vector<double> ep, tl, vl, ta, va, secs;
  for (const auto& r : in.history) {
    ep.push_back(r.epoch);
    tl.push_back(r.train_loss);
    vl.push_back(r.val_loss);
    ta.push_back(r.train_accuracy);
    va.push_back(r.val_accuracy);
    secs.push_back(r.seconds);
  }
  std::vector<Series> loss = {{"train loss", kTrainColor, false, ep, tl},
                              {"validation loss", kValColor, true, ep, vl}};
  std::vector<Series> accuracy = {{"train accuracy", kTrainColor, false, ep, ta},
                                  {"validation accuracy", kValColor, true, ep, va}};
  if (!in.test_curve.empty()) {
    Series test_loss{"test loss", kTestColor, true, {}, {}}, test_accuracy{"test accuracy", kTestColor, true, {}, {}};
    for (const auto& t : in.test_curve) {
      test_loss.x.push_back(t.epoch);
      test_loss.y.push_back(t.loss);
      test_accuracy.x.push_back(t.epoch);
      test_accuracy.y.push_back(t.accuracy);
    }
    loss.push_back(std::move(test_loss));
    accuracy.push_back(std::move(test_accuracy));
  }
  std::ostringstream o;
  o << "<h2>Training curves</h2>\n";
  if (in.history.empty()) o << "<p>No epoch has finished yet.</p>\n";
  o << "<div class=\"grid2\">\n<div class=\"panel\">" << svg_line_chart("Loss per epoch", "epoch", "loss", loss)
    << "</div>\n<div class=\"panel\">" << svg_line_chart("Accuracy per epoch", "epoch", "accuracy", accuracy)
    << "</div>\n<div class=\"panel\">"
    << svg_bar_chart("Time per epoch", "epoch", "seconds", "#756bb1", ep, secs) << "</div>\n";

  o << "<div class=\"panel scroll epochs-box\"><table class=\"epochs\">\n<thead><tr><th>epoch</th><th>train "
       "loss</th><th>train accuracy</th><th>val loss</th><th>val accuracy</th><th>learning rate</th>"
       "<th>seconds</th><th>samples/s</th></tr></thead>\n<tbody>\n";
  for (const auto& r : in.history) {
    o << "<tr><td>" << r.epoch << "</td><td>" << fmt(r.train_loss) << "</td><td>" << fmt(r.train_accuracy)
      << "</td><td>" << fmt(r.val_loss) << "</td><td>" << fmt(r.val_accuracy) << "</td><td>"
      << fmt(r.learning_rate) << "</td><td>" << fmt(r.seconds) << "</td><td>" << grouped(r.samples_per_second)
      << "</td></tr>\n";
  }
  o << "</tbody></table></div>\n</div>\n";
  return o.str();
}

// ---- test set ----------------------------------------------------------------------------

// A cell's colour: blue for the correct predictions, orange for confusions,
// deeper with the cell's share of its true class (confusions are rarer, so
// their scale is stretched to stay visible).
std::string cell_style(bool diagonal, double share) {
  if (!(share > 0)) return "";
  const double alpha = diagonal ? 0.12 + 0.88 * share : 0.12 + 0.88 * std::min(1.0, 4 * share);
  const char* rgb = diagonal ? "31,119,180" : "230,85,13";
  return " style=\"background:rgba(" + std::string(rgb) + "," + printf1("%.2f", alpha) + ")" +
         (alpha > 0.55 ? ";color:#fff" : "") + "\"";
}

std::string confusion_table(const ReportInput& in, const model::ConfusionMatrix& cm) {
  std::ostringstream o;
  o << "<div class=\"scroll panel\"><table class=\"confusion\">\n<caption>Rows: true class; columns: predicted "
       "class; colour: share of the row</caption>\n<thead><tr><th class=\"corner\">true &darr; / predicted "
       "&rarr;</th>";
  for (std::int64_t p = 0; p < cm.classes; ++p) o << "<th scope=\"col\">" << html_escape(class_name(in, p)) << "</th>";
  o << "<th scope=\"col\">samples</th><th scope=\"col\">accuracy</th></tr></thead>\n<tbody>\n";
  for (std::int64_t t = 0; t < cm.classes; ++t) {
    const std::int64_t total = cm.class_total(t);
    o << "<tr><th scope=\"row\">" << html_escape(class_name(in, t)) << "</th>";
    for (std::int64_t p = 0; p < cm.classes; ++p) {
      const std::int64_t n = cm(t, p);
      const double share = total > 0 ? static_cast<double>(n) / static_cast<double>(total) : 0.0;
      o << "<td class=\"cell" << (n == 0 ? " zero" : "") << "\"" << cell_style(t == p, share) << " title=\"true "
        << html_escape(class_name(in, t)) << ", predicted " << html_escape(class_name(in, p)) << ": " << n << " ("
        << percent(share) << ")\">" << n << "</td>";
    }
    const double acc = cm.class_accuracy(t);
    o << "<td>" << grouped(static_cast<double>(total)) << "</td><td class=\"acc\"><span class=\"accbar\"><span "
      << "style=\"width:" << printf1("%.1f%%", std::isfinite(acc) ? 100 * acc : 0.0) << "\"></span></span>"
      << percent(acc) << "</td></tr>\n";
  }
  o << "</tbody></table></div>\n";
  return o.str();
}

std::string image_data_uri(const LabelledImage& im) {
  std::vector<std::uint8_t> grey(im.pixels.size());
  for (std::size_t i = 0; i < grey.size(); ++i) {
    const float v = std::isfinite(im.pixels[i]) ? std::clamp(im.pixels[i], 0.0f, 1.0f) : 0.0f;
    grey[i] = static_cast<std::uint8_t>(std::lround(v * 255.0f));
  }
  return "data:image/png;base64," +
         base64_encode(encode_png_gray8(grey, static_cast<int>(im.width), static_cast<int>(im.height)));
}

std::string misclassified_grid(const ReportInput& in, const TestResults& t) {
  std::ostringstream o;
  o << "<h3>Misclassified test images</h3>\n";
  if (t.misclassified_total == 0) {
    o << "<p>Every test image was classified correctly.</p>\n";
    return o.str();
  }
  if (t.misclassified.empty()) {
    o << "<p>" << count_of(t.misclassified_total, "misclassified image", "misclassified images")
      << "; the inputs are not single-channel images, so none is drawn.</p>\n";
    return o.str();
  }
  o << "<p class=\"note\">" << grouped(static_cast<double>(t.misclassified.size())) << " of "
    << count_of(t.misclassified_total, "misclassified image", "misclassified images")
    << ", taken in turns from each true class.</p>\n";
  o << "<div class=\"gallery\">\n";
  for (const auto& im : t.misclassified) {
    if (im.width <= 0 || im.height <= 0 || im.pixels.size() != static_cast<std::size_t>(im.width * im.height)) {
      continue;
    }
    const std::string truth = class_name(in, im.true_class), pred = class_name(in, im.predicted_class);
    o << "<figure><img src=\"" << image_data_uri(im) << "\" width=\"" << im.width * 3 << "\" height=\""
      << im.height * 3 << "\" alt=\"test image " << im.index << ": " << html_escape(truth) << " predicted as "
      << html_escape(pred) << "\"><figcaption><span class=\"truth\">" << html_escape(truth)
      << "</span><span class=\"pred\">&rarr; " << html_escape(pred) << "</span><span class=\"idx\">test #" << im.index
      << "</span></figcaption></figure>\n";
  }
  o << "</div>\n";
  return o.str();
}

std::string test_section(const ReportInput& in) {
  std::ostringstream o;
  o << "<h2>Test set</h2>\n";
  if (!in.test) {
    o << "<p>The confusion matrix and the misclassified images appear once training has finished and the test set "
         "is evaluated.</p>\n";
    return o.str();
  }
  o << confusion_table(in, in.test->confusion) << misclassified_grid(in, *in.test);
  return o.str();
}

// ---- folded away ---------------------------------------------------------------------------

// Nested objects become dotted keys, so every value is one short table cell.
void flatten(const Json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& rows) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) flatten(value, prefix.empty() ? key : prefix + "." + key, rows);
    return;
  }
  rows.emplace_back(prefix, j.is_string()         ? j.get<std::string>()
                            : j.is_number_float() ? printf_g(6, j.get<double>())
                                                  : j.dump());
}

std::string folded(const ReportInput& in) {
  std::ostringstream o;
  o << "<h2>Details</h2>\n<details><summary>All summary values (summary.json)</summary>\n<table class=\"kv\">\n";
  std::vector<std::pair<std::string, std::string>> rows;
  if (in.summary.is_object()) flatten(in.summary, "", rows);
  for (const auto& [k, v] : rows) o << "<tr><th>" << html_escape(k) << "</th><td>" << html_escape(v) << "</td></tr>\n";
  o << "</table>\n</details>\n<details><summary>Config</summary>\n<pre class=\"config\">"
    << html_escape(in.config.dump(2)) << "</pre>\n</details>\n";
  return o.str();
}

const char* const kStyle =
    "*{box-sizing:border-box}\n"
    "body{margin:0;font:14px/1.4 sans-serif;color:#222;background:#f3f4f6}\n"
    "main{max-width:1160px;margin:0 auto;padding:20px 24px 40px}\n"
    "h1{font-size:22px;margin:0 0 4px;overflow-wrap:anywhere}h2{font-size:18px;margin:28px 0 10px}"
    "h3{font-size:15px;margin:20px 0 6px}\n"
    ".sub{color:#555;margin:0 0 16px;overflow-wrap:anywhere}.note{color:#555;font-size:12px}\n"
    ".cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(140px,1fr));gap:12px}\n"
    "@media (min-width:700px){.card.memory{grid-column:span 2}}\n"
    ".card{background:#fff;border:1px solid #d8dbe0;border-radius:8px;padding:10px 14px;min-width:0;"
    "overflow-wrap:anywhere}\n"
    ".card.accent{border-top:4px solid #1f77b4}\n"
    ".card .label{font-size:12px;color:#666;text-transform:uppercase;letter-spacing:.04em}\n"
    ".card .value{font-size:26px;font-weight:600;margin:2px 0}\n"
    ".card .note{font-size:12px;color:#555;text-wrap:balance}\n"
    ".membar{display:flex;height:8px;margin-top:6px;background:#eee;border-radius:2px;overflow:hidden}\n"
    ".membar span{display:block;height:100%}.membar.peak span{background:#555}\n"
    ".card .legend{font-size:11px;color:#555;margin-top:4px}\n"
    ".legend span{white-space:nowrap;margin-right:6px}.legend i{display:inline-block;width:8px;height:8px;"
    "margin-right:3px;vertical-align:middle}.legend i.peak{background:#555}\n"
    ".grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:14px}\n"
    ".panel{background:#fff;border:1px solid #d8dbe0;border-radius:8px;padding:6px;min-width:0}\n"
    "svg.chart{display:block;width:100%;height:auto}\n"
    ".chart text{font-size:12px;fill:#222}.chart .title{font-size:14px;font-weight:bold}\n"
    ".chart .label{font-size:13px}.chart .grid{stroke:#e4e4e4}\n"
    ".scroll{overflow:auto;max-width:100%}.epochs-box{max-height:344px}\n"
    "table{border-collapse:collapse;background:#fff}\n"
    "td,th{border:1px solid #d0d0d0;padding:3px 8px;text-align:right}th{background:#eef0f3}\n"
    ".epochs{width:100%;font-size:12px}.epochs td,.epochs th{padding:2px 5px}\n"
    ".confusion caption{text-align:left;padding:4px 2px;color:#555;font-size:12px}\n"
    ".confusion th{font-weight:600;font-size:12px}.confusion thead th{vertical-align:bottom;max-width:90px}\n"
    ".confusion tbody th{text-align:left;white-space:nowrap}\n"
    ".confusion td.cell{min-width:46px;text-align:center}.confusion td.zero{color:#bbb}\n"
    ".confusion td.acc{white-space:nowrap;text-align:left}\n"
    ".accbar{display:inline-block;width:60px;height:8px;background:#eee;margin-right:6px;vertical-align:middle}\n"
    ".accbar span{display:block;height:100%;background:#1f77b4}\n"
    ".gallery{display:grid;grid-template-columns:repeat(auto-fill,minmax(104px,1fr));gap:10px}\n"
    "figure{margin:0;background:#fff;border:1px solid #d8dbe0;border-radius:6px;padding:6px;text-align:center;"
    "min-width:0}\n"
    "figure img{image-rendering:pixelated;max-width:100%;height:auto;background:#000}\n"
    "figcaption{font-size:12px;line-height:1.3;overflow-wrap:anywhere}\n"
    "figcaption span{display:block}.truth{font-weight:600}.pred{color:#c0392b}.idx{color:#999;font-size:11px}\n"
    "details{background:#fff;border:1px solid #d8dbe0;border-radius:8px;padding:8px 12px;margin:8px 0}\n"
    "summary{cursor:pointer;font-weight:600}\n"
    ".kv{margin-top:8px;max-width:100%}.kv th{text-align:left}.kv td{text-align:left;overflow-wrap:anywhere}\n"
    "pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:12px;margin:8px 0 0}\n"
    "@media print{body{background:#fff}.scroll{overflow:visible;max-height:none}"
    ".card,.panel,figure{break-inside:avoid}.confusion td,.confusion th{padding:2px 3px;font-size:10px}}\n";

}  // namespace

std::string render_report(const ReportInput& in) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>magmadnn run: "
    << html_escape(in.title) << "</title>\n<style>\n"
    << kStyle << "</style>\n</head>\n<body>\n<main>\n<h1>magmadnn run: " << html_escape(in.title) << "</h1>\n"
    << subtitle(in) << headline(in) << curves(in) << test_section(in) << folded(in) << "</main>\n</body>\n</html>\n";
  return o.str();
}

}  // namespace magmadnn::cli
