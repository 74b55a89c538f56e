// Binding a rendezvous name (rank 0, bootstrap_root.cc), and saying who holds it when it is in
// use: the system tells a connection the listener's uid and pid (SO_PEERCRED), and /proc names
// the process of a socket bound without listening.
#include "comm/rendezvous/name_holder.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "comm/rendezvous/bootstrap.h"
#include "comm/rendezvous/bootstrap_wire.h"
#include "common/error.h"

namespace tpcomm {
namespace {

// Who holds a rendezvous name that is in use, where the system tells it: a connection to it
// reports, by SO_PEERCRED, the uid and pid of the process that listens there (the holder sees a
// connection that closes at once); a socket bound without listening is found through
// /proc/net/unix (its inode) and the /proc/<pid>/fd that this process may read.
struct Holder {
  bool known = false;
  unsigned uid = 0;
  int pid = 0;  // 0: not visible from here (another pid namespace)
};

Holder holderByConnecting(const sockaddr_un& addr, socklen_t alen) {
  Holder h;
  Fd c(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  ucred cred{};
  if (c.fd >= 0 && connect(c.fd, reinterpret_cast<const sockaddr*>(&addr), alen) == 0 &&
      peerCredentials(c.fd, &cred)) {
    h.known = true;
    h.uid = static_cast<unsigned>(cred.uid);
    h.pid = static_cast<int>(cred.pid);
  }
  return h;
}

Holder holderFromProc(const std::string& name) {
  Holder h;
  std::ifstream unix_table("/proc/net/unix");
  std::string line, inode;
  const std::string path = "@" + name;
  while (std::getline(unix_table, line)) {
    // Num RefCount Protocol Flags Type St Inode Path; the bound socket itself is unconnected (01).
    char num[32], ref[32], proto[32], flags[32], type[32], st[32], ino[32], p[256];
    if (sscanf(line.c_str(), "%31s %31s %31s %31s %31s %31s %31s %255s", num, ref, proto, flags,
               type, st, ino, p) == 8 &&
        path == p && std::string(st) == "01") {
      inode = ino;
      break;
    }
  }
  if (inode.empty()) return h;
  const std::string target = "socket:[" + inode + "]";
  DIR* procs = opendir("/proc");
  if (!procs) return h;
  while (const dirent* e = readdir(procs)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    const std::string dir = std::string("/proc/") + e->d_name;
    DIR* fds = opendir((dir + "/fd").c_str());
    if (!fds) continue;  // another user's process: not ours to read
    while (const dirent* f = readdir(fds)) {
      char link[64];
      const ssize_t n = readlink((dir + "/fd/" + f->d_name).c_str(), link, sizeof(link) - 1);
      if (n <= 0 || target != std::string(link, static_cast<size_t>(n))) continue;
      struct stat st {};
      if (stat(dir.c_str(), &st) == 0) {
        h.known = true;
        h.uid = static_cast<unsigned>(st.st_uid);
        h.pid = atoi(e->d_name);
      }
      break;
    }
    closedir(fds);
    if (h.known) break;
  }
  closedir(procs);
  return h;
}

tpcommResult_t nameInUse(const std::string& name, const sockaddr_un& addr, socklen_t alen) {
  Holder h = holderByConnecting(addr, alen);
  if (!h.known) h = holderFromProc(name);
  if (!h.known)
    return fail(tpcommInvalidUsage,
                "bootstrap: the unique id is already in use: another process holds its rendezvous "
                "name @%s (tpcomm could not tell which: it does not accept connections and "
                "/proc names no process of ours that holds it). A unique id serves one "
                "communicator: make a new one with tpcommGetUniqueId",
                name.c_str());
  std::string who = "uid " + std::to_string(h.uid) + ", ";
  if (h.pid > 0) {
    who += "pid " + std::to_string(h.pid);
    std::ifstream comm("/proc/" + std::to_string(h.pid) + "/comm");
    std::string command;
    if (std::getline(comm, command) && !command.empty())
      who += " " + sanitizedReason(command.data(), command.size());
  } else {
    who += "its pid is not visible here";
  }
  if (h.uid != static_cast<unsigned>(geteuid()))
    return fail(tpcommInvalidUsage,
                "bootstrap: the unique id is already in use: another user (%s) holds its "
                "rendezvous name @%s. The name is public once a rank 0 has bound it, so a reused "
                "id can be squatted; that user cannot join (its uid is refused), but this id "
                "cannot serve here. Make a new one with tpcommGetUniqueId for each communicator",
                who.c_str(), name.c_str());
  return fail(tpcommInvalidUsage,
              "bootstrap: the unique id is already in use: another process of this user (%s) "
              "holds its rendezvous name @%s (if it runs tpcomm: rank 0 of a live communicator "
              "made with this id). A unique id serves one communicator: make a new one with "
              "tpcommGetUniqueId",
              who.c_str(), name.c_str());
}

}  // namespace

// Binds the name. One this process bound and let go can stay bound for a moment: a child forked
// just before holds a copy of the socket until its fork handler (bootstrap_hold.cc) closes it,
// which is when the scheduler first runs that child (under load, milliseconds later). The
// listener's pid (SO_PEERCRED) is then this process's although none of its holds has the name:
// that copy is waited for, up to the rendezvous deadline. Any other holder fails at once.
tpcommResult_t bindName(int fd, const std::string& name, const sockaddr_un& addr, socklen_t alen,
                        int timeout_ms) {
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (int pause_ms = 1;; pause_ms = std::min(2 * pause_ms, 50)) {
    if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), alen) == 0) return tpcommSuccess;
    if (errno != EADDRINUSE)
      return fail(tpcommSystemError, "bootstrap: bind @%s: %s", name.c_str(), strerror(errno));
    const Holder h = holderByConnecting(addr, alen);
    const bool forked_copy =
        h.known && h.pid == static_cast<int>(getpid()) && !RendezvousHold::holdsName(name);
    if (!forked_copy) return nameInUse(name, addr, alen);
    if (Clock::now() >= deadline)
      return fail(tpcommInvalidUsage,
                  "bootstrap: the unique id is still in use after %d ms: this process let its "
                  "rendezvous name @%s go, but a child forked from it keeps a copy of the socket "
                  "(one made without fork handlers, e.g. by a raw clone, and that has not "
                  "exec'd). Make a new id with tpcommGetUniqueId",
                  timeout_ms, name.c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
  }
}

}  // namespace tpcomm
