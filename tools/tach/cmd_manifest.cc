// tach manifest RUN_DIR: SHA256SUMS for every file of a run; tach verify RUN_DIR: check it.
#include <iostream>

#include "commands.h"
#include "tach/report.h"

namespace tach::cli {

Command add_manifest_command(CLI::App& app) {
  auto* sub = app.add_subcommand("manifest",
                                 "Write RUN_DIR/SHA256SUMS: the SHA-256 of every file in the run directory, as "
                                 "sha256sum writes them (check with `tach verify RUN_DIR` or `cd RUN_DIR && "
                                 "sha256sum -c SHA256SUMS`)");
  auto dir = std::make_shared<std::string>();
  sub->add_option("run_dir", *dir, "The run directory (or any directory of artefacts)")->required();
  return {sub, [dir] {
            const int64_t n = write_manifest(*dir);
            std::cout << "wrote " << *dir << "/SHA256SUMS (" << n << " files)\n";
            return 0;
          }};
}

Command add_verify_command(CLI::App& app) {
  auto* sub = app.add_subcommand("verify",
                                 "Check RUN_DIR against its SHA256SUMS: exit 1, naming each file, when one was "
                                 "changed, is missing, or was added after the manifest");
  auto dir = std::make_shared<std::string>();
  sub->add_option("run_dir", *dir, "The run directory holding SHA256SUMS")->required();
  return {sub, [dir] {
            const ManifestCheck c = verify_manifest(*dir);
            for (const auto& f : c.changed) std::cout << "CHANGED  " << f << "\n";
            for (const auto& f : c.missing) std::cout << "MISSING  " << f << "\n";
            for (const auto& f : c.added) std::cout << "ADDED    " << f << " (not in the manifest)\n";
            if (c.ok()) {
              std::cout << *dir << ": all " << c.verified << " files match SHA256SUMS\n";
              return 0;
            }
            std::cerr << "tach: error: " << *dir << " does not match its SHA256SUMS: " << c.changed.size()
                      << " changed, " << c.missing.size() << " missing, " << c.added.size() << " added (" << c.verified
                      << " match)\n";
            return 1;
          }};
}

}  // namespace tach::cli
