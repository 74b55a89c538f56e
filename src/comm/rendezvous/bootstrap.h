// Rendezvous of the ranks of one machine: an all-gather of fixed-size blobs through a Unix-domain
// socket in the abstract namespace, named by the unique id. Rank 0 listens, the others connect
// (retrying until rank 0 is up). No TCP listener. What it guarantees (docs/RENDEZVOUS.md):
//  - Only our user: every peer's effective uid is checked with SO_PEERCRED, both ways.
//  - Only holders of the id: the socket's name is public (/proc/net/unix), the id's secret is not;
//    each side proves it knows the secret by a MAC over fresh nonces (bootstrap_wire.h) before any
//    handle is sent, so a process that saw only the name learns nothing and joins nothing.
//  - One communicator per id: rank 0 keeps the name bound while its communicator lives, so a
//    second rank 0 given the same id fails to bind ("already in use"); a rank claimed twice fails
//    the whole rendezvous; a rank that connects after completion is told so. Limit: the ranks of
//    two jobs that reuse one id are interchangeable (they hold the same secret), so in a race
//    rank 0 of one job may complete with a rank of the other; then the ranks left out fail with
//    one of the errors above, so no job reuses an id with every rank reporting success.
//  - Every wait has the deadline: connect is non-blocking, rank 0 serves every connection at once
//    from one poll loop, and a connection still in its handshake after a short deadline (or
//    malformed, or refused) is dropped and logged (rate-limited), never fatal to the others; one
//    that proved the secret never loses its slot to strangers, and a genuine rank whose connection
//    was dropped connects again until its deadline. When rank 0 gives up, it tells every
//    connected rank why, and a peer whose own side fails tells rank 0 (Reason frames).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "tpcomm/tpcomm.h"

namespace tpcomm {

// What rank 0 keeps after a rendezvous: the bound name, and a thread that answers every later
// connection with "this id's rendezvous is complete". Destroying it unbinds the name.
class RendezvousHold {
 public:
  // Takes the listening socket; tpcommSystemError if the thread cannot be set up.
  static tpcommResult_t start(int listen_fd, std::unique_ptr<RendezvousHold>* out);
  // Whether a live hold of this process has the abstract socket name `name` (without the '@').
  static bool holdsName(const std::string& name);
  ~RendezvousHold();
  RendezvousHold(const RendezvousHold&) = delete;
  RendezvousHold& operator=(const RendezvousHold&) = delete;

 private:
  RendezvousHold(int listen_fd, int wake_fd);
  void serve();
  int listen_fd_;
  int wake_fd_;    // eventfd: the destructor wakes the thread with it
  int owner_pid_;  // a forked child has our descriptors but not the thread
  // The thread says it has started (start() waits for it); declared before thread_, which starts
  // in the constructor and uses them.
  std::mutex ready_mu_;
  std::condition_variable ready_cv_;
  bool ready_ = false;
  std::thread thread_;
};

// all receives nranks * len bytes, rank i's blob at offset i * len. On rank 0, *hold (if given)
// receives the name holder, to be kept for the communicator's life; without it the name is
// released on return. Other ranks leave *hold empty.
tpcommResult_t bootstrapAllGather(const tpcommUniqueId& id, int rank, int nranks, const void* mine,
                                  size_t len, void* all, int timeout_ms,
                                  std::unique_ptr<RendezvousHold>* hold = nullptr);

}  // namespace tpcomm
