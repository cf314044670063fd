#include "engines/engine_names.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace fs = std::filesystem;

namespace tach::engines {

const std::vector<EngineName>& engine_names() {
  static const std::vector<EngineName> names = {
      {"tach", true, "tach's own engine, in this process"},
      {"torch", true, "PyTorch eager: transformers' AutoModelFor<task>"},
      {"torch-compile", true, "the same model through torch.compile (its compile time reported apart)"},
      {"onnxruntime", false, "ONNX Runtime on the model exported to ONNX (the export cached, its time reported apart)"},
      {"python-matmul", true, "a pure-Python matrix product in Python's standard library (tests the harness itself)"},
  };
  return names;
}

std::string engine_list() {
  std::string s;
  for (const auto& e : engine_names()) s += (s.empty() ? "" : ", ") + e.name;
  return s;
}

bool is_worker_engine(const std::string& name) { return name != "tach"; }

void check_engines(const std::vector<std::string>& engines, bool train) {
  usage_check(!engines.empty(), "--engine needs at least one engine (" + engine_list() + ")");
  for (size_t i = 0; i < engines.size(); ++i) {
    const auto& e = engines[i];
    const auto it =
        std::find_if(engine_names().begin(), engine_names().end(), [&](const EngineName& n) { return n.name == e; });
    usage_check(it != engine_names().end(), "engine '" + e + "' is not one of " + engine_list());
    usage_check(std::find(engines.begin() + long(i) + 1, engines.end(), e) == engines.end(),
                "'" + e + "' is given twice in --engine: give each engine once");
    usage_check(!train || it->trains, "engine " + e +
                                          " runs inference only; a training sweep (--train) times the "
                                          "engines that train: tach, torch, torch-compile, python-matmul");
  }
}

namespace {

bool holds_engines(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / "tach" / "engines" / "__main__.py", ec);
}

fs::path executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

}  // namespace

std::string python_package_dir() {
  if (const char* named = std::getenv("TACH_PYTHON_PACKAGE"); named != nullptr && *named != '\0') {
    const fs::path p(named);
    if (holds_engines(p)) return p.string();
    if (fs::exists(p / "engines" / "__main__.py")) return p.parent_path().string();
    throw Error("TACH_PYTHON_PACKAGE=" + p.string() + " holds no tach/engines/ package");
  }
  const fs::path exe = executable_dir();
  if (exe.empty()) return "";
  // build/tach, build/tests/test_x: the build tree's python/ (its copy of the package), then the
  // source tree's python/ beside the build directory.
  for (const fs::path& up : {exe, exe.parent_path(), exe.parent_path().parent_path()})
    for (const fs::path& candidate : {up / "python", up})
      if (holds_engines(candidate)) return candidate.string();
  // A pip install: ENV/bin/tach beside ENV/lib/pythonX.Y/site-packages/tach.
  std::error_code ec;
  const fs::path lib = exe.parent_path() / "lib";
  if (fs::is_directory(lib, ec))
    for (const auto& entry : fs::directory_iterator(lib, ec))
      if (holds_engines(entry.path() / "site-packages")) return (entry.path() / "site-packages").string();
  return "";
}

EngineLaunch worker_launch(const std::string& engine, const std::string& python, const std::string& log) {
  EngineLaunch l;
  l.engine = engine;
  l.command = {python.empty() ? "python3" : python, "-m", "tach.engines", "--engine", engine};
  const std::string dir = python_package_dir();
  if (!dir.empty()) {
    // Appended rather than ":" + std::string(old): g++ 12 warns falsely (-Wrestrict) on the latter.
    std::string path = dir;
    if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && *old != '\0') path.append(":").append(old);
    l.env.push_back({"PYTHONPATH", path});
  }
  l.env.push_back({"PYTHONUNBUFFERED", "1"});
  l.stderr_log = log;
  return l;
}

}  // namespace tach::engines
