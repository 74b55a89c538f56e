#include "tests/gpu/multiprocess.h"

#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/gpu/harness.h"

extern char** environ;

namespace tpcomm::test {
namespace {

std::string toHex(const void* p, size_t n) {
  static const char* h = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char b = static_cast<const unsigned char*>(p)[i];
    s += h[b >> 4];
    s += h[b & 15];
  }
  return s;
}

void fromHex(const std::string& s, void* p, size_t n) {
  for (size_t i = 0; i < n && 2 * i + 1 < s.size(); ++i)
    static_cast<unsigned char*>(p)[i] =
        static_cast<unsigned char>(std::stoi(s.substr(2 * i, 2), nullptr, 16));
}

uint64_t fnv(const std::vector<uint8_t>& v) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : v) h = (h ^ b) * 1099511628211ull;
  return h;
}

// One all-reduce in this process; returns 0 if it matches the reference, appending its digest.
int checkedAllReduce(tpcommComm_t comm, int rank, int nranks, tpcommDataType_t dt, size_t count,
                     uint64_t seed, std::string* report) {
  const size_t bytes = count * elemSize(dt);
  void *in = nullptr, *out = nullptr;
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaMalloc(&in, bytes);
  cudaMalloc(&out, bytes);
  std::vector<std::vector<uint8_t>> inputs;
  for (int r = 0; r < nranks; ++r) inputs.push_back(makeInput(dt, count, seed, r));
  cudaMemcpy(in, inputs[rank].data(), bytes, cudaMemcpyHostToDevice);
  cudaMemset(out, 0xCD, bytes);
  cudaDeviceSynchronize();  // the legacy stream does not order the non-blocking stream s
  int rc = 0;
  if (tpcommAllReduce(in, out, count, dt, tpcommSum, comm, s) != tpcommSuccess) {
    fprintf(stderr, "rank %d: %s\n", rank, tpcommGetLastError());
    rc = 1;
  }
  cudaStreamSynchronize(s);
  std::vector<uint8_t> got(bytes);
  cudaMemcpy(got.data(), out, bytes, cudaMemcpyDeviceToHost);
  const std::vector<uint8_t> ref = reference(dt, count, inputs);
  size_t first = 0;
  const size_t wrong = countWrong(dt, count, got.data(), ref.data(), inputs, &first);
  if (wrong) {
    tpcommCallInfo_t info{};
    tpcommCommGetLastCall(comm, &info);
    const size_t es = elemSize(dt);
    fprintf(stderr,
            "rank %d: %s count %zu: %zu wrong (%s, %d blocks); first at %zu: got %g want %g\n",
            rank, dtypeName(dt), count, wrong, tpcommAlgoName(info.algo), info.blocks, first,
            toDouble(dt, got.data() + first * es), toDouble(dt, ref.data() + first * es));
    rc = 1;
  }
  char line[96];
  snprintf(line, sizeof(line), "%s %zu %016llx\n", dtypeName(dt), count,
           static_cast<unsigned long long>(fnv(got)));
  *report += line;
  cudaFree(in);
  cudaFree(out);
  cudaStreamDestroy(s);
  return rc;
}

bool waitForFile(const std::string& path, int timeout_ms) {
  for (int waited = 0; waited < timeout_ms; waited += 10) {
    struct stat st;
    if (stat(path.c_str(), &st) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

int runChild(int argc, char** argv) {
  if (argc < 7) return 2;
  const std::string scenario = argv[2];
  const int rank = atoi(argv[3]), nranks = atoi(argv[4]);
  const std::string dir = argv[6];
  tpcommUniqueId id;
  fromHex(argv[5], &id, sizeof(id));
  if (scenario.rfind("mn-", 0) == 0) return runMultinodeChild(scenario, rank, nranks, id, dir);
  const int ngpu = visibleGpus();
  if (ngpu == 0) return 3;
  cudaSetDevice(rank % ngpu);
  tpcommConfig_t cfg = TPCOMM_CONFIG_INITIALIZER;
  cfg.timeoutMs = scenario == "deadpeer" ? 500 : 20000;
  tpcommComm_t comm = nullptr;
  if (scenario == "exchange") {
    tpcommRankHandle mine;
    if (tpcommCommInitRankBegin(&comm, nranks, rank, &cfg, &mine) != tpcommSuccess) {
      fprintf(stderr, "rank %d: Begin: %s\n", rank, tpcommGetLastError());
      return 1;
    }
    {
      std::ofstream f(dir + "/handle" + std::to_string(rank) + ".tmp", std::ios::binary);
      f.write(mine.internal, sizeof(mine.internal));
    }
    rename((dir + "/handle" + std::to_string(rank) + ".tmp").c_str(),
           (dir + "/handle" + std::to_string(rank)).c_str());
    std::vector<tpcommRankHandle> all(nranks);
    for (int r = 0; r < nranks; ++r) {
      const std::string p = dir + "/handle" + std::to_string(r);
      if (!waitForFile(p, 30000)) return 4;
      std::ifstream f(p, std::ios::binary);
      f.read(all[r].internal, sizeof(all[r].internal));
    }
    if (tpcommCommInitRankEnd(comm, all.data()) != tpcommSuccess) {
      fprintf(stderr, "rank %d: End: %s\n", rank, tpcommGetLastError());
      return 1;
    }
  } else if (tpcommCommInitRank(&comm, nranks, id, rank, &cfg) != tpcommSuccess) {
    fprintf(stderr, "rank %d: InitRank: %s\n", rank, tpcommGetLastError());
    return 1;
  }
  std::string report;
  int rc = 0;
  if (scenario == "deadpeer") {
    if (rank == 0) {
      const auto t0 = std::chrono::steady_clock::now();
      void* buf;
      cudaMalloc(&buf, 4096);
      tpcommAllReduce(buf, buf, 1024, tpcommFloat32, tpcommSum, comm, nullptr);
      cudaDeviceSynchronize();
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      tpcommResult_t async = tpcommSuccess;
      tpcommCommGetAsyncError(comm, &async);
      report =
          "async=" + std::to_string(async) + " ms=" + std::to_string(static_cast<int>(ms)) + "\n";
      rc = (async == tpcommTimeout && ms < 3000) ? 0 : 1;
      std::ofstream(dir + "/done");
    } else {
      waitForFile(dir + "/done", 30000);  // alive, but never calls the collective
    }
  } else {
    for (tpcommDataType_t dt : {tpcommBfloat16, tpcommFloat32, tpcommFloat16})
      for (size_t count : {size_t{1}, size_t{1000}, size_t{65537}, size_t{(1 << 20) + 5},
                           size_t{(16u << 20) / elemSize(dt)}})
        rc |= checkedAllReduce(comm, rank, nranks, dt, count, 4242 + count, &report);
  }
  std::ofstream(dir + "/rank" + std::to_string(rank) + ".txt") << report;
  tpcommCommDestroy(comm);
  return rc;
}

ChildRun spawnChildren(const std::string& scenario, int nranks, int timeout_s,
                       const std::vector<std::string>& extra_env,
                       const std::function<std::vector<std::string>(int)>& rank_env) {
  ChildRun run;
  tpcommUniqueId id;
  tpcommGetUniqueId(&id);
  char tmpl[] = "/tmp/tpcomm-mp-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string hex = toHex(&id, sizeof(id));
  std::vector<pid_t> pids;
  for (int r = 0; r < nranks; ++r) {
    const std::string rs = std::to_string(r), ns = std::to_string(nranks);
    std::vector<std::string> args = {"/proc/self/exe", "--mp-child", scenario, rs, ns, hex, dir};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings(extra_env);
    if (rank_env)
      for (const std::string& e : rank_env(r)) env_strings.push_back(e);
    for (char** e = environ; *e; ++e) env_strings.push_back(*e);
    std::vector<char*> envp;
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data()) == 0)
      pids.push_back(pid);
  }
  run.exit_codes.assign(pids.size(), -1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  size_t done = 0;
  while (done < pids.size()) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (run.exit_codes[i] != -1) continue;
      int st = 0;
      if (waitpid(pids[i], &st, WNOHANG) == pids[i]) {
        run.exit_codes[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        ++done;
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      run.timed_out = true;
      for (size_t i = 0; i < pids.size(); ++i)
        if (run.exit_codes[i] == -1) kill(pids[i], SIGKILL);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int r = 0; r < nranks; ++r) {
    std::ifstream f(dir + "/rank" + std::to_string(r) + ".txt");
    std::stringstream ss;
    ss << f.rdbuf();
    run.reports.push_back(ss.str());
  }
  return run;
}

}  // namespace tpcomm::test
