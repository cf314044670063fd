// Knowledge distillation (tach train --distill-from): the KL op against torch, the teacher's
// checks, and 20 distilled steps of each head against transformers with the same loss written in
// torch (scripts/golden/make_distill_golden.py, tests/fixtures/distill).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/safetensors.h"
#include "ops/kl_distill.h"
#include "tach/error.h"
#include "task_fixtures.h"
#include "test_util.h"
#include "train/distill.h"
#include "train/lr_schedule.h"
#include "train/train_step.h"
#include "train/training_method.h"
#include "train/train_options.h"
#include "train/training_model.h"
#include "train_fixtures.h"

namespace tach {
namespace {

std::string distill_dir() { return test::fixtures_dir() + "/distill"; }

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

Tensor f32_tensor(const std::vector<float>& v) {
  Tensor t = Tensor::empty({int64_t(v.size())}, DType::f32);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

Tensor i32_tensor(const std::vector<int32_t>& v) {
  Tensor t = Tensor::empty({int64_t(v.size())}, DType::i32);
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

// The op on torch's cases (float64 from the same f32 inputs): rows and QA-like strided groups,
// with and without a -100 mask, T below and above 1.
TEST(KlDistillOp, LossAndGradientMatchTorch) {
  const nlohmann::json golden = read_json(distill_dir() + "/op.json");
  ASSERT_GE(golden["cases"].size(), 4u);
  for (const auto& c : golden["cases"]) {
    const ops::SoftmaxGroups g{c["outer"].get<int64_t>(), c["classes"].get<int64_t>(), c["inner"].get<int64_t>()};
    const float T = c["temperature"].get<float>();
    const Tensor s = f32_tensor(c["student"].get<std::vector<float>>());
    const Tensor t = f32_tensor(c["teacher"].get<std::vector<float>>());
    const Tensor labels = c["labels"].is_null() ? Tensor() : i32_tensor(c["labels"].get<std::vector<int32_t>>());
    const double want = c["loss"].get<double>();
    // The loss sums in double: only the f32 inputs' rounding is left.
    EXPECT_NEAR(ops::kl_distill_forward(s, t, labels, g, T), want, 1e-9 * std::max(1.0, want)) << c["classes"];
    const Tensor ds = Tensor::zeros({g.numel()}, DType::f32);
    ops::kl_distill_backward(ds, s, t, labels, g, T, 1.0f);
    const auto grad = c["grad"].get<std::vector<double>>();
    for (int64_t i = 0; i < g.numel(); ++i)
      EXPECT_NEAR(ds.data<float>()[i], grad[size_t(i)], 1e-7) << "element " << i;  // f32 rounding of the result
    // Gradients accumulate (+=): a second call adds the same again, scaled.
    ops::kl_distill_backward(ds, s, t, labels, g, T, 0.5f);
    for (int64_t i = 0; i < g.numel(); ++i) EXPECT_NEAR(ds.data<float>()[i], 1.5 * grad[size_t(i)], 2e-7);
  }
}

TEST(KlDistillOp, TheSameDistributionCostsNothing) {
  const Tensor x = f32_tensor({1, -2, 3, 0.5f, 4, -1});
  EXPECT_NEAR(ops::kl_distill_forward(x, x, Tensor(), {2, 3, 1}, 2.0f), 0.0, 1e-12);
  // Every group masked: no loss and no gradient, as the task loss with every label -100.
  const Tensor ds = Tensor::zeros({6}, DType::f32);
  const Tensor none = i32_tensor({-100, -100});
  const Tensor y = f32_tensor({0, 0, 9, 0, 0, 9});
  EXPECT_EQ(ops::kl_distill_forward(x, y, none, {2, 3, 1}, 2.0f), 0.0);
  ops::kl_distill_backward(ds, x, y, none, {2, 3, 1}, 2.0f, 1.0f);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(ds.data<float>()[i], 0.0f);
}

void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming \"" << part << "\"";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what(); }
}

TEST(KlDistillOp, BadArgumentsAreNamed) {
  const Tensor x = f32_tensor({1, 2, 3, 4, 5, 6});
  expect_error([&] { ops::kl_distill_forward(x, x, Tensor(), {2, 3, 1}, 0.0f); }, "temperature");
  expect_error([&] { ops::kl_distill_forward(x, x, Tensor(), {2, 3, 1}, -1.0f); }, "temperature");
  expect_error([&] { ops::kl_distill_forward(x, f32_tensor({1, 2}), Tensor(), {2, 3, 1}, 1.0f); }, "teacher");
  expect_error([&] { ops::kl_distill_forward(x, x, i32_tensor({0}), {2, 3, 1}, 1.0f); }, "labels");
}

// A distillation case: the student built for training with its head, the teacher loaded for
// inference, the batches with their labels (tests/task_fixtures.h's reader).
struct DistillCase {
  train::TrainingModelSource source;
  std::unique_ptr<train::TrainableModel> model;
  std::unique_ptr<train::DistillTeacher> teacher;
  std::vector<TokenBatch> batches;
  std::vector<train::Targets> targets;
  nlohmann::json expected;
  Head head = Head::sequence_classification;
  std::string dir;
};

Head case_head(const std::string& task) {
  return task == "sequence-classification" ? Head::sequence_classification : test::task_head(task);
}

train::StudentShape student_shape(const DistillCase& c, const std::string& spec) {
  train::StudentShape s;
  s.model = spec;
  s.head = c.head;
  if (c.head == Head::sequence_classification || c.head == Head::token_classification) s.labels = c.source.id2label();
  s.problem_type = c.head == Head::sequence_classification ? "single_label_classification" : "";
  s.vocab_size = c.source.config.vocab_size;
  return s;
}

DistillCase load_case(const std::string& name, const std::string& method = "full",
                      const std::string& teacher_dtype = "f32") {
  DistillCase c;
  c.dir = distill_dir() + "/" + name;
  c.expected = read_json(c.dir + "/expected.json");
  c.head = case_head(c.expected["task"].get<std::string>());
  c.source = train::open_training_model(c.dir + "/student", 0);
  c.model = train::build_trainable_model(c.source, c.source.id2label(), c.source.problem_type(), 0, nullptr, c.head);
  if (method != "full") {
    train::MethodOptions mo;
    mo.method = method;
    (void)train::apply_training_method(*c.model, *c.source.family, mo, 0);
  }
  c.teacher = std::make_unique<train::DistillTeacher>(
      c.dir + "/teacher", teacher_dtype, c.expected["temperature"].get<double>(), c.expected["alpha"].get<double>(),
      student_shape(c, c.dir + "/student"), Device::cpu());
  test::load_task_batches(c.dir + "/batches.json", c.source.model_type == "bert", &c.batches, &c.targets);
  if (c.head == Head::sequence_classification)
    for (auto& t : c.targets) t.classes.swap(t.token_labels);  // labels [B]: a classifier's classes
  return c;
}

train::StepSettings settings_for(const DistillCase& c, bool fused) {
  train::StepSettings s;
  s.fused = fused;
  s.adam.weight_decay = c.expected["weight_decay"].get<float>();
  s.max_grad_norm = c.expected["clip"].get<double>();
  s.problem_type = c.head == Head::sequence_classification ? "single_label_classification" : "";
  s.teacher = c.teacher.get();
  return s;
}

train::MicroBatchSource batch_of(const DistillCase& c, int64_t i) {
  return [&c, i](int64_t, TokenBatch* b, train::Targets* t) {
    *b = c.batches[size_t(i % 4)];
    *t = c.targets[size_t(i % 4)];
  };
}

class DistillFixture : public ::testing::TestWithParam<std::string> {};

// 20 AdamW steps of alpha · T² KL + (1 - alpha) · task loss through TrainingStep (teacher phase,
// forward with both losses, backward, clipping, update), eager and fused, against torch.
TEST_P(DistillFixture, TwentyDistilledStepsMatchTorch) {
  for (const bool fused : {false, true}) {
    DistillCase c = load_case(GetParam());
    const nlohmann::json& x = c.expected;
    train::TrainingStep step(*c.model, settings_for(c, fused));
    const train::LinearSchedule schedule{x["lr"].get<double>(), x["warmup"].get<int64_t>(), x["steps"].get<int64_t>(),
                                         true};
    const std::string how = fused ? " (fused)" : " (eager)";
    for (int64_t i = 0; i < x["steps"].get<int64_t>(); ++i) {
      const train::StepOutcome out = step.run(i, 1, batch_of(c, i), schedule.lr(i));
      const auto at = size_t(i);
      // f32 within 1e-5 (relative above 1): the forward's rounding, and 20 updates' of it.
      const double tol = 1e-5;
      EXPECT_NEAR(out.loss, x["losses"][at].get<double>(), tol * std::max(1.0, std::fabs(out.loss))) << i << how;
      EXPECT_NEAR(out.distill_loss, x["kd_losses"][at].get<double>(), tol * std::max(1.0, out.distill_loss))
          << i << how;
      EXPECT_NEAR(out.task_loss, x["task_losses"][at].get<double>(), tol * std::max(1.0, out.task_loss)) << i << how;
      EXPECT_NEAR(out.grad_norm, x["grad_norms"][at].get<double>(), 1e-4 * x["grad_norms"][at].get<double>())
          << i << how;
      EXPECT_GT(out.seconds.teacher, 0.0) << "the teacher phase is timed";
    }
    EXPECT_NEAR(x["loss0"].get<double>(), x["losses"][0].get<double>(), 1e-12) << "the golden file's own step 0";
    const auto ref = model::SafetensorsFile::open(c.dir + "/final.safetensors");
    for (const auto& e : ref.header().entries) {
      const train::Parameter* p = c.model->params.find(e.name);
      ASSERT_NE(p, nullptr) << e.name;
      // Rounding noise on gradients that are zero in exact arithmetic (the key projection's bias,
      // question answering's qa_outputs.bias) walks AdamW by ~lr per step: test_train_tasks says more.
      if (e.name.find("key.bias") != std::string::npos || e.name.find("k_lin.bias") != std::string::npos ||
          e.name == "qa_outputs.bias" || e.name.find("output.LayerNorm.bias") != std::string::npos)
        continue;
      EXPECT_LT(test::tensor_error(p->value, ref.tensor(e)), 1e-4) << e.name << how;
    }
  }
}

// A LoRA student starts as its base (B = 0): its first distilled loss is the full model's. QLoRA
// trains too, its base in NF4 (a different forward): its losses only have to be finite and fall.
TEST_P(DistillFixture, LoraAndQloraStudentsDistil) {
  for (const std::string method : {"lora", "qlora"}) {
    DistillCase c = load_case(GetParam(), method);
    train::StepSettings s = settings_for(c, false);
    train::TrainingStep step(*c.model, s);
    double first = 0, last = 0;
    for (int64_t i = 0; i < 8; ++i) {
      const train::StepOutcome out = step.run(i, 1, batch_of(c, 0), 1e-2);
      ASSERT_TRUE(std::isfinite(out.loss) && out.updated) << method << " step " << i;
      if (i == 0) first = out.loss;
      last = out.loss;
      if (i == 0 && method == "lora") {
        EXPECT_NEAR(out.loss, c.expected["loss0"].get<double>(), 1e-5 * std::max(1.0, out.loss));
      }
    }
    EXPECT_LT(last, first) << method << ": eight steps on one batch lower its loss";
  }
}

// The teacher in bf16 (inference's bf16 GEMM inputs): the same soft targets to bf16's precision.
TEST_P(DistillFixture, TeacherInAnotherDtype) {
  DistillCase c = load_case(GetParam(), "full", "bf16");
  train::TrainingStep step(*c.model, settings_for(c, false));
  const train::StepOutcome out = step.run(0, 1, batch_of(c, 0), 0.0 + 1e-9);
  const double kd = c.expected["kd0"].get<double>();
  EXPECT_NEAR(out.distill_loss, kd, 0.05 * std::max(0.1, kd));  // bf16 keeps 8 bits of mantissa
}

INSTANTIATE_TEST_SUITE_P(Fixtures, DistillFixture,
                         ::testing::Values("bert2-bert1-cls3", "bert2-distilbert1-cls3", "bert2-distilbert1-token-cls5",
                                           "bert2-bert1-qa", "bert2-distilbert1-mlm"),
                         [](const auto& p) { return test::param_name(p.param); });

// A teacher of another family (a Qwen2 token classifier over the same labels and vocabulary)
// teaches a DistilBERT student: its logits come laid out as the student's.
TEST(DistillTeacher, AnyFamilyOverTheSameLabels) {
  DistillCase c = load_case("bert2-distilbert1-token-cls5");
  const std::string qwen = test::fixtures_dir() + "/heads/qwen2-tokcls-f32";
  train::StudentShape s = student_shape(c, "student");
  s.labels = {"O", "B-PER", "I-PER", "B-LOC", "I-LOC"};  // the Qwen2 fixture's order: a student over those labels
  const train::DistillTeacher t(qwen, "f32", 2.0, 0.5, s, Device::cpu());
  const Tensor logits = t.logits(c.batches[0], {});
  EXPECT_EQ(logits.shape(), (Shape{c.batches[0].batch() * c.batches[0].seq_len(), 5}));
}

TEST(DistillTeacher, MismatchesAreRefusedByName) {
  DistillCase c = load_case("bert2-bert1-cls3");
  const train::StudentShape s = student_shape(c, "student");
  const std::string teacher = c.dir + "/teacher";
  auto open = [&](const std::string& spec, train::StudentShape shape) {
    return [spec, shape] { train::DistillTeacher(spec, "f32", 2.0, 0.5, shape, Device::cpu()); };
  };
  train::StudentShape other_labels = s;
  other_labels.labels = {"bad", "good", "ugly"};
  expect_error(open(teacher, other_labels), "same labels in the same order");
  train::StudentShape fewer = s;
  fewer.labels = {"negative", "positive"};
  expect_error(open(teacher, fewer), "the same number");
  // Another vocabulary: ModernBERT's masked LM of 256 tokens for a student of 120.
  DistillCase mlm = load_case("bert2-distilbert1-mlm");
  expect_error(open(test::fixtures_dir() + "/train_tasks/modernbert-mlm-f32/model", student_shape(mlm, "student")),
               "same tokenizer");
  // A teacher without the student's head as trained (a question-answering model for a classifier).
  expect_error(open(distill_dir() + "/bert2-bert1-qa/teacher", s),
               "(BertForQuestionAnswering) has no trained sequence-classification head");
  train::StudentShape regression = s;
  regression.problem_type = "regression";
  expect_error(open(teacher, regression), "single-label classifier");
  expect_error([&] { train::validate_distill_settings(0, 0.5); }, "--distill-temperature");
  expect_error([&] { train::validate_distill_settings(-1, 0.5); }, "--distill-temperature");
  expect_error([&] { train::validate_distill_settings(2, 1.5); }, "--distill-alpha");
  expect_error([&] { train::validate_distill_settings(2, -0.1); }, "--distill-alpha");
  expect_error([&] { train::validate_distill_settings(2, std::nan("")); }, "--distill-alpha");
  EXPECT_NO_THROW(train::validate_distill_settings(1, 0));
  EXPECT_NO_THROW(train::validate_distill_settings(1, 1));
}

// The teacher's settings without a teacher, and a teacher dtype the device does not run, are usage
// errors naming the option (checked with the other options, before any model is read).
TEST(Distill, TeacherOptionsAreCheckedBeforeAnyModel) {
  const auto usage_error = [](const TrainOptions& o, const std::string& part) {
    try {
      train::validate_options(o);
      ADD_FAILURE() << "accepted; wanted: " << part;
    } catch (const UsageError& e) { EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what(); }
  };
  // Neither the student nor the data exists: nothing is read before these checks.
  TrainOptions base;
  base.model = "/no/such/student";
  base.data.path = "/no/such/data.csv";
  TrainOptions o = base;
  o.distill_temperature = 3;
  usage_error(o, "--distill-temperature 3 needs --distill-from");
  o = base;
  o.distill_alpha = 0.7;
  usage_error(o, "--distill-alpha 0.7 needs --distill-from");
  o = base;
  o.distill_dtype = "bf16";
  usage_error(o, "--distill-dtype bf16 needs --distill-from");
  o = base;
  o.distill_from = "/no/such/teacher";
  o.distill_dtype = "f16";
  usage_error(o, "--distill-dtype f16 is not supported on cpu (f32, bf16, int8, nf4)");
  o.device = Device{DeviceKind::cuda, 0};
  o.distill_dtype = "i4";
  usage_error(o, "--distill-dtype: ");
  for (const char* dtype : {"f16", "int8", "nf4"}) {  // a GPU runs every one (int8, nf4 weight-only)
    o.distill_dtype = dtype;
    EXPECT_NO_THROW(train::validate_options(o)) << dtype;
  }
}

}  // namespace
}  // namespace tach
