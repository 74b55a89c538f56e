#include "bench/bench_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "common/str_format.h"  // xmlEscape

namespace tpcomm::bench {
namespace {

// Panel geometry (SVG user units).
constexpr double kWidth = 760, kPanelHeight = 360, kLeft = 70, kRight = 190, kTop = 50,
                 kBottom = 50;
// Distinct colours for up to ten backends (then they repeat with a dash).
const char* const kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string fmt(const char* f, double a, double b = 0) {
  char buf[64];
  snprintf(buf, sizeof(buf), f, a, b);
  return buf;
}

std::string sizeLabel(double bytes) {
  const double k = 1024;
  if (bytes >= k * k * k) return fmt("%.0fG", bytes / (k * k * k));
  if (bytes >= k * k) return fmt("%.0fM", bytes / (k * k));
  if (bytes >= k) return fmt("%.0fK", bytes / k);
  return fmt("%.0f", bytes);
}

// One panel: the mode's results, its top edge at y0.
void panel(const std::string& mode, const std::vector<const Result*>& rs,
           const std::vector<std::string>& backends, double y0, std::string* out) {
  double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
  for (const Result* r : rs) {
    xmin = std::min(xmin, static_cast<double>(r->bytes));
    xmax = std::max(xmax, static_cast<double>(r->bytes));
    ymin = std::min(ymin, r->median_us);
    ymax = std::max(ymax, r->median_us);
  }
  const double lx0 = std::log2(xmin), lx1 = std::max(std::log2(xmax), lx0 + 1);
  const double ly0 = std::floor(std::log10(ymin)),
               ly1 = std::max(std::ceil(std::log10(ymax)), ly0 + 1);
  const double pw = kWidth - kLeft - kRight, ph = kPanelHeight - kTop - kBottom;
  const auto X = [&](double bytes) { return kLeft + (std::log2(bytes) - lx0) / (lx1 - lx0) * pw; };
  const auto Y = [&](double us) {
    return y0 + kTop + ph - (std::log10(us) - ly0) / (ly1 - ly0) * ph;
  };
  *out += "<g class=\"panel\" data-mode=\"" + xmlEscape(mode) + "\">\n";
  *out += "<text x=\"" + fmt("%.1f", kLeft) + "\" y=\"" + fmt("%.1f", y0 + kTop - 12) +
          "\" font-size=\"14\" font-weight=\"bold\">" + xmlEscape(mode) + " mode</text>\n";
  *out += "<rect x=\"" + fmt("%.1f", kLeft) + "\" y=\"" + fmt("%.1f", y0 + kTop) + "\" width=\"" +
          fmt("%.1f", pw) + "\" height=\"" + fmt("%.1f", ph) +
          "\" fill=\"none\" stroke=\"#444\"/>\n";
  // Grid: every power of two of the sizes measured (labelled every other one where crowded), every
  // decade of time with 2x and 5x minor lines.
  const int xsteps = static_cast<int>(lx1 - lx0);
  for (int i = 0; i <= xsteps; ++i) {
    const double b = std::exp2(lx0 + i), x = X(b);
    *out += "<line x1=\"" + fmt("%.1f", x) + "\" y1=\"" + fmt("%.1f", y0 + kTop) + "\" x2=\"" +
            fmt("%.1f", x) + "\" y2=\"" + fmt("%.1f", y0 + kTop + ph) + "\" stroke=\"#ddd\"/>\n";
    if (xsteps <= 12 || i % 2 == 0)
      *out += "<text x=\"" + fmt("%.1f", x) + "\" y=\"" + fmt("%.1f", y0 + kTop + ph + 16) +
              "\" font-size=\"11\" text-anchor=\"middle\">" + sizeLabel(b) + "</text>\n";
  }
  for (double d = ly0; d <= ly1; d += 1)
    for (double m : {1.0, 2.0, 5.0}) {
      const double us = m * std::pow(10.0, d);
      if (std::log10(us) > ly1 + 1e-9) break;
      const double y = Y(us);
      *out += "<line x1=\"" + fmt("%.1f", kLeft) + "\" y1=\"" + fmt("%.1f", y) + "\" x2=\"" +
              fmt("%.1f", kLeft + pw) + "\" y2=\"" + fmt("%.1f", y) + "\" stroke=\"" +
              (m == 1.0 ? "#ccc" : "#eee") + "\"/>\n";
      *out += "<text x=\"" + fmt("%.1f", kLeft - 6) + "\" y=\"" + fmt("%.1f", y + 4) +
              "\" font-size=\"11\" text-anchor=\"end\">" + fmt(us < 1 ? "%.1f" : "%.0f", us) +
              "</text>\n";
    }
  *out += "<text x=\"" + fmt("%.1f", kLeft + pw / 2) + "\" y=\"" +
          fmt("%.1f", y0 + kPanelHeight - 12) +
          "\" font-size=\"12\" text-anchor=\"middle\">message size (bytes)</text>\n";
  *out += "<text transform=\"translate(18," + fmt("%.1f", y0 + kTop + ph / 2) +
          ") rotate(-90)\" font-size=\"12\" text-anchor=\"middle\">us per call (median)</text>\n";
  for (size_t i = 0; i < backends.size(); ++i) {
    std::string pts;
    for (const Result* r : rs)
      if (r->backend == backends[i])
        pts += fmt("%.1f,%.1f ", X(static_cast<double>(r->bytes)), Y(r->median_us));
    if (pts.empty()) continue;
    const std::string colour = kColours[i % 10];
    const bool nccl = backends[i] == "nccl";
    *out += "<polyline class=\"series\" data-backend=\"" + xmlEscape(backends[i]) +
            "\" fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"" + (nccl ? "2.5" : "1.8") +
            "\"" + (i >= 10 || nccl ? " stroke-dasharray=\"6,3\"" : "") + " points=\"" + pts +
            "\"/>\n";
    const double ly = y0 + kTop + 14 + 18 * static_cast<double>(i);
    *out += "<line x1=\"" + fmt("%.1f", kLeft + pw + 12) + "\" y1=\"" + fmt("%.1f", ly - 4) +
            "\" x2=\"" + fmt("%.1f", kLeft + pw + 36) + "\" y2=\"" + fmt("%.1f", ly - 4) +
            "\" stroke=\"" + colour + "\" stroke-width=\"2\"/>\n";
    *out += "<text x=\"" + fmt("%.1f", kLeft + pw + 42) + "\" y=\"" + fmt("%.1f", ly) +
            "\" font-size=\"11\">" + xmlEscape(backends[i]) + "</text>\n";
  }
  *out += "</g>\n";
}

}  // namespace

std::string plotSvg(const PlotInfo& info, const std::vector<Result>& rs) {
  std::vector<std::string> modes, backends;
  std::map<std::string, std::vector<const Result*>> by_mode;
  for (const Result& r : rs) {
    if (!r.ok || !(r.median_us > 0) || r.bytes == 0) continue;
    if (std::find(modes.begin(), modes.end(), r.mode) == modes.end()) modes.push_back(r.mode);
    if (std::find(backends.begin(), backends.end(), r.backend) == backends.end())
      backends.push_back(r.backend);
    by_mode[r.mode].push_back(&r);
  }
  if (modes.empty()) return "";
  const double height = 40 + kPanelHeight * static_cast<double>(modes.size());
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", kWidth) +
         "\" height=\"" + fmt("%.0f", height) + "\" viewBox=\"0 0 " +
         fmt("%.0f %.0f", kWidth, height) + "\" font-family=\"sans-serif\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  std::string title = "tpcomm-bench: " + info.collective + ", " + std::to_string(info.ranks) +
                      " ranks, " + info.dtype + ", " + info.machine;
  if (info.ranks_share_gpu) title += " (ranks sharing one GPU: launch and protocol cost, no link)";
  out += "<text x=\"10\" y=\"24\" font-size=\"14\">" + xmlEscape(title) + "</text>\n";
  for (size_t m = 0; m < modes.size(); ++m)
    panel(modes[m], by_mode[modes[m]], backends, 30 + kPanelHeight * static_cast<double>(m), &out);
  out += "</svg>\n";
  return out;
}

bool writePlot(const std::string& path, const PlotInfo& info, const std::vector<Result>& rs,
               std::string* why) {
  if (path.size() < 4 || path.compare(path.size() - 4, 4, ".svg") != 0) {
    *why = path + ": --plot writes SVG; name the file *.svg (a browser opens it)";
    return false;
  }
  const std::string svg = plotSvg(info, rs);
  if (svg.empty()) {
    *why = "nothing was measured, so there is nothing to plot";
    return false;
  }
  FILE* f = fopen(path.c_str(), "w");
  if (!f) {
    *why = path + ": cannot open for writing";
    return false;
  }
  const bool ok = fwrite(svg.data(), 1, svg.size(), f) == svg.size();
  if (fclose(f) != 0 || !ok) {
    *why = path + ": write failed";
    return false;
  }
  return true;
}

}  // namespace tpcomm::bench
