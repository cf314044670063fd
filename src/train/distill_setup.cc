// tach train --distill-from: the teacher opened on the student's device, once the student's head,
// labels and model are known (make_step), and what the run says about it.
#include "tach/plain_number.h"
#include "train/train_run.h"

namespace tach::train {

std::unique_ptr<DistillTeacher> open_teacher(TrainRun& r) {
  const TrainOptions& o = r.o;
  if (o.distill_from.empty()) return nullptr;
  StudentShape student;
  student.model = o.model;
  student.head = r.task;
  student.labels = r.labels;
  student.problem_type = r.problem_type;
  student.vocab_size = r.src.is_decoder() ? r.src.decoder.vocab_size : r.src.config.vocab_size;
  student.tokenizer = r.tokenizer_path;  // -k, or the model's directory (prepare_data)
  auto teacher = std::make_unique<DistillTeacher>(o.distill_from, o.distill_dtype, o.distill_temperature,
                                                  o.distill_alpha, student, r.device());
  r.note("distilling from " + o.distill_from + " (" + teacher->info().architecture + ", " +
         plain_number(double(teacher->info().parameters) / 1e6, 3) + "M parameters, " + o.distill_dtype +
         "): loss = " + plain_number(o.distill_alpha) + " x T^2 KL(teacher || student) + " +
         plain_number(1.0 - o.distill_alpha) + " x task loss, T " + plain_number(o.distill_temperature) +
         "; the teacher's inference is the step's \"teacher\" phase");
  return teacher;
}

nlohmann::json distillation_summary(const TrainOptions& o) {
  return {{"teacher", o.distill_from},
          {"teacher_dtype", o.distill_dtype},
          {"temperature", o.distill_temperature},
          {"alpha", o.distill_alpha},
          {"loss",
           "alpha * T^2 * KL(softmax(teacher / T) || softmax(student / T)) + (1 - alpha) * task loss; steps.jsonl "
           "has each step's distill_loss (T^2 KL) and task_loss"},
          {"train_loss",
           "the mix above: steps.jsonl's loss, the epochs' train_loss (epoch_results.csv, summary.json) and the "
           "printed train loss; the epochs' train_task_loss and train_distill_loss are its two terms, eval_loss the "
           "task loss alone (no teacher in evaluation)"}};
}

}  // namespace tach::train
