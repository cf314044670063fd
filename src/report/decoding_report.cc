// The decoding table of a causal LM's bench run (report_sections.h).
#include <algorithm>
#include <sstream>
#include <string>

#include "report/number_text.h"
#include "report/report_sections.h"
#include "report/svg_chart.h"

namespace tach::report {

// A causal LM's decoding after each point's prefill (bench --decode-tokens): the steps against
// decoding's bandwidth limit, the weights and the cache over the measured bandwidth.
void decoding_section(std::ostringstream& h, const std::vector<PointResult>& all) {
  if (std::none_of(all.begin(), all.end(), [](const PointResult& p) { return !p.decode.method.empty(); })) return;
  h << "<h3>Decoding</h3><p>Greedy decoding after each point's prefill runs, from the point's prompts (one new token "
       "for every row per step). The limit is the bytes a step must read (every weight as stored, and the "
       "key/value cache) over the measured memory bandwidth; its fraction is limit / median step.</p>"
    << "<table><tr><th>point</th><th>steps</th><th>ms/step median</th><th>p90</th><th>tokens/s</th>"
       "<th>first token ms</th><th>GB/step</th><th>limit ms</th><th>of the limit</th><th>read-only limit ms</th>"
       "<th>of it</th><th>how the steps ran</th></tr>";
  for (const auto& p : all) {
    const PointResult::Decode& d = p.decode;
    if (d.method.empty()) continue;
    h << "<tr><td>" << escape_html(p.key.id()) << "</td>";
    if (d.step_ms.n == 0) {
      h << "<td colspan='10'>-</td><td style='text-align:left'>" << escape_html(d.method) << "</td></tr>";
      continue;
    }
    h << "<td>" << d.step_ms.n << "</td><td>" << fmt("%.3f", d.step_ms.median) << "</td><td>"
      << fmt("%.3f", d.step_ms.p90) << "</td><td>" << fmt("%.1f", d.tokens_per_s) << "</td><td>"
      << fmt("%.1f", d.time_to_first_token_ms) << "</td><td>"
      << fmt("%.3f", (d.weight_bytes_per_step + d.cache_bytes_per_step) / 1e9) << "</td><td>" << fmt("%.2f", d.limit_ms)
      << "</td><td>" << fmt("%.1f", 100 * d.fraction_of_limit) << "%</td><td>"
      << (d.read_limit_ms > 0 ? fmt("%.2f", d.read_limit_ms) : std::string("n/a")) << "</td><td>"
      << (d.read_limit_ms > 0 ? fmt("%.1f", 100 * d.fraction_of_read_limit) + "%" : std::string("n/a"))
      << "</td><td style='text-align:left'>" << escape_html(d.method)
      << (d.warning.empty() ? "" : "<br>" + escape_html(d.warning)) << "</td></tr>";
  }
  h << "</table>";
}

}  // namespace tach::report
