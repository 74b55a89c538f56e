// `tpcomm doctor --html`: the same report as a page to look at. The findings first, coloured by
// severity with their fixes, then each section of the text report (System, GPUs, coverage, links,
// fabric probe, policy preview, NCCL, environment) under its heading, its aligned table kept as
// it is. Self-contained (inline style, no script), so it can be mailed or attached to a ticket.
#include <string>
#include <vector>

#include "common/str_format.h"  // xmlEscape
#include "tools/doctor/doctor_render.h"

namespace tpcomm::cli {
namespace {

const char* kStyle =
    "body{font-family:sans-serif;margin:2em;max-width:72em}"
    "pre{background:#f6f8fa;padding:.8em;overflow-x:auto;font-size:.85em}"
    ".finding{padding:.5em .8em;margin:.4em 0;border-left:.4em solid}"
    ".note{border-color:#2b7bb9;background:#eef5fb}.warning{border-color:#d98c00;"
    "background:#fdf5e6}.error{border-color:#c0392b;background:#fbeeee}"
    ".fatal{border-color:#7b0000;background:#f5dada}.fix{color:#333;margin-top:.3em}";

}  // namespace

std::string doctorHtml(const DoctorFacts& f, const std::vector<Finding>& findings) {
  std::string out = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">";
  out += "<title>tpcomm doctor</title><style>" + std::string(kStyle) + "</style></head><body>\n";
  out += "<h1>tpcomm doctor</h1>\n<h2>Findings</h2>\n";
  if (findings.empty()) out += "<p>none</p>\n";
  for (const Finding& x : findings) {
    const std::string sev = severityName(x.severity);
    out += "<div class=\"finding " + sev + "\"><b>" + xmlEscape(sev) + "</b>: " + xmlEscape(x.what);
    if (!x.fix.empty()) out += "<div class=\"fix\">fix: " + xmlEscape(x.fix) + "</div>";
    out += "</div>\n";
  }
  // The text report's sections: a line that starts in column 0 is a heading, the indented lines
  // up to the next heading its body. Its own findings section is replaced by the one above.
  const std::string text = doctorText(f, findings);
  std::string heading, body;
  const auto flush = [&] {
    if (heading.empty() || heading == "Findings") {
    } else if (body.empty()) {  // the report's first line: the version
      out += "<p>" + xmlEscape(heading) + "</p>\n";
    } else {
      out += "<h2>" + xmlEscape(heading) + "</h2>\n<pre>" + xmlEscape(body) + "</pre>\n";
    }
    body.clear();
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line[0] != ' ') {
      flush();
      heading = line;
    } else if (!line.empty()) {
      body += line + "\n";
    }
  }
  flush();
  out += "</body></html>\n";
  return out;
}

}  // namespace tpcomm::cli
