// Texts given on the command line reach the tokenizer byte for byte: brackets, commas, a leading
// '-', quotes, newlines, NUL (through files and standard input) and invalid UTF-8, through the
// real tach binary for tokenize, classify --text and generate --text. Also the usage-error status.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.h"

extern char** environ;

namespace tach {
namespace {

struct Ran {
  int status = -1;
  std::string out;
};

// Runs build/tach with exactly these argv bytes (no shell), feeding `input` on standard input.
Ran run_tach(const std::vector<std::string>& args, const std::string& input = "") {
  const std::string exe = std::string(TACH_BINARY_DIR) + "/tach";
  std::vector<char*> argv{const_cast<char*>(exe.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int in_pipe[2], out_pipe[2];
  EXPECT_EQ(pipe(in_pipe), 0);
  EXPECT_EQ(pipe(out_pipe), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_addclose(&fa, in_pipe[1]);
  posix_spawn_file_actions_addclose(&fa, out_pipe[0]);
  pid_t pid = 0;
  Ran r;
  if (posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ) != 0) return r;
  posix_spawn_file_actions_destroy(&fa);
  close(in_pipe[0]);
  close(out_pipe[1]);
  if (!input.empty()) EXPECT_EQ(write(in_pipe[1], input.data(), input.size()), ssize_t(input.size()));
  close(in_pipe[1]);
  char buf[4096];
  for (ssize_t n; (n = read(out_pipe[0], buf, sizeof buf)) > 0;) r.out.append(buf, size_t(n));
  close(out_pipe[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string tiny_tokenizer() { return test::fixtures_dir() + "/tokenizers/tiny-wordpiece"; }

// Texts that a naive parser mangles. Invalid UTF-8 last: JSON shows it with U+FFFD, so it is
// compared through its ids and offsets instead of its echo.
const std::vector<std::string> kValidTexts = {"[CLS] [SEP] [MASK] [PAD] [UNK]",
                                              "[a,b]",
                                              "a,b",
                                              "[]",
                                              "[x]",
                                              "-x",
                                              "--y=1",
                                              "\"quoted\" 'single'",
                                              "line one\nline two",
                                              "[hello, world]",
                                              "-k[a,b]",
                                              "--text=[a,b]"};
const std::string kInvalidUtf8 = std::string("\xff\xfe [a] \xc3", 7);

nlohmann::json tokenize_json(const std::vector<std::string>& extra, const std::string& input = "") {
  std::vector<std::string> args{"tokenize", "-k", tiny_tokenizer(), "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const Ran r = run_tach(args, input);
  EXPECT_EQ(r.status, 0) << r.out;
  return nlohmann::json::parse(r.out);
}

TEST(CliTexts, TokenizePositionalsArriveByteForByte) {
  std::vector<std::string> args{"--"};
  args.insert(args.end(), kValidTexts.begin(), kValidTexts.end());
  const auto j = tokenize_json(args);
  ASSERT_EQ(j.size(), kValidTexts.size()) << "every argument is one text, none split or merged";
  for (size_t i = 0; i < kValidTexts.size(); ++i) EXPECT_EQ(j[i]["text"].get<std::string>(), kValidTexts[i]);
}

TEST(CliTexts, TokenizeTextFlagAndEqualsForm) {
  const auto j =
      tokenize_json({"--text", "[CLS] x [SEP]", "--text=-leading dash", "--text", "[a,b]", "--text=[CLS] y, z [SEP]"});
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(j[3]["text"], "[CLS] y, z [SEP]");
  EXPECT_EQ(j[0]["text"], "[CLS] x [SEP]");
  EXPECT_EQ(j[1]["text"], "-leading dash");
  EXPECT_EQ(j[2]["text"], "[a,b]");
}

TEST(CliTexts, InvalidUtf8IsTokenizedAsGiven) {
  // The offsets are byte ranges in the text as given: the last token's end is inside its 7 bytes,
  // and "[a]" (bytes 3..6) is where the tokenizer found it.
  const auto j = tokenize_json({"--no-special", "--", kInvalidUtf8});
  ASSERT_EQ(j.size(), 1u);
  bool found_bracket = false;
  for (const auto& o : j[0]["offsets"]) {
    EXPECT_LE(o[1].get<int>(), 7);
    if (o[0] == 3 && o[1] == 4) found_bracket = true;  // "[" at byte 3: the bytes were not shifted
  }
  EXPECT_TRUE(found_bracket) << j.dump();
}

TEST(CliTexts, FileAndStandardInputKeepEveryByte) {
  static const char kBytes[] = "first [a,b]\nwith\0nul\n\nlast\r\nno newline at end";
  const std::string bytes(kBytes, sizeof kBytes - 1);
  test::TempDir dir;
  test::write_text(dir.file("texts.txt"), bytes);
  const std::vector<std::string> want = {"first [a,b]", std::string("with\0nul", 8), "", "last\r", "no newline at end"};
  for (const auto& j : {tokenize_json({"--file", dir.file("texts.txt")}), tokenize_json({"-"}, bytes),
                        tokenize_json({"--file", "-"}, bytes)}) {
    ASSERT_EQ(j.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(j[i]["text"].get<std::string>(), want[i]) << i;
  }
}

TEST(CliTexts, ClassifyTextEchoesAndTokenizesAsTokenize) {
  std::vector<std::string> args{"classify", "--model", "preset:bert-tiny", "-k", tiny_tokenizer(),
                                "--repeat", "1",       "--warmup",         "0",  "--json"};
  for (const auto& t : kValidTexts) {
    args.push_back("--text=" + t);  // the = form: a text may start with '-'
  }
  const Ran r = run_tach(args);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["input"]["texts"].size(), kValidTexts.size());
  for (size_t i = 0; i < kValidTexts.size(); ++i) EXPECT_EQ(j["input"]["texts"][i].get<std::string>(), kValidTexts[i]);
}

TEST(CliTexts, GenerateTextPromptsAreTheTokenizersIds) {
  const std::string model = test::fixtures_dir() + "/decoders/qwen2-tok-bf16";
  std::vector<std::string> texts = kValidTexts;
  texts.push_back(kInvalidUtf8);
  std::vector<std::string> args{"generate", "-m", model, "-k", tiny_tokenizer(), "-n", "1", "--warmup", "0", "--json"};
  for (const auto& t : texts) args.push_back("--text=" + t);
  const Ran r = run_tach(args);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto g = nlohmann::json::parse(r.out);
  std::vector<std::string> tok_args{"--"};
  tok_args.insert(tok_args.end(), texts.begin(), texts.end());
  const auto t = tokenize_json(tok_args);
  ASSERT_EQ(g["input"]["prompt_ids"].size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(g["input"]["prompt_ids"][i], t[i]["ids"]) << i;
}

TEST(CliExitStatus, UsageErrorsExitWithTwo) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"tokenize", "--no-such-flag"},
                                               {"bench", "--batch-szie", "4"},
                                               {"bench", "-b", "0"},
                                               {"bench", "--device", "tpu"},
                                               {"bnech"},
                                               {"no-such-command"},
                                               {"classify", "--repeat", "many"},
                                               {"generate", "-n"},
                                               {}}) {
    EXPECT_EQ(run_tach(args).status, 2) << (args.empty() ? "(no arguments)" : args[0]);
  }
  EXPECT_EQ(run_tach({"--help"}).status, 0);
  EXPECT_EQ(run_tach({"tokenize", "--help"}).status, 0);
  EXPECT_EQ(run_tach({"--version"}).status, 0);
}

TEST(CliExitStatus, OldOptionNamesStillWork) {
  const Ran r = run_tach({"classify", "--model", "preset:bert-tiny", "--batch", "1", "--seq-len", "8", "--repeat", "1",
                          "--compute", "f32", "--json"});
  EXPECT_EQ(r.status, 0) << r.out;
  const Ran help = run_tach({"classify", "--help"});
  EXPECT_NE(help.out.find("--dtype"), std::string::npos);
  EXPECT_EQ(help.out.find("--compute"), std::string::npos) << "the old name is a hidden alias";
}

}  // namespace
}  // namespace tach
