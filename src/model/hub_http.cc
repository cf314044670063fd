#include "model/hub_http.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>

#include "core/library_loader.h"
#include "tach/error.h"

namespace tach::model {

namespace {

// libcurl's entry points, resolved (and libcurl initialised) at the first request: libcurl and its
// TLS stack are opened at first use (core/library_loader.h says why not linked).
struct CurlApi {
  decltype(&curl_global_init) global_init = nullptr;
  decltype(&curl_easy_init) easy_init = nullptr;
  decltype(&curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&curl_easy_setopt) setopt = nullptr;
  decltype(&curl_easy_perform) perform = nullptr;
  decltype(&curl_easy_getinfo) getinfo = nullptr;
  decltype(&curl_easy_strerror) error_string = nullptr;
  decltype(&curl_slist_append) slist_append = nullptr;
  decltype(&curl_slist_free_all) slist_free_all = nullptr;
};

// The loaded API; throws tach::Error naming the library (or the symbols it lacks) when it is not usable.
const CurlApi& curl_api() {
  static CurlApi api;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    const OpenedLibrary lib = open_library({"libcurl.so.4", "", "", "downloads from the Hugging Face Hub",
                                            "install Debian's libcurl4 (or libcurl4-openssl-dev)"});
    if (!lib.handle) {
      error = "libcurl is not available: " + lib.error;
      return;
    }
    std::string missing;
    resolve(lib.handle, api.global_init, "curl_global_init", &missing);
    resolve(lib.handle, api.easy_init, "curl_easy_init", &missing);
    resolve(lib.handle, api.easy_cleanup, "curl_easy_cleanup", &missing);
    resolve(lib.handle, api.setopt, "curl_easy_setopt", &missing);
    resolve(lib.handle, api.perform, "curl_easy_perform", &missing);
    resolve(lib.handle, api.getinfo, "curl_easy_getinfo", &missing);
    resolve(lib.handle, api.error_string, "curl_easy_strerror", &missing);
    resolve(lib.handle, api.slist_append, "curl_slist_append", &missing);
    resolve(lib.handle, api.slist_free_all, "curl_slist_free_all", &missing);
    if (!missing.empty()) {
      error = "libcurl is not usable: libcurl.so.4 lacks " + missing;
      return;
    }
    api.global_init(CURL_GLOBAL_DEFAULT);
  });
  if (!error.empty()) throw Error(error);
  return api;
}

struct Transfer {
  HttpResponse* response = nullptr;
  int fd = -1;  // -1: the body goes to response->body
  int64_t written = 0;
  int write_errno = 0;
  const std::function<void(int64_t, int64_t)>* progress = nullptr;
  CURL* handle = nullptr;
  int64_t resume_from = 0;
  bool restarted = false;
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string line(data, size * n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.rfind("HTTP/", 0) == 0) {
    t->response->headers.clear();  // a new response (after a redirect or a 100): keep only the last one's
    return size * n;
  }
  const auto colon = line.find(':');
  if (colon == std::string::npos) return size * n;
  std::string name = line.substr(0, colon), value = line.substr(colon + 1);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  value.erase(0, value.find_first_not_of(" \t"));
  t->response->headers[name] = value;
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  t->written += int64_t(bytes);
  if (t->fd < 0) {
    t->response->body.append(data, bytes);
    return bytes;
  }
  // Only a 200 or 206 body is the file; an error page stays in memory, for the message.
  long status = 0;
  curl_api().getinfo(t->handle, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200 && status != 206) {
    if (t->response->body.size() < (1u << 16)) t->response->body.append(data, bytes);
    return bytes;
  }
  if (status == 200 && t->resume_from > 0 && !t->restarted) {
    // The server ignored the Range and sends the whole file: start the file again.
    t->restarted = true;
    if (::ftruncate(t->fd, 0) != 0) {
      t->write_errno = errno;
      return 0;
    }
  }
  size_t done = 0;
  while (done < bytes) {
    const ssize_t w = ::write(t->fd, data + done, bytes - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      t->write_errno = errno;
      return 0;  // makes curl stop with CURLE_WRITE_ERROR
    }
    done += size_t(w);
  }
  return bytes;
}

int on_progress(void* user, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->progress && *t->progress) (*t->progress)(int64_t(now), int64_t(total));
  return 0;
}

HttpResponse perform(const HttpRequest& r, Transfer& t, int64_t resume_from) {
  const CurlApi& api = curl_api();
  HttpResponse response;
  t.response = &response;
  std::unique_ptr<CURL, void (*)(CURL*)> curl(api.easy_init(), api.easy_cleanup);
  check(curl != nullptr, "libcurl: cannot create a handle");
  CURL* c = curl.get();
  t.handle = c;
  curl_slist* list = nullptr;
  for (const auto& h : r.headers) list = api.slist_append(list, h.c_str());
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(list, api.slist_free_all);
  char err[CURL_ERROR_SIZE] = {0};
  api.setopt(c, CURLOPT_URL, r.url.c_str());
  api.setopt(c, CURLOPT_HTTPHEADER, list);
  api.setopt(c, CURLOPT_USERAGENT, "tach (libcurl)");
  api.setopt(c, CURLOPT_ERRORBUFFER, err);
  api.setopt(c, CURLOPT_NOSIGNAL, 1L);
  api.setopt(c, CURLOPT_FOLLOWLOCATION, r.follow_redirects ? 1L : 0L);
  api.setopt(c, CURLOPT_MAXREDIRS, 10L);
  // An Authorization header is not sent on to another host after a redirect (the CDN), which
  // is libcurl's default and what the Hub expects.
  api.setopt(c, CURLOPT_CONNECTTIMEOUT_MS, long(r.connect_timeout_s * 1000));
  api.setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  api.setopt(c, CURLOPT_LOW_SPEED_TIME, std::max(1L, std::lround(r.stall_timeout_s)));
  if (r.total_timeout_s > 0) api.setopt(c, CURLOPT_TIMEOUT_MS, long(r.total_timeout_s * 1000));
  if (r.head) api.setopt(c, CURLOPT_NOBODY, 1L);
  if (resume_from > 0) api.setopt(c, CURLOPT_RESUME_FROM_LARGE, curl_off_t(resume_from));
  api.setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  api.setopt(c, CURLOPT_HEADERDATA, &t);
  api.setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  api.setopt(c, CURLOPT_WRITEDATA, &t);
  if (t.progress) {
    api.setopt(c, CURLOPT_NOPROGRESS, 0L);
    api.setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    api.setopt(c, CURLOPT_XFERINFODATA, &t);
  }
  const CURLcode rc = api.perform(c);
  api.getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  char* final_url = nullptr;
  api.getinfo(c, CURLINFO_EFFECTIVE_URL, &final_url);
  response.final_url = final_url ? final_url : r.url;
  if (rc == CURLE_HTTP_RETURNED_ERROR || rc == CURLE_OK) return response;
  // A 416 answer to a Range request is a status, not a transport failure.
  if (rc == CURLE_RANGE_ERROR) return response;
  std::string what = err[0] ? err : api.error_string(rc);
  if (rc == CURLE_WRITE_ERROR && t.write_errno)
    what = "cannot write the download: " + std::string(std::strerror(t.write_errno));
  if (rc == CURLE_OPERATION_TIMEDOUT)
    what += " (no data for " + std::to_string(long(r.stall_timeout_s)) +
            " s; HF_HUB_DOWNLOAD_TIMEOUT / HF_HUB_ETAG_TIMEOUT set the limits in seconds)";
  if (rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR || rc == CURLE_GOT_NOTHING)
    what += " (the connection dropped after " + std::to_string(t.written) + " bytes)";
  throw Error(r.url + ": " + what);
}

}  // namespace

std::string HttpResponse::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

HttpResponse http_fetch(const HttpRequest& request) {
  Transfer t;
  return perform(request, t, 0);
}

HttpResponse http_download(const HttpRequest& request, int fd, int64_t resume_from,
                           const std::function<void(int64_t, int64_t)>& progress) {
  Transfer t;
  t.fd = fd;
  t.resume_from = resume_from;
  t.progress = &progress;
  return perform(request, t, resume_from);
}

}  // namespace tach::model
