// HTTP for the Hugging Face Hub, through libcurl: small requests answered in memory (the API,
// HEAD for a file's ETag and commit) and downloads streamed to a file, resumable with Range.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tach::model {

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  bool head = false;                 // HEAD instead of GET
  bool follow_redirects = true;
  // Seconds: to connect, and the longest stall (no byte received) before giving up. A request
  // with a body in memory also ends after total_timeout_s (0: no limit).
  double connect_timeout_s = 10, stall_timeout_s = 10, total_timeout_s = 0;
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // the last response's, names lower-cased
  std::string body;                            // requests answered in memory only
  std::string final_url;
  std::string header(const std::string& lower_name) const;  // "" when absent
};

// The request, answered in memory. Transport failures (no route, timeout, TLS) throw an Error
// naming the URL and what went wrong; HTTP error statuses are returned for the caller to word.
HttpResponse http_fetch(const HttpRequest& request);

// Streams the body into fd (opened for append). When resume_from > 0 a Range header asks for
// the rest; the caller checks the status (206 resumed, 200 whole file). progress(bytes so far
// in this transfer, bytes expected in it) is called as data arrives. Transport failures throw
// an Error; the bytes already written stay in the file.
HttpResponse http_download(const HttpRequest& request, int fd, int64_t resume_from,
                           const std::function<void(int64_t, int64_t)>& progress);

}  // namespace tach::model
