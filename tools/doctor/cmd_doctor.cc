// `tpcomm doctor`: the command a user runs on a new box before trusting it. Gathers the facts
// (doctor_facts.cc), judges them (doctor_findings.h), prints them (doctor_text.cc, doctor_json.cc).
// Exit status: 0 all good, 1 something keeps tpcomm from full speed, 2 no driver / no GPU (or a
// usage error).
#include <cstdio>
#include <string>

#include "common/json.h"
#include "tools/commands.h"
#include "tools/doctor/doctor_facts.h"
#include "tools/doctor/doctor_findings.h"
#include "tools/doctor/doctor_render.h"

namespace tpcomm::cli {
namespace {

constexpr int kExitUsage = 2;

void usage(FILE* out) {
  fprintf(out,
          "usage: tpcomm doctor [--json | --html] [--retest-p2p] [--reprobe] [--no-probe] [--env]\n"
          "                     [--topology FILE] [--probe FILE]\n"
          "\n"
          "Checks this machine before you trust it: NVIDIA driver and CUDA runtime, every GPU\n"
          "(name, cc, PCI bus id, NUMA node, UUID), this build's architecture coverage against\n"
          "each GPU (the inspector, run on this executable and on libtpcomm.so), every GPU pair\n"
          "(NVLinks, PCIe path, P2P supported, P2P working), the fabric probe (SM stores, SM\n"
          "loads, copy engines and latency per pair and with all pairs at once, and pinned host\n"
          "memory; its verdict, e.g. write collapse), the algorithm the policy would pick\n"
          "for 1 KiB .. 64 MiB at each world size (and which tuning table it uses) and the\n"
          "kernel of the fused all-reduce + add + RMSNorm at 1 .. 1024 tokens, NCCL, and the\n"
          "TPCOMM_* variables that are set.\n"
          "\n"
          "  --json           machine-readable output (keys in docs/DOCTOR.md)\n"
          "  --html           the report as a self-contained HTML page (tpcomm doctor --html >\n"
          "                   doctor.html): findings coloured by severity, then each section\n"
          "  --retest-p2p     test P2P between every pair again instead of trusting the cache\n"
          "  --reprobe        run the fabric probe again instead of trusting its cache\n"
          "  --no-probe       no fabric probe (nor its cached result)\n"
          "  --env            list every TPCOMM_* variable with its default and meaning\n"
          "  --topology FILE  judge a topology dump (tpcomm doctor --json's \"topology\", or\n"
          "                   docs/TOPOLOGY.md) instead of this machine's GPUs\n"
          "  --probe FILE     take this fabric probe (tpcomm doctor --json's \"fabric_probe\"\n"
          "                   \"probe\", the cache's format) instead of measuring: the verdict\n"
          "                   and the policy preview for a fabric that probes so\n"
          "\n"
          "Exit status: 0 nothing wrong; 1 something keeps tpcomm from full speed (no kernel\n"
          "image, PTX JIT only, broken or missing P2P, NCCL missing, a bad TPCOMM_* value), each\n"
          "with its fix; 2 no driver or no GPU visible (what needs no GPU is still shown).\n"
          "Set TPCOMM_LIBRARY to check another libtpcomm.so. See docs/DOCTOR.md.\n");
}

}  // namespace

int cmdDoctor(int argc, char** argv) {
  DoctorOptions opts;
  bool json = false, html = false, env_all = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--html") {
      html = true;
    } else if (arg == "--retest-p2p" || arg == "--retest") {
      opts.retest_p2p = true;
    } else if (arg == "--reprobe") {
      opts.reprobe = true;
    } else if (arg == "--no-probe") {
      opts.no_probe = true;
    } else if (arg == "--env") {
      env_all = true;
    } else if (arg == "--topology" && i + 1 < argc) {
      opts.topology_file = argv[++i];
    } else if (arg.compare(0, 11, "--topology=") == 0) {
      opts.topology_file = arg.substr(11);
    } else if (arg == "--probe" && i + 1 < argc) {
      opts.probe_file = argv[++i];
    } else if (arg.compare(0, 8, "--probe=") == 0) {
      opts.probe_file = arg.substr(8);
    } else {
      fprintf(stderr, "tpcomm doctor: unknown option '%s'\n\n", arg.c_str());
      usage(stderr);
      return kExitUsage;
    }
  }
  DoctorFacts facts;
  collectFacts(opts, &facts);
  if (!opts.topology_file.empty() && facts.simulated_from.empty()) {
    fprintf(stderr, "tpcomm doctor: %s\n", facts.no_gpu_reason.c_str());
    return kExitUsage;
  }
  if (!facts.probe_file_error.empty()) {
    fprintf(stderr, "tpcomm doctor: %s\n", facts.probe_file_error.c_str());
    return kExitUsage;
  }
  const std::vector<Finding> findings = findingsFor(facts);
  const int code = exitCodeFor(findings);
  if (json) {
    fputs(json::write(doctorJson(facts, findings, env_all)).c_str(), stdout);
  } else if (html) {
    fputs(doctorHtml(facts, findings).c_str(), stdout);
  } else {
    fputs(doctorText(facts, findings).c_str(), stdout);
    if (env_all) fputs(("\n" + envText()).c_str(), stdout);
  }
  fflush(stdout);
  return code;
}

}  // namespace tpcomm::cli
