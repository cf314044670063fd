// A Hugging Face Hub on 127.0.0.1 for the download tests: the API's revision endpoint, resolve
// URLs (HEAD and GET, ETag / X-Repo-Commit / X-Linked-*), LFS files redirected to a CDN path
// with Range support, and the faults the tests need. No test reaches the internet.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tach::test {

struct FakeRepo {
  std::string type = "model";                // model | dataset
  std::string id;                            // ORG/NAME
  std::string commit;                        // 40 hex digits
  std::map<std::string, std::string> files;  // path → bytes; files of 1 KiB or more are served as LFS
  std::string token;                         // non-empty: gated, 401 unless "Authorization: Bearer <token>"
};

class FakeHub {
 public:
  FakeHub();
  ~FakeHub();
  std::string endpoint() const;  // http://127.0.0.1:PORT
  void add(const FakeRepo& repo);

  // Faults, set before a request.
  std::atomic<int> drops_left{0};  // the next N file bodies stop after drop_after bytes, connection closed
  std::atomic<int64_t> drop_after{0};
  std::atomic<int> corrupt_left{0};  // the next N file bodies have one byte changed
  std::atomic<int> stall_ms{0};      // sleep before each file body
  // What came in: "METHOD PATH" per request, and the Range header of each (or "").
  std::vector<std::string> requests() const;
  std::vector<std::string> ranges() const;
  int count(const std::string& prefix) const;  // requests starting with prefix

 private:
  void serve();
  void handle(int fd);
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::vector<std::thread> workers_;
  mutable std::mutex mu_;
  std::vector<FakeRepo> repos_;
  std::vector<std::string> log_, ranges_;
};

}  // namespace tach::test
