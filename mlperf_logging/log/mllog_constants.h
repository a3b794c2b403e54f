// MLLOG constants: event types, metadata fields, value vocabularies and every log key of MLPerf
// Training (the official mllog constants plus every key the BERT rule files and BERT submissions
// use). The spelling is the contract: a key here is byte-for-byte what the official checker matches
// on.
#pragma once
#include <string_view>

namespace mlbert::mllog {

namespace constants {
inline constexpr std::string_view default_namespace = "";
inline constexpr std::string_view interval_start = "INTERVAL_START";
inline constexpr std::string_view interval_end = "INTERVAL_END";
inline constexpr std::string_view point_in_time = "POINT_IN_TIME";
// submission_division values
inline constexpr std::string_view closed = "closed";
inline constexpr std::string_view open = "open";
// submission_status values (rulesets up to 4.0.0 check these)
inline constexpr std::string_view onprem = "onprem";
inline constexpr std::string_view cloud = "cloud";
inline constexpr std::string_view preview = "preview";
inline constexpr std::string_view research = "research";
// run_stop metadata.status values
inline constexpr std::string_view success = "success";
inline constexpr std::string_view aborted = "aborted";
// submission_benchmark values
inline constexpr std::string_view bert = "bert";
inline constexpr std::string_view dlrm = "dlrm";
inline constexpr std::string_view dlrm_dcnv2 = "dlrm_dcnv2";
inline constexpr std::string_view gnmt = "gnmt";
inline constexpr std::string_view gnn = "gnn";
inline constexpr std::string_view gpt3 = "gpt3";
inline constexpr std::string_view llama2_70b_lora = "llama2_70b_lora";
inline constexpr std::string_view llama31_405b = "llama31_405b";
inline constexpr std::string_view llama31_8b = "llama31_8b";
inline constexpr std::string_view maskrcnn = "maskrcnn";
inline constexpr std::string_view minigo = "minigo";
inline constexpr std::string_view ncf = "ncf";
inline constexpr std::string_view resnet = "resnet";
inline constexpr std::string_view retinanet = "retinanet";
inline constexpr std::string_view rgat = "rgat";
inline constexpr std::string_view rnnt = "rnnt";
inline constexpr std::string_view ssd = "ssd";
inline constexpr std::string_view stable_diffusion = "stable_diffusion";
inline constexpr std::string_view transformer = "transformer";
inline constexpr std::string_view unet3d = "unet3d";
// opt_name values
inline constexpr std::string_view adagrad = "adagrad";
inline constexpr std::string_view adam = "adam";
inline constexpr std::string_view adamw = "adamw";
inline constexpr std::string_view lamb = "lamb";
inline constexpr std::string_view lars = "lars";
inline constexpr std::string_view lazy_adam = "lazy_adam";
inline constexpr std::string_view sgd = "sgd";
}  // namespace constants

// Fields of the `metadata` object.
namespace meta {
inline constexpr std::string_view file = "file";
inline constexpr std::string_view lineno = "lineno";
inline constexpr std::string_view epoch_count = "epoch_count";
inline constexpr std::string_view epoch_num = "epoch_num";
inline constexpr std::string_view first_epoch_num = "first_epoch_num";
inline constexpr std::string_view samples_count = "samples_count";
inline constexpr std::string_view step_num = "step_num";
inline constexpr std::string_view status = "status";
inline constexpr std::string_view tensor = "tensor";
inline constexpr std::string_view bbox = "bbox";
inline constexpr std::string_view segm = "segm";
}  // namespace meta

// Log keys.
namespace key {
// submission
inline constexpr std::string_view submission_benchmark = "submission_benchmark";
inline constexpr std::string_view submission_division = "submission_division";
inline constexpr std::string_view submission_entry = "submission_entry";
inline constexpr std::string_view submission_org = "submission_org";
inline constexpr std::string_view submission_platform = "submission_platform";
inline constexpr std::string_view submission_poc_email = "submission_poc_email";
inline constexpr std::string_view submission_poc_name = "submission_poc_name";
inline constexpr std::string_view submission_status = "submission_status";
// run structure
inline constexpr std::string_view cache_clear = "cache_clear";
inline constexpr std::string_view init_start = "init_start";
inline constexpr std::string_view init_stop = "init_stop";
inline constexpr std::string_view run_start = "run_start";
inline constexpr std::string_view run_stop = "run_stop";
inline constexpr std::string_view staging_start = "staging_start";
inline constexpr std::string_view staging_stop = "staging_stop";
inline constexpr std::string_view block_start = "block_start";
inline constexpr std::string_view block_stop = "block_stop";
inline constexpr std::string_view epoch_start = "epoch_start";
inline constexpr std::string_view epoch_stop = "epoch_stop";
inline constexpr std::string_view eval_start = "eval_start";
inline constexpr std::string_view eval_stop = "eval_stop";
inline constexpr std::string_view eval_accuracy = "eval_accuracy";
inline constexpr std::string_view tracked_stats = "tracked_stats";
// data and model
inline constexpr std::string_view seed = "seed";
inline constexpr std::string_view train_samples = "train_samples";
inline constexpr std::string_view eval_samples = "eval_samples";
inline constexpr std::string_view trained_samples = "trained_samples";
inline constexpr std::string_view weights_initialization = "weights_initialization";
inline constexpr std::string_view global_batch_size = "global_batch_size";
inline constexpr std::string_view gradient_accumulation_steps = "gradient_accumulation_steps";
inline constexpr std::string_view max_samples = "max_samples";
inline constexpr std::string_view max_steps = "max_steps";
inline constexpr std::string_view max_sequence_length = "max_sequence_length";
inline constexpr std::string_view max_predictions_per_seq = "max_predictions_per_seq";
inline constexpr std::string_view init_checkpoint_step = "init_checkpoint_step";
inline constexpr std::string_view model_weights_initialization_scale =
    "model_weights_initialization_scale";
// BERT optimizer (LAMB) and schedule
inline constexpr std::string_view opt_name = "opt_name";
inline constexpr std::string_view opt_base_learning_rate = "opt_base_learning_rate";
inline constexpr std::string_view opt_end_learning_rate = "opt_end_learning_rate";
inline constexpr std::string_view opt_epsilon = "opt_epsilon";  // rulesets 1.1.0 and 2.0.0
inline constexpr std::string_view opt_lamb_epsilon = "opt_lamb_epsilon";  // rulesets 2.1.0 on
inline constexpr std::string_view opt_lamb_beta_1 = "opt_lamb_beta_1";
inline constexpr std::string_view opt_lamb_beta_2 = "opt_lamb_beta_2";
inline constexpr std::string_view opt_lamb_weight_decay_rate = "opt_lamb_weight_decay_rate";
inline constexpr std::string_view opt_lamb_learning_rate_min = "opt_lamb_learning_rate_min";
inline constexpr std::string_view opt_lamb_learning_rate_decay_poly_power =
    "opt_lamb_learning_rate_decay_poly_power";
inline constexpr std::string_view opt_lamb_learning_rate_hold_epochs =
    "opt_lamb_learning_rate_hold_epochs";
inline constexpr std::string_view opt_learning_rate_training_steps =
    "opt_learning_rate_training_steps";
inline constexpr std::string_view opt_learning_rate_warmup_steps = "opt_learning_rate_warmup_steps";
inline constexpr std::string_view num_warmup_steps = "num_warmup_steps";
inline constexpr std::string_view start_warmup_step = "start_warmup_step";
inline constexpr std::string_view opt_gradient_clip_norm = "opt_gradient_clip_norm";
// Adam / AdamW (open-division BERT submissions use these)
inline constexpr std::string_view opt_adam_beta_1 = "opt_adam_beta_1";
inline constexpr std::string_view opt_adam_beta_2 = "opt_adam_beta_2";
inline constexpr std::string_view opt_adam_epsilon = "opt_adam_epsilon";
inline constexpr std::string_view opt_adamw_beta_1 = "opt_adamw_beta_1";
inline constexpr std::string_view opt_adamw_beta_2 = "opt_adamw_beta_2";
inline constexpr std::string_view opt_adamw_epsilon = "opt_adamw_epsilon";
inline constexpr std::string_view opt_adamw_weight_decay = "opt_adamw_weight_decay";
inline constexpr std::string_view opt_weight_decay = "opt_weight_decay";
// other benchmarks' optimizer and schedule keys of the official constants
inline constexpr std::string_view opt_adagrad_epsilon = "opt_adagrad_epsilon";
inline constexpr std::string_view opt_adagrad_initial_accumulator_value =
    "opt_adagrad_initial_accumulator_value";
inline constexpr std::string_view opt_adagrad_learning_rate_decay =
    "opt_adagrad_learning_rate_decay";
inline constexpr std::string_view lars_epsilon = "lars_epsilon";
inline constexpr std::string_view lars_opt_base_learning_rate = "lars_opt_base_learning_rate";
inline constexpr std::string_view lars_opt_end_learning_rate = "lars_opt_end_learning_rate";
inline constexpr std::string_view lars_opt_learning_rate_warmup_epochs =
    "lars_opt_learning_rate_warmup_epochs";
inline constexpr std::string_view lars_opt_learning_rate_decay_poly_power =
    "lars_opt_learning_rate_decay_poly_power";
inline constexpr std::string_view lars_opt_learning_rate_decay_steps =
    "lars_opt_learning_rate_decay_steps";
inline constexpr std::string_view lars_opt_momentum = "lars_opt_momentum";
inline constexpr std::string_view lars_opt_weight_decay = "lars_opt_weight_decay";
inline constexpr std::string_view opt_learning_rate_alt_decay_func =
    "opt_learning_rate_alt_decay_func";
inline constexpr std::string_view opt_learning_rate_alt_warmup_func =
    "opt_learning_rate_alt_warmup_func";
inline constexpr std::string_view opt_learning_rate_decay_boundary_epochs =
    "opt_learning_rate_decay_boundary_epochs";
inline constexpr std::string_view opt_learning_rate_decay_boundary_steps =
    "opt_learning_rate_decay_boundary_steps";
inline constexpr std::string_view opt_learning_rate_decay_factor = "opt_learning_rate_decay_factor";
inline constexpr std::string_view opt_learning_rate_decay_interval =
    "opt_learning_rate_decay_interval";
inline constexpr std::string_view opt_learning_rate_decay_start_step =
    "opt_learning_rate_decay_start_step";
inline constexpr std::string_view opt_learning_rate_decay_steps = "opt_learning_rate_decay_steps";
inline constexpr std::string_view opt_learning_rate_decay_schedule =
    "opt_learning_rate_decay_schedule";
inline constexpr std::string_view opt_learning_rate_remain_steps = "opt_learning_rate_remain_steps";
inline constexpr std::string_view opt_learning_rate_warmup_epochs =
    "opt_learning_rate_warmup_epochs";
inline constexpr std::string_view opt_learning_rate_warmup_factor =
    "opt_learning_rate_warmup_factor";
inline constexpr std::string_view max_image_size = "max_image_size";
inline constexpr std::string_view min_image_size = "min_image_size";
inline constexpr std::string_view model_bn_span = "model_bn_span";
inline constexpr std::string_view num_image_candidates = "num_image_candidates";
inline constexpr std::string_view model_eval_ema_factor = "model_eval_ema_factor";
inline constexpr std::string_view eval_max_prediction_symbols = "eval_max_prediction_symbols";
inline constexpr std::string_view lora_alpha = "lora_alpha";
// power measurement
inline constexpr std::string_view power_measurement_start = "power_measurement_start";
inline constexpr std::string_view power_measurement_stop = "power_measurement_stop";
inline constexpr std::string_view power_reading = "power_reading";
}  // namespace key

}  // namespace mlbert::mllog
