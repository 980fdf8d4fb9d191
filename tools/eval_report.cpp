#include "tools/eval_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace qdqrt::tools {
namespace {

std::string xml_escape(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    switch (c) {
      case '&': escaped += "&amp;"; break;
      case '<': escaped += "&lt;"; break;
      case '>': escaped += "&gt;"; break;
      case '"': escaped += "&quot;"; break;
      default: escaped += c;
    }
  }
  return escaped;
}

// Shortest readable form of a tick value ("0.5", "10", "1.25").
std::string tick_label(double value) {
  std::string text = fmt::format("{:.3f}", value);
  while (!text.empty() && text.back() == '0') text.pop_back();
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text == "-0" ? "0" : text;
}

}  // namespace

std::string format_eval_table(const EvalSummary& summary) {
  std::vector<std::string> header = {"model", "precision", "top-1 (%)", "top-5 (%)", "agreement (%)", "with",
                                     "latency b1 median (ms)", fmt::format("throughput b{} (img/s)", summary.batch)};
  std::vector<std::vector<std::string>> cells;
  for (const EvalRow& row : summary.rows) {
    cells.push_back({row.model, row.precision, fmt::format("{:.2f}", row.top1), fmt::format("{:.2f}", row.top5),
                     fmt::format("{:.2f}", row.agreement), row.baseline == row.model ? "itself" : row.baseline,
                     fmt::format("{:.3f}", row.latency_median_ms), fmt::format("{:.0f}", row.throughput)});
  }
  constexpr size_t kWithColumn = 5;
  std::vector<size_t> widths;
  for (const std::string& title : header) widths.push_back(title.size());
  for (const auto& line : cells) {
    for (size_t i = 0; i < line.size(); ++i) widths[i] = std::max(widths[i], line[i].size());
  }
  auto format_line = [&](const std::vector<std::string>& line) {
    std::string text;
    for (size_t i = 0; i < line.size(); ++i) {
      if (i > 0) text += " | ";
      // Names left-aligned, numbers right-aligned.
      bool name = i < 2 || i == kWithColumn;
      text += name ? fmt::format("{:<{}}", line[i], widths[i]) : fmt::format("{:>{}}", line[i], widths[i]);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    return text + "\n";
  };
  std::string table = format_line(header);
  std::string separator;
  for (size_t i = 0; i < widths.size(); ++i) separator += (i > 0 ? "-|-" : "") + std::string(widths[i], '-');
  table += separator + "\n";
  for (const auto& line : cells) table += format_line(line);
  return table;
}

nlohmann::ordered_json eval_to_json(const EvalSummary& summary) {
  nlohmann::ordered_json json;
  json["dataset"] = summary.dataset;
  json["images"] = summary.images;
  json["batch"] = summary.batch;
  json["threads"] = summary.threads;
  json["models"] = nlohmann::ordered_json::array();
  for (const EvalRow& row : summary.rows) {
    json["models"].push_back({{"model", row.model},
                              {"path", row.path},
                              {"precision", row.precision},
                              {"top1", row.top1},
                              {"top5", row.top5},
                              {"agreement", row.agreement},
                              {"agreementWith", row.baseline},
                              {"latencyMedianB1Ms", row.latency_median_ms},
                              {"throughputImgPerS", row.throughput}});
  }
  return json;
}

std::vector<double> linear_ticks(double low, double high, int target) {
  if (!(high > low)) return {low};
  double raw_step = (high - low) / std::max(target, 1);
  double magnitude = std::pow(10.0, std::floor(std::log10(raw_step)));
  double step = magnitude;
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    step = factor * magnitude;
    if (step >= raw_step) break;
  }
  std::vector<double> ticks;
  const double first = std::ceil(low / step - 1e-9);
  for (int k = 0; (first + k) * step <= high + step * 1e-9; ++k) ticks.push_back((first + k) * step);
  return ticks;
}

std::string eval_plot_svg(const EvalSummary& summary) {
  constexpr double kWidth = 720, kHeight = 480;
  constexpr double kLeft = 80, kRight = 40, kTop = 60, kBottom = 70;
  const double plot_width = kWidth - kLeft - kRight, plot_height = kHeight - kTop - kBottom;

  double min_latency = INFINITY, max_latency = 0, min_top1 = INFINITY, max_top1 = -INFINITY;
  for (const EvalRow& row : summary.rows) {
    double latency = std::max(row.latency_median_ms, 1e-6);
    min_latency = std::min(min_latency, latency);
    max_latency = std::max(max_latency, latency);
    min_top1 = std::min(min_top1, row.top1);
    max_top1 = std::max(max_top1, row.top1);
  }
  if (summary.rows.empty()) min_latency = 0.1, max_latency = 1, min_top1 = 0, max_top1 = 100;
  const bool log_x = max_latency > 10 * min_latency;

  // X range: decades on a log axis, else a padded linear range from nice ticks.
  double x_low, x_high;
  std::vector<double> x_ticks;
  if (log_x) {
    x_low = std::pow(10.0, std::floor(std::log10(min_latency)));
    x_high = std::pow(10.0, std::ceil(std::log10(max_latency)));
    for (double decade = x_low; decade <= x_high * 1.0001; decade *= 10) {
      for (double factor : {1.0, 2.0, 5.0}) {
        if (decade * factor <= x_high * 1.0001) x_ticks.push_back(decade * factor);
      }
    }
  } else {
    double pad = std::max((max_latency - min_latency) * 0.15, max_latency * 0.1);
    x_ticks = linear_ticks(std::max(0.0, min_latency - pad), max_latency + pad);
    x_low = std::min(x_ticks.front(), std::max(0.0, min_latency - pad));
    x_high = std::max(x_ticks.back(), max_latency + pad);
  }
  double y_pad = std::max((max_top1 - min_top1) * 0.15, 0.5);
  double y_low = std::max(0.0, min_top1 - y_pad), y_high = std::min(100.0, max_top1 + y_pad);
  std::vector<double> y_ticks = linear_ticks(y_low, y_high);
  y_low = std::min(y_low, y_ticks.front());
  y_high = std::max(y_high, y_ticks.back());

  auto x_of = [&](double latency) {
    double fraction = log_x ? (std::log10(std::max(latency, 1e-6)) - std::log10(x_low)) /
                                  (std::log10(x_high) - std::log10(x_low))
                            : (latency - x_low) / (x_high - x_low);
    return kLeft + fraction * plot_width;
  };
  auto y_of = [&](double top1) { return kTop + (1.0 - (top1 - y_low) / (y_high - y_low)) * plot_height; };

  std::string svg = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "  <rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n",
      kWidth, kHeight);
  svg += fmt::format("  <text x=\"{}\" y=\"28\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">"
                     "Top-1 accuracy vs latency (batch 1)</text>\n",
                     kWidth / 2);
  svg += fmt::format("  <text x=\"{}\" y=\"46\" text-anchor=\"middle\" fill=\"#555\">{} images of {}</text>\n",
                     kWidth / 2, summary.images, xml_escape(summary.dataset));
  // Grid lines and tick labels.
  svg += "  <g stroke=\"#ddd\" stroke-width=\"1\">\n";
  for (double tick : x_ticks) svg += fmt::format("    <line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>\n", x_of(tick), kTop, kTop + plot_height);
  for (double tick : y_ticks) svg += fmt::format("    <line x1=\"{1}\" y1=\"{0:.1f}\" x2=\"{2}\" y2=\"{0:.1f}\"/>\n", y_of(tick), kLeft, kLeft + plot_width);
  svg += "  </g>\n  <g text-anchor=\"middle\">\n";
  for (double tick : x_ticks) svg += fmt::format("    <text x=\"{:.1f}\" y=\"{}\">{}</text>\n", x_of(tick), kTop + plot_height + 18, tick_label(tick));
  svg += "  </g>\n  <g text-anchor=\"end\">\n";
  for (double tick : y_ticks) svg += fmt::format("    <text x=\"{}\" y=\"{:.1f}\">{}</text>\n", kLeft - 8, y_of(tick) + 4, tick_label(tick));
  svg += "  </g>\n";
  // Axes and their titles.
  svg += fmt::format("  <rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n", kLeft,
                     kTop, plot_width, plot_height);
  svg += fmt::format("  <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">latency, median at batch 1 (ms{})</text>\n",
                     kLeft + plot_width / 2, kHeight - 22, log_x ? ", log scale" : "");
  svg += fmt::format("  <text x=\"20\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 20 {0})\">"
                     "top-1 accuracy (%)</text>\n",
                     kTop + plot_height / 2);
  // One labelled point per model. Labels go right of their point (left of it in the right third, so
  // they stay inside) and are moved up or down in steps until they overlap no other label; a moved
  // label gets a thin leader line to its point.
  static constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                            "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  struct Box {
    double left, right, top, bottom;
  };
  std::vector<Box> placed;
  constexpr double kCharWidth = 6.6, kLineHeight = 14;
  for (size_t i = 0; i < summary.rows.size(); ++i) {
    const EvalRow& row = summary.rows[i];
    double x = x_of(row.latency_median_ms), y = y_of(row.top1);
    std::string text = fmt::format("{} ({}, {:.2f}%)", row.model, row.precision, row.top1);
    double width = kCharWidth * static_cast<double>(text.size());
    bool label_left = x > kLeft + plot_width * 0.66;
    double left = label_left ? x - 8 - width : x + 8;
    double baseline = y + 4;
    for (int step = 0; step < 40; ++step) {
      double offset = kLineHeight * ((step + 1) / 2) * (step % 2 == 1 ? -1 : 1);
      double candidate = y + 4 + offset;
      Box box{left, left + width, candidate - kLineHeight + 3, candidate + 3};
      bool overlaps = std::any_of(placed.begin(), placed.end(), [&](const Box& other) {
        return box.left < other.right && other.left < box.right && box.top < other.bottom && other.top < box.bottom;
      });
      if (!overlaps || step == 39) {
        baseline = candidate;
        placed.push_back(box);
        break;
      }
    }
    const char* color = kColors[i % std::size(kColors)];
    svg += fmt::format("  <g>\n    <title>{} ({}): top-1 {:.2f}%, {:.3f} ms</title>\n", xml_escape(row.model),
                       row.precision, row.top1, row.latency_median_ms);
    svg += fmt::format("    <circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\"/>\n", x, y, color);
    if (std::abs(baseline - (y + 4)) > 0.5) {
      double end_x = label_left ? left + width : left;
      svg += fmt::format("    <line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
                         "stroke-width=\"0.75\"/>\n",
                         x, y, end_x, baseline - 4, color);
    }
    svg += fmt::format("    <text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"start\" fill=\"{}\">{}</text>\n  </g>\n",
                       left, baseline, color, xml_escape(text));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace qdqrt::tools
