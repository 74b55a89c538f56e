// tpcomm-bench --plot (bench/bench_plot.h): the SVG has a panel per mode and a line per backend
// with a point per measured size, left to right by size and higher for slower calls (log-log),
// names escaped; ranks sharing a GPU are labelled; what cannot be drawn is refused with a reason.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_args.h"
#include "bench/bench_plot.h"

namespace tpcomm::bench {
namespace {

Result res(const std::string& be, const std::string& mode, size_t bytes, double us,
           bool ok = true) {
  Result r;
  r.backend = be;
  r.mode = mode;
  r.bytes = bytes;
  r.median_us = us;
  r.ok = ok;
  return r;
}

// The points of the polyline drawn for `backend` in the panel of `mode`.
std::vector<std::pair<double, double>> points(const std::string& svg, const std::string& mode,
                                              const std::string& backend) {
  const size_t panel = svg.find("data-mode=\"" + mode + "\"");
  if (panel == std::string::npos) return {};
  const size_t line = svg.find("data-backend=\"" + backend + "\"", panel);
  const size_t at = svg.find("points=\"", line);
  if (line == std::string::npos || at == std::string::npos) return {};
  std::istringstream in(svg.substr(at + 8, svg.find('"', at + 8) - at - 8));
  std::vector<std::pair<double, double>> out;
  double x, y;
  char comma;
  while (in >> x >> comma >> y) out.push_back({x, y});
  return out;
}

TEST(BenchPlot, ALinePerBackendAPanelPerModeLogLog) {
  std::vector<Result> rs;
  for (const char* mode : {"eager", "graph"})
    for (size_t b = 1024; b <= (size_t{1} << 20); b *= 4) {
      const double k = static_cast<double>(b) / 1024;
      rs.push_back(res("auto", mode, b, 2 + k / 100));
      rs.push_back(res("nccl", mode, b, 8 + k / 50));
      rs.push_back(res("oneshot@lean=0", mode, b, 3 + k / 80, b < (size_t{1} << 20)));
    }
  const PlotInfo info{2, "1x NVIDIA H200", true, "bfloat16", "allreduce"};
  const std::string svg = plotSvg(info, rs);
  ASSERT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("ranks sharing one GPU"), std::string::npos);
  EXPECT_NE(svg.find("2 ranks, bfloat16, 1x NVIDIA H200"), std::string::npos);
  for (const char* mode : {"eager", "graph"}) {
    const auto a = points(svg, mode, "auto"), n = points(svg, mode, "nccl");
    ASSERT_EQ(a.size(), 6u) << mode;
    ASSERT_EQ(n.size(), 6u) << mode;
    for (size_t i = 0; i < a.size(); ++i) {
      if (i > 0) {
        EXPECT_GT(a[i].first, a[i - 1].first) << "sizes go left to right";
      }
      EXPECT_LT(n[i].second, a[i].second) << "NCCL is slower here, so higher (smaller y)";
      EXPECT_DOUBLE_EQ(n[i].first, a[i].first);
    }
    // The size that did not run is left out, not drawn as zero.
    EXPECT_EQ(points(svg, mode, "oneshot@lean=0").size(), 5u) << mode;
  }
  // Equal steps in log2(size) are equal steps in x.
  const auto a = points(svg, "graph", "auto");
  EXPECT_NEAR(a[1].first - a[0].first, a[5].first - a[4].first, 0.2);
}

TEST(BenchPlot, EscapesNamesAndRefusesWhatItCannotDraw) {
  std::vector<Result> rs = {res("a<b&\"c\"", "graph", 4096, 3.0), res("x", "graph", 8192, 4.0)};
  const std::string svg = plotSvg(PlotInfo{2, "2x GPU", false, "float32", "allreduce"}, rs);
  EXPECT_NE(svg.find("a&lt;b&amp;&quot;c&quot;"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  EXPECT_EQ(svg.find("sharing"), std::string::npos) << "one rank a GPU is not labelled shared";
  std::string why;
  EXPECT_FALSE(writePlot("/tmp/plot.png", PlotInfo{}, rs, &why));
  EXPECT_NE(why.find("SVG"), std::string::npos) << why;
  EXPECT_FALSE(writePlot("/tmp/plot.svg", PlotInfo{}, {res("a", "graph", 1024, 1.0, false)}, &why));
  EXPECT_NE(why.find("nothing was measured"), std::string::npos) << why;
  EXPECT_FALSE(writePlot("/nonexistent-dir/plot.svg", PlotInfo{}, rs, &why));
  EXPECT_NE(why.find("cannot open"), std::string::npos) << why;
}

TEST(BenchPlot, TheOptionTakesSvgOnly) {
  Args a;
  int code = 0;
  const char* good[] = {"tpcomm-bench", "--plot", "/tmp/out.svg"};
  ASSERT_TRUE(parseArgs(3, const_cast<char**>(good), &a, &code));
  EXPECT_EQ(a.plot, "/tmp/out.svg");
  Args b;
  const char* bad[] = {"tpcomm-bench", "--plot", "/tmp/out.png"};
  testing::internal::CaptureStderr();
  EXPECT_FALSE(parseArgs(3, const_cast<char**>(bad), &b, &code));
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 2);
}

}  // namespace
}  // namespace tpcomm::bench
