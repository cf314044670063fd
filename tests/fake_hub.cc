#include "fake_hub.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "model/hub_files.h"

namespace tach::test {

namespace {

constexpr size_t kLfsThreshold = 1024;

bool send_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t w = ::send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (w <= 0) return false;
    done += size_t(w);
  }
  return true;
}

std::string status_text(int code) {
  switch (code) {
    case 200: return "OK";
    case 206: return "Partial Content";
    case 302: return "Found";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 416: return "Range Not Satisfiable";
    default: return "Error";
  }
}

}  // namespace

FakeHub::FakeHub() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  // A hub that cannot listen would make every test against it fail obscurely: say why here.
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 64) != 0 || ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error(std::string("fake hub: cannot listen on 127.0.0.1: ") + std::strerror(errno));
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { serve(); });
}

FakeHub::~FakeHub() {
  stop_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  ::close(listen_fd_);
  acceptor_.join();
  for (auto& w : workers_) w.join();
}

std::string FakeHub::endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

void FakeHub::add(const FakeRepo& repo) {
  std::lock_guard<std::mutex> g(mu_);
  repos_.push_back(repo);
}

std::vector<std::string> FakeHub::requests() const {
  std::lock_guard<std::mutex> g(mu_);
  return log_;
}

std::vector<std::string> FakeHub::ranges() const {
  std::lock_guard<std::mutex> g(mu_);
  return ranges_;
}

int FakeHub::count(const std::string& prefix) const {
  int n = 0;
  for (const auto& r : requests()) n += r.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

void FakeHub::serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> g(mu_);
    workers_.emplace_back([this, fd] {
      handle(fd);
      ::close(fd);
    });
  }
}

void FakeHub::handle(int fd) {
  std::string req;
  char buf[4096];
  while (req.find("\r\n\r\n") == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    req.append(buf, size_t(n));
  }
  std::istringstream in(req.substr(0, req.find("\r\n\r\n")));
  std::string method, target, line;
  in >> method >> target;
  std::getline(in, line);
  std::map<std::string, std::string> headers;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto c = line.find(':');
    if (c == std::string::npos) continue;
    std::string k = line.substr(0, c), v = line.substr(c + 1);
    for (auto& ch : k) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    v.erase(0, v.find_first_not_of(' '));
    headers[k] = v;
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    log_.push_back(method + " " + target);
    ranges_.push_back(headers.count("range") ? headers["range"] : "");
  }
  const bool head = method == "HEAD";
  auto reply = [&](int code, const std::vector<std::string>& extra, const std::string& body) {
    std::string h = "HTTP/1.1 " + std::to_string(code) + " " + status_text(code) + "\r\n";
    for (const auto& e : extra) h += e + "\r\n";
    h += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
    send_all(fd, h + (head ? "" : body));
  };
  std::string path = target.substr(0, target.find('?'));
  std::vector<FakeRepo> repos;
  {
    std::lock_guard<std::mutex> g(mu_);
    repos = repos_;
  }
  auto authorized = [&](const FakeRepo& r) {
    return r.token.empty() || headers["authorization"] == "Bearer " + r.token;
  };
  auto lfs = [](const std::string& bytes) { return bytes.size() >= kLfsThreshold; };

  // The CDN: /cdn/<sha256>, Range supported, faults applied.
  if (path.rfind("/cdn/", 0) == 0) {
    const std::string sha = path.substr(5);
    const std::string* bytes = nullptr;
    for (const auto& r : repos)
      for (const auto& [p, b] : r.files)
        if (lfs(b) && model::sha256_of_bytes(b) == sha) bytes = &b;
    if (!bytes) return reply(404, {}, "no such object");
    std::string body = *bytes;
    if (corrupt_left.load() > 0) {
      --corrupt_left;
      body[body.size() / 2] ^= 0x5a;
    }
    size_t from = 0;
    int code = 200;
    std::vector<std::string> extra = {"Accept-Ranges: bytes"};
    if (headers.count("range")) {
      from = std::stoull(headers["range"].substr(headers["range"].find('=') + 1));
      if (from >= body.size()) return reply(416, {"Content-Range: bytes */" + std::to_string(body.size())}, "");
      code = 206;
      extra.push_back("Content-Range: bytes " + std::to_string(from) + "-" + std::to_string(body.size() - 1) + "/" +
                      std::to_string(body.size()));
    }
    body = body.substr(from);
    if (stall_ms.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(stall_ms.load()));
    if (drops_left.load() > 0) {
      --drops_left;
      // Headers promise the whole body; the connection closes after drop_after bytes.
      std::string h = "HTTP/1.1 " + std::to_string(code) + " " + status_text(code) + "\r\n";
      for (const auto& e : extra) h += e + "\r\n";
      h += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
      send_all(fd, h + body.substr(0, size_t(drop_after.load())));
      return;
    }
    return reply(code, extra, body);
  }

  for (const auto& r : repos) {
    const std::string api =
        std::string("/api/") + (r.type == "dataset" ? "datasets/" : "models/") + r.id + "/revision/";
    const std::string resolve = (r.type == "dataset" ? "/datasets/" : "/") + r.id + "/resolve/";
    if (path.rfind(api, 0) == 0) {
      if (!authorized(r)) return reply(401, {"X-Error-Code: GatedRepo"}, "{\"error\": \"gated\"}");
      const std::string rev = path.substr(api.size());
      if (rev != "main" && rev != r.commit) return reply(404, {"X-Error-Code: RevisionNotFound"}, "{}");
      nlohmann::json j = {{"id", r.id}, {"sha", r.commit}, {"siblings", nlohmann::json::array()}};
      for (const auto& [p, b] : r.files) {
        nlohmann::json s = {{"rfilename", p}, {"size", b.size()}, {"blobId", model::git_blob_sha1_of_bytes(b)}};
        if (lfs(b)) s["lfs"] = {{"sha256", model::sha256_of_bytes(b)}, {"size", b.size()}, {"pointerSize", 130}};
        j["siblings"].push_back(s);
      }
      return reply(200, {"Content-Type: application/json"}, j.dump());
    }
    if (path.rfind(resolve, 0) == 0) {
      if (!authorized(r)) return reply(401, {"X-Error-Code: GatedRepo"}, "gated");
      std::string rest = path.substr(resolve.size());
      const std::string rev = rest.substr(0, rest.find('/'));
      const std::string file = rest.substr(rest.find('/') + 1);
      if (rev != "main" && rev != r.commit) return reply(404, {"X-Error-Code: RevisionNotFound"}, "");
      auto it = r.files.find(file);
      if (it == r.files.end()) return reply(404, {"X-Error-Code: EntryNotFound", "X-Repo-Commit: " + r.commit}, "");
      const std::string& b = it->second;
      if (lfs(b)) {
        const std::string sha = model::sha256_of_bytes(b);
        return reply(302,
                     {"X-Repo-Commit: " + r.commit, "X-Linked-Etag: \"" + sha + "\"",
                      "X-Linked-Size: " + std::to_string(b.size()),
                      "ETag: \"" + model::git_blob_sha1_of_bytes(b) + "\"", "Location: " + endpoint() + "/cdn/" + sha},
                     "");
      }
      std::string body = b;
      if (!head && corrupt_left.load() > 0) {
        --corrupt_left;
        body[body.size() / 2] ^= 0x5a;
      }
      return reply(200, {"X-Repo-Commit: " + r.commit, "ETag: \"" + model::git_blob_sha1_of_bytes(b) + "\""}, body);
    }
  }
  reply(404, {"X-Error-Code: RepoNotFound"}, "{\"error\": \"Repository not found\"}");
}

}  // namespace tach::test
