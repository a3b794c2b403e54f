// BERT RCP data per ruleset. Numbers transcribed from the official mlperf_logging 4.1.59 package;
// 2.1.0 data also serves 3.0.0, 3.1.0 and 4.0.0, and 4.1.0 data also serves 5.0.0 and 5.1.0
// (the official files for those rulesets are byte-identical copies).
#include "mlperf_logging/rcp/table.h"

#include <array>
#include <stdexcept>
#include <string>

#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::logging {
namespace {

// clang-format off
constexpr RcpHyperparam kv1_0_0_256_hparams[] = {{"opt_base_learning_rate", 0.00035}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 13700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.9}, {"opt_lamb_beta_2", 0.999}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 1.0}};
constexpr std::int64_t kv1_0_0_256_samples[] = {
    2834944, 2508800, 2709504, 2609152, 2383360, 2308096,
    2910208, 2333184, 2283008, 2935296, 2483712, 2558976,
    2709504, 2232832, 2333184, 2533888, 2709504, 2257920,
    2609152, 2809856,
};
constexpr RcpHyperparam kv1_0_0_448_hparams[] = {{"opt_base_learning_rate", 0.0004}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 8103.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.9}, {"opt_lamb_beta_2", 0.999}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 1.0}};
constexpr std::int64_t kv1_0_0_448_samples[] = {
    2558976, 2634240, 2885120, 2734592, 3010560, 2383360,
    2458624, 2609152, 2558976, 2684416, 2508800, 2458624,
    2684416, 2533888, 2533888, 2784768, 2308096, 2784768,
    2584064, 2809856,
};
constexpr RcpHyperparam kv1_0_0_1536_hparams[] = {{"opt_base_learning_rate", 0.002}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 2254.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.66}, {"opt_lamb_beta_2", 0.996}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 1.0}};
constexpr std::int64_t kv1_0_0_1536_samples[] = {
    2836240, 2801664, 2801664, 2727936, 2801664, 2875392,
    2899968, 2727936, 2777088, 2875392, 2777088, 2801664,
    2678784, 2801664, 2703360, 2629632, 2727936, 2703360,
    2654208, 2949120,
};
constexpr RcpHyperparam kv1_0_0_3072_hparams[] = {{"opt_base_learning_rate", 0.002}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 1141.0}, {"num_warmup_steps", 100.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.66}, {"opt_lamb_beta_2", 0.998}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 96.0}};
constexpr std::int64_t kv1_0_0_3072_samples[] = {
    2703360, 2482176, 3072000, 2654208, 2580480, 2727936,
    2605056, 2801664, 2777088, 2580480, 2875392, 2826240,
    2973696, 2850816, 2678784, 2919120, 3121152, 2605056,
    2678784, 2850816,
};
constexpr RcpHyperparam kv1_0_0_6144_hparams[] = {{"opt_base_learning_rate", 0.0029293}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", -700.0}, {"opt_lamb_beta_1", 0.7206}, {"opt_lamb_beta_2", 0.78921}, {"opt_lamb_weight_decay_rate", 0.001}, {"gradient_accumulation_steps", 24.0}};
constexpr std::int64_t kv1_0_0_6144_samples[] = {
    3366912, 3244032, 3219456, 3686400, 3317760, 3293184,
    3416064, 3317760, 3391488, 2998272, 3317760, 3072000,
    3416064, 3293184, 3391488, 3514368, 3194880, 3465216,
    3244032, 3268608,
};
constexpr RcpHyperparam kv1_0_0_6912_hparams[] = {{"opt_base_learning_rate", 0.0029293}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", -700.0}, {"opt_lamb_beta_1", 0.7206}, {"opt_lamb_beta_2", 0.78921}, {"opt_lamb_weight_decay_rate", 0.001}, {"gradient_accumulation_steps", 27.0}};
constexpr std::int64_t kv1_0_0_6912_samples[] = {
    3621888, 3677184, 3400704, 3594240, 3483648, 3732480,
    3677184, 3797776, 3621888, 3760128, 3649536, 3483648,
    3566592, 3649536, 3621888, 3483648, 3290112, 3704832,
    3594240, 3511296,
};
constexpr RcpHyperparam kv1_0_0_8192_hparams[] = {{"opt_base_learning_rate", 0.00288293}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 600.0}, {"num_warmup_steps", 287.0}, {"start_warmup_step", -76.0}, {"opt_lamb_beta_1", 0.88}, {"opt_lamb_beta_2", 0.88}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 16.0}};
constexpr std::int64_t kv1_0_0_8192_samples[] = {
    4251648, 4153344, 4055040, 4177920, 4177920, 4079616,
    4276224, 4128768, 4177920, 4153344, 4177920, 4079616,
    4300800, 4153344, 4276224, 4423680, 4276224, 4104192,
    4251648, 4153344,
};
constexpr RcpHyperparam kv1_0_0_12288_hparams[] = {{"opt_base_learning_rate", 0.0033}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 500.0}, {"num_warmup_steps", 300.0}, {"start_warmup_step", -76.0}, {"opt_lamb_beta_1", 0.77}, {"opt_lamb_beta_2", 0.885}, {"opt_lamb_weight_decay_rate", 0.0147050375}, {"gradient_accumulation_steps", 4.0}};
constexpr std::int64_t kv1_0_0_12288_samples[] = {
    4718592, 4816896, 4718592, 5210112, 4816896, 5406720,
    5111808, 5210112, 5013504, 4816896, 5210112, 5013504,
    4718592, 5111808, 4816896, 4915200, 5111808, 4718592,
    4718592, 4620288,
};
constexpr RcpRecord kv1_0_0_records[] = {
    {"bert_ref_256", 256, "", "", "", kv1_0_0_256_hparams, kv1_0_0_256_samples},
    {"bert_ref_448", 448, "", "", "", kv1_0_0_448_hparams, kv1_0_0_448_samples},
    {"bert_ref_1536", 1536, "", "", "", kv1_0_0_1536_hparams, kv1_0_0_1536_samples},
    {"bert_ref_3072", 3072, "", "", "", kv1_0_0_3072_hparams, kv1_0_0_3072_samples},
    {"bert_ref_6144", 6144, "", "", "", kv1_0_0_6144_hparams, kv1_0_0_6144_samples},
    {"bert_ref_6912", 6912, "", "", "", kv1_0_0_6912_hparams, kv1_0_0_6912_samples},
    {"bert_ref_8192", 8192, "", "", "", kv1_0_0_8192_hparams, kv1_0_0_8192_samples},
    {"bert_ref_12288", 12288, "", "", "", kv1_0_0_12288_hparams, kv1_0_0_12288_samples},
};

constexpr RcpHyperparam kv1_1_0_256_hparams[] = {{"opt_base_learning_rate", 0.00035}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 13700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.9}, {"opt_lamb_beta_2", 0.999}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 1.0}};
constexpr std::int64_t kv1_1_0_256_samples[] = {
    2834944, 2508800, 2709504, 2609152, 2383360, 2308096,
    2910208, 2333184, 2283008, 2935296, 2483712, 2558976,
    2709504, 2232832, 2333184, 2533888, 2709504, 2257920,
    2609152, 2809856,
};
constexpr RcpHyperparam kv1_1_0_448_hparams[] = {{"opt_base_learning_rate", 0.0004}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 8103.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.9}, {"opt_lamb_beta_2", 0.999}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 1.0}};
constexpr std::int64_t kv1_1_0_448_samples[] = {
    2558976, 2634240, 2885120, 2734592, 3010560, 2383360,
    2458624, 2609152, 2558976, 2684416, 2508800, 2458624,
    2684416, 2533888, 2533888, 2784768, 2308096, 2784768,
    2584064, 2809856,
};
constexpr RcpHyperparam kv1_1_0_1536_hparams[] = {{"opt_base_learning_rate", 0.002}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 2254.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.66}, {"opt_lamb_beta_2", 0.996}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 1.0}};
constexpr std::int64_t kv1_1_0_1536_samples[] = {
    2836240, 2801664, 2801664, 2727936, 2801664, 2875392,
    2899968, 2727936, 2777088, 2875392, 2777088, 2801664,
    2678784, 2801664, 2703360, 2629632, 2727936, 2703360,
    2654208, 2949120,
};
constexpr RcpHyperparam kv1_1_0_4096_hparams[] = {{"opt_base_learning_rate", 0.0024}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 855.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.66}, {"opt_lamb_beta_2", 0.998}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 16.0}};
constexpr std::int64_t kv1_1_0_4096_samples[] = {
    2801664, 3022848, 2801664, 3022848, 3047424, 2727936,
    2973696, 2703360, 2924544, 2629632, 2678784, 2850816,
    2777088, 2826240, 2801664, 2850816, 2924544, 2924544,
    2727936, 2850816,
};
constexpr RcpHyperparam kv1_1_0_3072_hparams[] = {{"opt_base_learning_rate", 0.002}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 1141.0}, {"num_warmup_steps", 100.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.66}, {"opt_lamb_beta_2", 0.998}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 96.0}};
constexpr std::int64_t kv1_1_0_3072_samples[] = {
    2703360, 2482176, 3072000, 2654208, 2580480, 2727936,
    2605056, 2801664, 2777088, 2580480, 2875392, 2826240,
    2973696, 2850816, 2678784, 2919120, 3121152, 2605056,
    2678784, 2850816,
};
constexpr RcpHyperparam kv1_1_0_6144_hparams[] = {{"opt_base_learning_rate", 0.0029293}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", -700.0}, {"opt_lamb_beta_1", 0.7206}, {"opt_lamb_beta_2", 0.78921}, {"opt_lamb_weight_decay_rate", 0.001}, {"gradient_accumulation_steps", 24.0}};
constexpr std::int64_t kv1_1_0_6144_samples[] = {
    3366912, 3244032, 3219456, 3686400, 3317760, 3293184,
    3416064, 3317760, 3391488, 2998272, 3317760, 3072000,
    3416064, 3293184, 3391488, 3514368, 3194880, 3465216,
    3244032, 3268608,
};
constexpr RcpHyperparam kv1_1_0_6912_hparams[] = {{"opt_base_learning_rate", 0.0029293}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", -700.0}, {"opt_lamb_beta_1", 0.7206}, {"opt_lamb_beta_2", 0.78921}, {"opt_lamb_weight_decay_rate", 0.001}, {"gradient_accumulation_steps", 27.0}};
constexpr std::int64_t kv1_1_0_6912_samples[] = {
    3621888, 3677184, 3400704, 3594240, 3483648, 3732480,
    3677184, 3797776, 3621888, 3760128, 3649536, 3483648,
    3566592, 3649536, 3621888, 3483648, 3290112, 3704832,
    3594240, 3511296,
};
constexpr RcpHyperparam kv1_1_0_8192_hparams[] = {{"opt_base_learning_rate", 0.00288293}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 600.0}, {"num_warmup_steps", 287.0}, {"start_warmup_step", -76.0}, {"opt_lamb_beta_1", 0.88}, {"opt_lamb_beta_2", 0.88}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 16.0}};
constexpr std::int64_t kv1_1_0_8192_samples[] = {
    4251648, 4153344, 4055040, 4177920, 4177920, 4079616,
    4276224, 4128768, 4177920, 4153344, 4177920, 4079616,
    4300800, 4153344, 4276224, 4423680, 4276224, 4104192,
    4251648, 4153344,
};
constexpr RcpHyperparam kv1_1_0_8704_hparams[] = {{"opt_base_learning_rate", 0.002971656225}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 600.0}, {"num_warmup_steps", 287.0}, {"start_warmup_step", -76.0}, {"opt_lamb_beta_1", 0.88}, {"opt_lamb_beta_2", 0.88}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 34.0}};
constexpr std::int64_t kv1_1_0_8704_samples[] = {
    4343040, 4143360, 4143360, 4442880, 4392960, 4243200,
    4193280, 4542720, 4492800, 4243200, 4243200, 4392960,
    4243200, 4193280, 4093440, 4392960, 4093440, 4243200,
    4093440, 4392960,
};
constexpr RcpHyperparam kv1_1_0_12288_hparams[] = {{"opt_base_learning_rate", 0.0031}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 500.0}, {"num_warmup_steps", 300.0}, {"start_warmup_step", -100.0}, {"opt_lamb_beta_1", 0.8}, {"opt_lamb_beta_2", 0.925}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 32.0}};
constexpr std::int64_t kv1_1_0_12288_samples[] = {
    4542720, 4392960, 4642560, 4542720, 4542720, 4492800,
    4343040, 4343040, 4442880, 4442880, 4442880, 4442880,
    4442880, 4692480, 4492800, 4442880, 4442880, 4442880,
    4492800, 4343040,
};
constexpr RcpHyperparam kv1_1_0_13056_hparams[] = {{"opt_base_learning_rate", 0.00319540686}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 500.0}, {"num_warmup_steps", 300.0}, {"start_warmup_step", -100.0}, {"opt_lamb_beta_1", 0.8}, {"opt_lamb_beta_2", 0.925}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 34.0}};
constexpr std::int64_t kv1_1_0_13056_samples[] = {
    4442880, 4592640, 4642560, 4842240, 4742400, 4592640,
    4642560, 4692480, 4942080, 4542720, 4592640, 4093440,
    4442880, 4792320, 4642560, 4592640, 4592640, 4892160,
    4742400, 4592640,
};
constexpr RcpRecord kv1_1_0_records[] = {
    {"bert_ref_256", 256, "Google", "Prior to 1.0 submission", "TPU-v4-16 / TF1, TF version ~2.4", kv1_1_0_256_hparams, kv1_1_0_256_samples},
    {"bert_ref_448", 448, "Google", "Prior to 1.0 submission", "TPU-v4-16 / TF1, TF version ~2.4", kv1_1_0_448_hparams, kv1_1_0_448_samples},
    {"bert_ref_1536", 1536, "Google", "At 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv1_1_0_1536_hparams, kv1_1_0_1536_samples},
    {"bert_ref_4096", 4096, "Google", "Prior to 1.1 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv1_1_0_4096_hparams, kv1_1_0_4096_samples},
    {"bert_ref_3072", 3072, "Google", "Prior to 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv1_1_0_3072_hparams, kv1_1_0_3072_samples},
    {"bert_ref_6144", 6144, "Google", "At 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv1_1_0_6144_hparams, kv1_1_0_6144_samples},
    {"bert_ref_6912", 6912, "Google", "At 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv1_1_0_6912_hparams, kv1_1_0_6912_samples},
    {"bert_ref_8192", 8192, "Google", "Prior to 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv1_1_0_8192_hparams, kv1_1_0_8192_samples},
    {"bert_ref_8704", 8704, "NVIDIA", "At 1.1 submission", "TBD", kv1_1_0_8704_hparams, kv1_1_0_8704_samples},
    {"bert_ref_12288", 12288, "NVIDIA", "At 1.1 submission", "TBD", kv1_1_0_12288_hparams, kv1_1_0_12288_samples},
    {"bert_ref_13056", 13056, "NVIDIA", "At 1.1 submission", "TBD", kv1_1_0_13056_hparams, kv1_1_0_13056_samples},
};

constexpr RcpHyperparam kv2_0_0_256_hparams[] = {{"opt_base_learning_rate", 0.00035}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 13700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.9}, {"opt_lamb_beta_2", 0.999}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 1.0}};
constexpr std::int64_t kv2_0_0_256_samples[] = {
    2834944, 2508800, 2709504, 2609152, 2383360, 2308096,
    2910208, 2333184, 2283008, 2935296, 2483712, 2558976,
    2709504, 2232832, 2333184, 2533888, 2709504, 2257920,
    2609152, 2809856,
};
constexpr RcpHyperparam kv2_0_0_448_hparams[] = {{"opt_base_learning_rate", 0.0004}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 8103.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.9}, {"opt_lamb_beta_2", 0.999}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 1.0}};
constexpr std::int64_t kv2_0_0_448_samples[] = {
    2558976, 2634240, 2885120, 2734592, 3010560, 2383360,
    2458624, 2609152, 2558976, 2684416, 2508800, 2458624,
    2684416, 2533888, 2533888, 2784768, 2308096, 2784768,
    2584064, 2809856,
};
constexpr RcpHyperparam kv2_0_0_1536_hparams[] = {{"opt_base_learning_rate", 0.002}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 2254.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.66}, {"opt_lamb_beta_2", 0.996}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 1.0}};
constexpr std::int64_t kv2_0_0_1536_samples[] = {
    2836240, 2801664, 2801664, 2727936, 2801664, 2875392,
    2899968, 2727936, 2777088, 2875392, 2777088, 2801664,
    2678784, 2801664, 2703360, 2629632, 2727936, 2703360,
    2654208, 2949120,
};
constexpr RcpHyperparam kv2_0_0_4096_hparams[] = {{"opt_base_learning_rate", 0.0024}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 855.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.66}, {"opt_lamb_beta_2", 0.998}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 16.0}};
constexpr std::int64_t kv2_0_0_4096_samples[] = {
    2801664, 3022848, 2801664, 3022848, 3047424, 2727936,
    2973696, 2703360, 2924544, 2629632, 2678784, 2850816,
    2777088, 2826240, 2801664, 2850816, 2924544, 2924544,
    2727936, 2850816,
};
constexpr RcpHyperparam kv2_0_0_3072_hparams[] = {{"opt_base_learning_rate", 0.002}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 1141.0}, {"num_warmup_steps", 100.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.66}, {"opt_lamb_beta_2", 0.998}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 96.0}};
constexpr std::int64_t kv2_0_0_3072_samples[] = {
    2703360, 2482176, 3072000, 2654208, 2580480, 2727936,
    2605056, 2801664, 2777088, 2580480, 2875392, 2826240,
    2973696, 2850816, 2678784, 2919120, 3121152, 2605056,
    2678784, 2850816,
};
constexpr RcpHyperparam kv2_0_0_4608_hparams[] = {{"opt_base_learning_rate", 0.0035}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.62}, {"opt_lamb_beta_2", 0.9}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 144.0}};
constexpr std::int64_t kv2_0_0_4608_samples[] = {
    2626560, 2833920, 2787840, 2949120, 2880000, 2810880,
    2880000, 3041280, 2787840, 2833920, 2741760, 2810880,
    2649600, 2718720, 2488320, 2603520, 2833920, 2787840,
    2810880, 3018240,
};
constexpr RcpHyperparam kv2_0_0_6144_hparams[] = {{"opt_base_learning_rate", 0.0029293}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", -700.0}, {"opt_lamb_beta_1", 0.7206}, {"opt_lamb_beta_2", 0.78921}, {"opt_lamb_weight_decay_rate", 0.001}, {"gradient_accumulation_steps", 24.0}};
constexpr std::int64_t kv2_0_0_6144_samples[] = {
    3366912, 3244032, 3219456, 3686400, 3317760, 3293184,
    3416064, 3317760, 3391488, 2998272, 3317760, 3072000,
    3416064, 3293184, 3391488, 3514368, 3194880, 3465216,
    3244032, 3268608,
};
constexpr RcpHyperparam kv2_0_0_6912_hparams[] = {{"opt_base_learning_rate", 0.0029293}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", -700.0}, {"opt_lamb_beta_1", 0.7206}, {"opt_lamb_beta_2", 0.78921}, {"opt_lamb_weight_decay_rate", 0.001}, {"gradient_accumulation_steps", 27.0}};
constexpr std::int64_t kv2_0_0_6912_samples[] = {
    3621888, 3677184, 3400704, 3594240, 3483648, 3732480,
    3677184, 3797776, 3621888, 3760128, 3649536, 3483648,
    3566592, 3649536, 3621888, 3483648, 3290112, 3704832,
    3594240, 3511296,
};
constexpr RcpHyperparam kv2_0_0_8192_hparams[] = {{"opt_base_learning_rate", 0.00288293}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 600.0}, {"num_warmup_steps", 287.0}, {"start_warmup_step", -76.0}, {"opt_lamb_beta_1", 0.88}, {"opt_lamb_beta_2", 0.88}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 16.0}};
constexpr std::int64_t kv2_0_0_8192_samples[] = {
    4251648, 4153344, 4055040, 4177920, 4177920, 4079616,
    4276224, 4128768, 4177920, 4153344, 4177920, 4079616,
    4300800, 4153344, 4276224, 4423680, 4276224, 4104192,
    4251648, 4153344,
};
constexpr RcpHyperparam kv2_0_0_8704_hparams[] = {{"opt_base_learning_rate", 0.002971656225}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 600.0}, {"num_warmup_steps", 287.0}, {"start_warmup_step", -76.0}, {"opt_lamb_beta_1", 0.88}, {"opt_lamb_beta_2", 0.88}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 34.0}};
constexpr std::int64_t kv2_0_0_8704_samples[] = {
    4343040, 4143360, 4143360, 4442880, 4392960, 4243200,
    4193280, 4542720, 4492800, 4243200, 4243200, 4392960,
    4243200, 4193280, 4093440, 4392960, 4093440, 4243200,
    4093440, 4392960,
};
constexpr RcpHyperparam kv2_0_0_12288_hparams[] = {{"opt_base_learning_rate", 0.0031}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 500.0}, {"num_warmup_steps", 300.0}, {"start_warmup_step", -100.0}, {"opt_lamb_beta_1", 0.8}, {"opt_lamb_beta_2", 0.925}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 32.0}};
constexpr std::int64_t kv2_0_0_12288_samples[] = {
    4542720, 4392960, 4642560, 4542720, 4542720, 4492800,
    4343040, 4343040, 4442880, 4442880, 4442880, 4442880,
    4442880, 4692480, 4492800, 4442880, 4442880, 4442880,
    4492800, 4343040,
};
constexpr RcpHyperparam kv2_0_0_13056_hparams[] = {{"opt_base_learning_rate", 0.00319540686}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 500.0}, {"num_warmup_steps", 300.0}, {"start_warmup_step", -100.0}, {"opt_lamb_beta_1", 0.8}, {"opt_lamb_beta_2", 0.925}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 34.0}};
constexpr std::int64_t kv2_0_0_13056_samples[] = {
    4442880, 4592640, 4642560, 4842240, 4742400, 4592640,
    4642560, 4692480, 4942080, 4542720, 4592640, 4093440,
    4442880, 4792320, 4642560, 4592640, 4592640, 4892160,
    4742400, 4592640,
};
constexpr RcpHyperparam kv2_0_0_16384_hparams[] = {{"opt_base_learning_rate", 0.0033}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 600.0}, {"num_warmup_steps", 290.0}, {"start_warmup_step", -100.0}, {"opt_lamb_beta_1", 0.75}, {"opt_lamb_beta_2", 0.9}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 32.0}};
constexpr std::int64_t kv2_0_0_16384_samples[] = {
    5619712, 5770240, 5720064, 5419008, 5519360, 5569536,
    5218304, 5469184, 5419008, 5218304, 5669888, 5669888,
    5519360, 5569536, 5368832, 5469184, 5569536, 5469184,
    5368832, 5469184,
};
constexpr RcpRecord kv2_0_0_records[] = {
    {"bert_ref_256", 256, "Google", "Prior to 1.0 submission", "TPU-v4-16 / TF1, TF version ~2.4", kv2_0_0_256_hparams, kv2_0_0_256_samples},
    {"bert_ref_448", 448, "Google", "Prior to 1.0 submission", "TPU-v4-16 / TF1, TF version ~2.4", kv2_0_0_448_hparams, kv2_0_0_448_samples},
    {"bert_ref_1536", 1536, "Google", "At 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv2_0_0_1536_hparams, kv2_0_0_1536_samples},
    {"bert_ref_4096", 4096, "Google", "Prior to 1.1 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv2_0_0_4096_hparams, kv2_0_0_4096_samples},
    {"bert_ref_3072", 3072, "Google", "Prior to 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv2_0_0_3072_hparams, kv2_0_0_3072_samples},
    {"bert_ref_4608", 4608, "Google", "Prior to 2.0 submission", "TPU-v4-16 / TF1, TF version ~2.8", kv2_0_0_4608_hparams, kv2_0_0_4608_samples},
    {"bert_ref_6144", 6144, "Google", "At 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv2_0_0_6144_hparams, kv2_0_0_6144_samples},
    {"bert_ref_6912", 6912, "Google", "At 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv2_0_0_6912_hparams, kv2_0_0_6912_samples},
    {"bert_ref_8192", 8192, "Google", "Prior to 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv2_0_0_8192_hparams, kv2_0_0_8192_samples},
    {"bert_ref_8704", 8704, "NVIDIA", "At 1.1 submission", "TBD", kv2_0_0_8704_hparams, kv2_0_0_8704_samples},
    {"bert_ref_12288", 12288, "NVIDIA", "At 1.1 submission", "TBD", kv2_0_0_12288_hparams, kv2_0_0_12288_samples},
    {"bert_ref_13056", 13056, "NVIDIA", "At 1.1 submission", "TBD", kv2_0_0_13056_hparams, kv2_0_0_13056_samples},
    {"bert_ref_16384", 16384, "NVIDIA", "At 2.0 submission", "TPU-v3-128", kv2_0_0_16384_hparams, kv2_0_0_16384_samples},
};

constexpr RcpHyperparam kv2_1_0_256_hparams[] = {{"opt_base_learning_rate", 0.00035}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 13700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.9}, {"opt_lamb_beta_2", 0.999}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 1.0}};
constexpr std::int64_t kv2_1_0_256_samples[] = {
    2834944, 2508800, 2709504, 2609152, 2383360, 2308096,
    2910208, 2333184, 2283008, 2935296, 2483712, 2558976,
    2709504, 2232832, 2333184, 2533888, 2709504, 2257920,
    2609152, 2809856,
};
constexpr RcpHyperparam kv2_1_0_448_hparams[] = {{"opt_base_learning_rate", 0.000425}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 6700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.9}, {"opt_lamb_beta_2", 0.999}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 1.0}};
constexpr std::int64_t kv2_1_0_448_samples[] = {
    2132480, 2333184, 2408448, 2483712, 2684416, 2107392,
    2157568, 2709504, 2533888, 2584064, 1981952, 2182656,
    2408448, 2433536, 2333184, 2533888, 2458624, 2558976,
    2584064, 2358272, 2358272, 2358272, 2759680,
};
constexpr RcpHyperparam kv2_1_0_1536_hparams[] = {{"opt_base_learning_rate", 0.002}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 2254.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.66}, {"opt_lamb_beta_2", 0.996}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 1.0}};
constexpr std::int64_t kv2_1_0_1536_samples[] = {
    2836240, 2801664, 2801664, 2727936, 2801664, 2875392,
    2899968, 2727936, 2777088, 2875392, 2777088, 2801664,
    2678784, 2801664, 2703360, 2629632, 2727936, 2703360,
    2654208, 2949120,
};
constexpr RcpHyperparam kv2_1_0_4096_hparams[] = {{"opt_base_learning_rate", 0.0024}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 855.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.66}, {"opt_lamb_beta_2", 0.998}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 16.0}};
constexpr std::int64_t kv2_1_0_4096_samples[] = {
    2801664, 3022848, 2801664, 3022848, 3047424, 2727936,
    2973696, 2703360, 2924544, 2629632, 2678784, 2850816,
    2777088, 2826240, 2801664, 2850816, 2924544, 2924544,
    2727936, 2850816,
};
constexpr RcpHyperparam kv2_1_0_3072_hparams[] = {{"opt_base_learning_rate", 0.002}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 1141.0}, {"num_warmup_steps", 100.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.66}, {"opt_lamb_beta_2", 0.998}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 96.0}};
constexpr std::int64_t kv2_1_0_3072_samples[] = {
    2703360, 2482176, 3072000, 2654208, 2580480, 2727936,
    2605056, 2801664, 2777088, 2580480, 2875392, 2826240,
    2973696, 2850816, 2678784, 2919120, 3121152, 2605056,
    2678784, 2850816,
};
constexpr RcpHyperparam kv2_1_0_4608_hparams[] = {{"opt_base_learning_rate", 0.0035}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.62}, {"opt_lamb_beta_2", 0.9}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 144.0}};
constexpr std::int64_t kv2_1_0_4608_samples[] = {
    2626560, 2833920, 2787840, 2949120, 2880000, 2810880,
    2880000, 3041280, 2787840, 2833920, 2741760, 2810880,
    2649600, 2718720, 2488320, 2603520, 2833920, 2787840,
    2810880, 3018240,
};
constexpr RcpHyperparam kv2_1_0_6144_hparams[] = {{"opt_base_learning_rate", 0.0029293}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", -700.0}, {"opt_lamb_beta_1", 0.7206}, {"opt_lamb_beta_2", 0.78921}, {"opt_lamb_weight_decay_rate", 0.001}, {"gradient_accumulation_steps", 24.0}};
constexpr std::int64_t kv2_1_0_6144_samples[] = {
    3366912, 3244032, 3219456, 3686400, 3317760, 3293184,
    3416064, 3317760, 3391488, 2998272, 3317760, 3072000,
    3416064, 3293184, 3391488, 3514368, 3194880, 3465216,
    3244032, 3268608,
};
constexpr RcpHyperparam kv2_1_0_6912_hparams[] = {{"opt_base_learning_rate", 0.0029293}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", -700.0}, {"opt_lamb_beta_1", 0.7206}, {"opt_lamb_beta_2", 0.78921}, {"opt_lamb_weight_decay_rate", 0.001}, {"gradient_accumulation_steps", 27.0}};
constexpr std::int64_t kv2_1_0_6912_samples[] = {
    3621888, 3677184, 3400704, 3594240, 3483648, 3732480,
    3677184, 3797776, 3621888, 3760128, 3649536, 3483648,
    3566592, 3649536, 3621888, 3483648, 3290112, 3704832,
    3594240, 3511296,
};
constexpr RcpHyperparam kv2_1_0_8192_hparams[] = {{"opt_base_learning_rate", 0.00288293}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 600.0}, {"num_warmup_steps", 287.0}, {"start_warmup_step", -76.0}, {"opt_lamb_beta_1", 0.88}, {"opt_lamb_beta_2", 0.88}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 16.0}};
constexpr std::int64_t kv2_1_0_8192_samples[] = {
    4251648, 4153344, 4055040, 4177920, 4177920, 4079616,
    4276224, 4128768, 4177920, 4153344, 4177920, 4079616,
    4300800, 4153344, 4276224, 4423680, 4276224, 4104192,
    4251648, 4153344,
};
constexpr RcpHyperparam kv2_1_0_8704_hparams[] = {{"opt_base_learning_rate", 0.002971656225}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 600.0}, {"num_warmup_steps", 287.0}, {"start_warmup_step", -76.0}, {"opt_lamb_beta_1", 0.88}, {"opt_lamb_beta_2", 0.88}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 34.0}};
constexpr std::int64_t kv2_1_0_8704_samples[] = {
    4343040, 4143360, 4143360, 4442880, 4392960, 4243200,
    4193280, 4542720, 4492800, 4243200, 4243200, 4392960,
    4243200, 4193280, 4093440, 4392960, 4093440, 4243200,
    4093440, 4392960,
};
constexpr RcpHyperparam kv2_1_0_12288_hparams[] = {{"opt_base_learning_rate", 0.0031}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 500.0}, {"num_warmup_steps", 300.0}, {"start_warmup_step", -100.0}, {"opt_lamb_beta_1", 0.8}, {"opt_lamb_beta_2", 0.925}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 32.0}};
constexpr std::int64_t kv2_1_0_12288_samples[] = {
    4542720, 4392960, 4642560, 4542720, 4542720, 4492800,
    4343040, 4343040, 4442880, 4442880, 4442880, 4442880,
    4442880, 4692480, 4492800, 4442880, 4442880, 4442880,
    4492800, 4343040,
};
constexpr RcpHyperparam kv2_1_0_13056_hparams[] = {{"opt_base_learning_rate", 0.00319540686}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 500.0}, {"num_warmup_steps", 300.0}, {"start_warmup_step", -100.0}, {"opt_lamb_beta_1", 0.8}, {"opt_lamb_beta_2", 0.925}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 34.0}};
constexpr std::int64_t kv2_1_0_13056_samples[] = {
    4442880, 4592640, 4642560, 4842240, 4742400, 4592640,
    4642560, 4692480, 4942080, 4542720, 4592640, 4093440,
    4442880, 4792320, 4642560, 4592640, 4592640, 4892160,
    4742400, 4592640,
};
constexpr RcpHyperparam kv2_1_0_16384_hparams[] = {{"opt_base_learning_rate", 0.0033}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 600.0}, {"num_warmup_steps", 290.0}, {"start_warmup_step", -100.0}, {"opt_lamb_beta_1", 0.75}, {"opt_lamb_beta_2", 0.9}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 32.0}};
constexpr std::int64_t kv2_1_0_16384_samples[] = {
    5619712, 5770240, 5720064, 5419008, 5519360, 5569536,
    5218304, 5469184, 5419008, 5218304, 5669888, 5669888,
    5519360, 5569536, 5368832, 5469184, 5569536, 5469184,
    5368832, 5469184,
};
constexpr RcpRecord kv2_1_0_records[] = {
    {"bert_ref_256", 256, "Google", "Prior to 1.0 submission", "TPU-v4-16 / TF1, TF version ~2.4", kv2_1_0_256_hparams, kv2_1_0_256_samples},
    {"bert_ref_448", 448, "Google", "Prior to 2.1 submission, with Habana's HP set", "TPU-v4-32 / TF1, TF version ~2.10", kv2_1_0_448_hparams, kv2_1_0_448_samples},
    {"bert_ref_1536", 1536, "Google", "At 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv2_1_0_1536_hparams, kv2_1_0_1536_samples},
    {"bert_ref_4096", 4096, "Google", "Prior to 1.1 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv2_1_0_4096_hparams, kv2_1_0_4096_samples},
    {"bert_ref_3072", 3072, "Google", "Prior to 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv2_1_0_3072_hparams, kv2_1_0_3072_samples},
    {"bert_ref_4608", 4608, "Google", "Prior to 2.0 submission", "TPU-v4-16 / TF1, TF version ~2.8", kv2_1_0_4608_hparams, kv2_1_0_4608_samples},
    {"bert_ref_6144", 6144, "Google", "At 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv2_1_0_6144_hparams, kv2_1_0_6144_samples},
    {"bert_ref_6912", 6912, "Google", "At 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv2_1_0_6912_hparams, kv2_1_0_6912_samples},
    {"bert_ref_8192", 8192, "Google", "Prior to 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv2_1_0_8192_hparams, kv2_1_0_8192_samples},
    {"bert_ref_8704", 8704, "NVIDIA", "At 1.1 submission", "TBD", kv2_1_0_8704_hparams, kv2_1_0_8704_samples},
    {"bert_ref_12288", 12288, "NVIDIA", "At 1.1 submission", "TBD", kv2_1_0_12288_hparams, kv2_1_0_12288_samples},
    {"bert_ref_13056", 13056, "NVIDIA", "At 1.1 submission", "TBD", kv2_1_0_13056_hparams, kv2_1_0_13056_samples},
    {"bert_ref_16384", 16384, "NVIDIA", "At 2.0 submission", "TPU-v3-128", kv2_1_0_16384_hparams, kv2_1_0_16384_samples},
};

constexpr RcpHyperparam kv4_1_0_256_hparams[] = {{"opt_base_learning_rate", 0.00035}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 13700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.9}, {"opt_lamb_beta_2", 0.999}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 1.0}};
constexpr std::int64_t kv4_1_0_256_samples[] = {
    2834944, 2508800, 2709504, 2609152, 2383360, 2308096,
    2910208, 2333184, 2283008, 2935296, 2483712, 2558976,
    2709504, 2232832, 2333184, 2533888, 2709504, 2257920,
    2609152, 2809856,
};
constexpr RcpHyperparam kv4_1_0_448_hparams[] = {{"opt_base_learning_rate", 0.000425}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 6700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.9}, {"opt_lamb_beta_2", 0.999}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 1.0}};
constexpr std::int64_t kv4_1_0_448_samples[] = {
    2132480, 2333184, 2408448, 2483712, 2684416, 2107392,
    2157568, 2709504, 2533888, 2584064, 1981952, 2182656,
    2408448, 2433536, 2333184, 2533888, 2458624, 2558976,
    2584064, 2358272, 2358272, 2358272, 2759680,
};
constexpr RcpHyperparam kv4_1_0_1536_hparams[] = {{"opt_base_learning_rate", 0.002}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 2254.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.66}, {"opt_lamb_beta_2", 0.996}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 1.0}};
constexpr std::int64_t kv4_1_0_1536_samples[] = {
    2836240, 2801664, 2801664, 2727936, 2801664, 2875392,
    2899968, 2727936, 2777088, 2875392, 2777088, 2801664,
    2678784, 2801664, 2703360, 2629632, 2727936, 2703360,
    2654208, 2949120,
};
constexpr RcpHyperparam kv4_1_0_4096_hparams[] = {{"opt_base_learning_rate", 0.0024}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 855.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.66}, {"opt_lamb_beta_2", 0.998}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 16.0}};
constexpr std::int64_t kv4_1_0_4096_samples[] = {
    2801664, 3022848, 2801664, 3022848, 3047424, 2727936,
    2973696, 2703360, 2924544, 2629632, 2678784, 2850816,
    2777088, 2826240, 2801664, 2850816, 2924544, 2924544,
    2727936, 2850816,
};
constexpr RcpHyperparam kv4_1_0_3072_hparams[] = {{"opt_base_learning_rate", 0.002}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 1141.0}, {"num_warmup_steps", 100.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.66}, {"opt_lamb_beta_2", 0.998}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 96.0}};
constexpr std::int64_t kv4_1_0_3072_samples[] = {
    2703360, 2482176, 3072000, 2654208, 2580480, 2727936,
    2605056, 2801664, 2777088, 2580480, 2875392, 2826240,
    2973696, 2850816, 2678784, 2919120, 3121152, 2605056,
    2678784, 2850816,
};
constexpr RcpHyperparam kv4_1_0_4608_hparams[] = {{"opt_base_learning_rate", 0.0035}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", 0.0}, {"opt_lamb_beta_1", 0.62}, {"opt_lamb_beta_2", 0.9}, {"opt_lamb_weight_decay_rate", 0.01}, {"gradient_accumulation_steps", 144.0}};
constexpr std::int64_t kv4_1_0_4608_samples[] = {
    2626560, 2833920, 2787840, 2949120, 2880000, 2810880,
    2880000, 3041280, 2787840, 2833920, 2741760, 2810880,
    2649600, 2718720, 2488320, 2603520, 2833920, 2787840,
    2810880, 3018240,
};
constexpr RcpHyperparam kv4_1_0_6144_hparams[] = {{"opt_base_learning_rate", 0.0029293}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", -700.0}, {"opt_lamb_beta_1", 0.7206}, {"opt_lamb_beta_2", 0.78921}, {"opt_lamb_weight_decay_rate", 0.001}, {"gradient_accumulation_steps", 24.0}};
constexpr std::int64_t kv4_1_0_6144_samples[] = {
    3366912, 3244032, 3219456, 3686400, 3317760, 3293184,
    3416064, 3317760, 3391488, 2998272, 3317760, 3072000,
    3416064, 3293184, 3391488, 3514368, 3194880, 3465216,
    3244032, 3268608,
};
constexpr RcpHyperparam kv4_1_0_6912_hparams[] = {{"opt_base_learning_rate", 0.0029293}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 700.0}, {"num_warmup_steps", 0.0}, {"start_warmup_step", -700.0}, {"opt_lamb_beta_1", 0.7206}, {"opt_lamb_beta_2", 0.78921}, {"opt_lamb_weight_decay_rate", 0.001}, {"gradient_accumulation_steps", 27.0}};
constexpr std::int64_t kv4_1_0_6912_samples[] = {
    3621888, 3677184, 3400704, 3594240, 3483648, 3732480,
    3677184, 3797776, 3621888, 3760128, 3649536, 3483648,
    3566592, 3649536, 3621888, 3483648, 3290112, 3704832,
    3594240, 3511296,
};
constexpr RcpHyperparam kv4_1_0_8192_hparams[] = {{"opt_base_learning_rate", 0.00288293}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 600.0}, {"num_warmup_steps", 287.0}, {"start_warmup_step", -76.0}, {"opt_lamb_beta_1", 0.88}, {"opt_lamb_beta_2", 0.88}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 16.0}};
constexpr std::int64_t kv4_1_0_8192_samples[] = {
    4251648, 4153344, 4055040, 4177920, 4177920, 4079616,
    4276224, 4128768, 4177920, 4153344, 4177920, 4079616,
    4300800, 4153344, 4276224, 4423680, 4276224, 4104192,
    4251648, 4153344,
};
constexpr RcpHyperparam kv4_1_0_8704_hparams[] = {{"opt_base_learning_rate", 0.002971656225}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 600.0}, {"num_warmup_steps", 287.0}, {"start_warmup_step", -76.0}, {"opt_lamb_beta_1", 0.88}, {"opt_lamb_beta_2", 0.88}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 34.0}};
constexpr std::int64_t kv4_1_0_8704_samples[] = {
    4343040, 4143360, 4143360, 4442880, 4392960, 4243200,
    4193280, 4542720, 4492800, 4243200, 4243200, 4392960,
    4243200, 4193280, 4093440, 4392960, 4093440, 4243200,
    4093440, 4392960,
};
constexpr RcpHyperparam kv4_1_0_12288_hparams[] = {{"opt_base_learning_rate", 0.0031}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 500.0}, {"num_warmup_steps", 300.0}, {"start_warmup_step", -100.0}, {"opt_lamb_beta_1", 0.8}, {"opt_lamb_beta_2", 0.925}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 32.0}};
constexpr std::int64_t kv4_1_0_12288_samples[] = {
    4542720, 4392960, 4642560, 4542720, 4542720, 4492800,
    4343040, 4343040, 4442880, 4442880, 4442880, 4442880,
    4442880, 4692480, 4492800, 4442880, 4442880, 4442880,
    4492800, 4343040,
};
constexpr RcpHyperparam kv4_1_0_13056_hparams[] = {{"opt_base_learning_rate", 0.00319540686}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 500.0}, {"num_warmup_steps", 300.0}, {"start_warmup_step", -100.0}, {"opt_lamb_beta_1", 0.8}, {"opt_lamb_beta_2", 0.925}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 34.0}};
constexpr std::int64_t kv4_1_0_13056_samples[] = {
    4442880, 4592640, 4642560, 4842240, 4742400, 4592640,
    4642560, 4692480, 4942080, 4542720, 4592640, 4093440,
    4442880, 4792320, 4642560, 4592640, 4592640, 4892160,
    4742400, 4592640,
};
constexpr RcpHyperparam kv4_1_0_16384_hparams[] = {{"opt_base_learning_rate", 0.0033}, {"opt_epsilon", 1e-06}, {"opt_learning_rate_training_steps", 600.0}, {"num_warmup_steps", 290.0}, {"start_warmup_step", -100.0}, {"opt_lamb_beta_1", 0.75}, {"opt_lamb_beta_2", 0.9}, {"opt_lamb_weight_decay_rate", 0.0166629}, {"gradient_accumulation_steps", 32.0}};
constexpr std::int64_t kv4_1_0_16384_samples[] = {
    5619712, 5770240, 5720064, 5419008, 5519360, 5569536,
    5218304, 5469184, 5419008, 5218304, 5669888, 5669888,
    5519360, 5569536, 5368832, 5469184, 5569536, 5469184,
    5368832, 5469184,
};
constexpr RcpRecord kv4_1_0_records[] = {
    {"bert_ref_256", 256, "Google", "Prior to 1.0 submission", "TPU-v4-16 / TF1, TF version ~2.4", kv4_1_0_256_hparams, kv4_1_0_256_samples},
    {"bert_ref_448", 448, "Google", "Prior to 2.1 submission, with Habana's HP set", "TPU-v4-32 / TF1, TF version ~2.10", kv4_1_0_448_hparams, kv4_1_0_448_samples},
    {"bert_ref_1536", 1536, "Google", "At 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv4_1_0_1536_hparams, kv4_1_0_1536_samples},
    {"bert_ref_4096", 4096, "Google", "Prior to 1.1 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv4_1_0_4096_hparams, kv4_1_0_4096_samples},
    {"bert_ref_3072", 3072, "Google", "Prior to 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv4_1_0_3072_hparams, kv4_1_0_3072_samples},
    {"bert_ref_4608", 4608, "Google", "Prior to 2.0 submission", "TPU-v4-16 / TF1, TF version ~2.8", kv4_1_0_4608_hparams, kv4_1_0_4608_samples},
    {"bert_ref_6144", 6144, "Google", "At 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv4_1_0_6144_hparams, kv4_1_0_6144_samples},
    {"bert_ref_6912", 6912, "Google", "At 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv4_1_0_6912_hparams, kv4_1_0_6912_samples},
    {"bert_ref_8192", 8192, "Google", "Prior to 1.0 submission", "TPU-v4-128 / TF1, TF version ~2.4", kv4_1_0_8192_hparams, kv4_1_0_8192_samples},
    {"bert_ref_8704", 8704, "NVIDIA", "At 1.1 submission", "TBD", kv4_1_0_8704_hparams, kv4_1_0_8704_samples},
    {"bert_ref_12288", 12288, "NVIDIA", "At 1.1 submission", "TBD", kv4_1_0_12288_hparams, kv4_1_0_12288_samples},
    {"bert_ref_13056", 13056, "NVIDIA", "At 1.1 submission", "TBD", kv4_1_0_13056_hparams, kv4_1_0_13056_samples},
    {"bert_ref_16384", 16384, "NVIDIA", "At 2.0 submission", "TPU-v3-128", kv4_1_0_16384_hparams, kv4_1_0_16384_samples},
};

// clang-format on

struct RulesetData {
  std::string_view ruleset;
  std::string_view data_ruleset;
  std::span<const RcpRecord> records;
};

constexpr std::array<RulesetData, 10> kRulesets = {{
    {"1.0.0", "1.0.0", kv1_0_0_records},
    {"1.1.0", "1.1.0", kv1_1_0_records},
    {"2.0.0", "2.0.0", kv2_0_0_records},
    {"2.1.0", "2.1.0", kv2_1_0_records},
    {"3.0.0", "2.1.0", kv2_1_0_records},
    {"3.1.0", "2.1.0", kv2_1_0_records},
    {"4.0.0", "2.1.0", kv2_1_0_records},
    {"4.1.0", "4.1.0", kv4_1_0_records},
    {"5.0.0", "4.1.0", kv4_1_0_records},
    {"5.1.0", "4.1.0", kv4_1_0_records},
}};

constexpr std::array<std::string_view, kRulesets.size()> kRulesetNames = [] {
  std::array<std::string_view, kRulesets.size()> names{};
  for (std::size_t i = 0; i < kRulesets.size(); ++i) names[i] = kRulesets[i].ruleset;
  return names;
}();

}  // namespace

std::span<const std::string_view> bert_rcp_rulesets() {
  return kRulesetNames;
}

std::string bert_rcp_absence(std::string_view ruleset) {
  for (const auto& entry : kRulesets) {
    if (entry.ruleset == ruleset) return "";
  }
  const mllog::TrainingRuleset* row = mllog::find_training_ruleset(ruleset);
  if (row && row->bert_benchmark) {
    return "ruleset " + std::string(ruleset) + " has no RCPs: reference convergence points began " +
           "with ruleset " + std::string(kRulesets.front().ruleset) +
           ", and the official package checker runs no RCP check on " + std::string(ruleset) +
           " results";
  }
  std::string known;
  for (auto name : kRulesetNames) known += (known.empty() ? "" : ", ") + std::string(name);
  return "no BERT RCPs for ruleset '" + std::string(ruleset) + "' (known: " + known + ")";
}

RcpSet bert_rcp_set(std::string_view ruleset) {
  for (const auto& entry : kRulesets) {
    if (entry.ruleset == ruleset) return {entry.ruleset, entry.data_ruleset, entry.records};
  }
  throw std::invalid_argument(bert_rcp_absence(ruleset));
}

}  // namespace mlbert::logging
