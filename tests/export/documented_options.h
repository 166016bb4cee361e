// The option names each framework documents, written out as data with their source, so the
// export tests check every exported field name against the framework's own schema rather
// than against placesim's output. Only names are listed (values are checked per example).
//
// Sources, read for this list:
//   Megatron-LM  megatron/training/arguments.py, NVIDIA/Megatron-LM main (commit 000c4ac,
//                2025; Megatron-Core 0.14+): the add_argument calls of _add_network_size_args,
//                _add_training_args, _add_mixed_precision_args, _add_distributed_args,
//                _add_moe_args, _add_transformer_engine_args.
//   DeepSpeed    "DeepSpeed Configuration JSON" (deepspeed.ai/docs/config-json) for the top
//                level, fp16/bf16 and activation_checkpointing; deepspeed/runtime/zero/config.py
//                (DeepSpeedZeroConfig, aliases included) and offload_config.py
//                (DeepSpeedZeroOffloadParamConfig, DeepSpeedZeroOffloadOptimizerConfig),
//                deepspeedai/DeepSpeed master (commit 1b88ac3).
//                The top level's data_types (grad_accum_dtype): deepspeed/runtime/config.py,
//                get_data_types_params (microsoft/DeepSpeed pull 4713).
//   PyTorch FSDP torch/distributed/fsdp/api.py (ShardingStrategy, BackwardPrefetch,
//                MixedPrecision, CPUOffload) and the FullyShardedDataParallel constructor in
//                the torch.distributed.fsdp documentation (PyTorch 2.1+).
#ifndef PLACESIM_TESTS_EXPORT_DOCUMENTED_OPTIONS_H_
#define PLACESIM_TESTS_EXPORT_DOCUMENTED_OPTIONS_H_

#include <set>
#include <string>

namespace placesim::exporting::documented {

// Megatron-LM megatron/training/arguments.py (the subset a parallel plan can set).
inline const std::set<std::string> kMegatronFlags = {
    // _add_distributed_args
    "--tensor-model-parallel-size", "--pipeline-model-parallel-size",
    "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
    "--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
    "--overlap-grad-reduce", "--ddp-bucket-size", "--overlap-param-gather",
    "--use-distributed-optimizer", "--use-megatron-fsdp", "--data-parallel-sharding-strategy",
    "--num-distributed-optimizer-instances", "--use-torch-fsdp2", "--context-parallel-size",
    "--cp-comm-type", "--use-tp-pp-dp-mapping",
    // _add_training_args
    "--micro-batch-size", "--global-batch-size", "--recompute-granularity", "--recompute-method",
    "--recompute-num-layers", "--tp-comm-overlap", "--use-flash-attn", "--disable-bias-linear",
    "--optimizer", "--optimizer-cpu-offload", "--optimizer-offload-fraction",
    "--overlap-cpu-optimizer-d2h-h2d", "--sequence-parallel",
    // _add_mixed_precision_args
    "--fp16", "--bf16", "--grad-reduce-in-bf16", "--accumulate-allreduce-grads-in-fp32",
    // _add_network_size_args
    "--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads",
    "--attention-backend", "--group-query-attention", "--num-query-groups",
    "--max-position-embeddings", "--position-embedding-type", "--normalization", "--swiglu",
    "--untie-embeddings-and-output-weights",
    // _add_data_args
    "--seq-length",
    // _add_moe_args
    "--expert-model-parallel-size", "--num-experts", "--moe-router-topk",
    "--moe-expert-capacity-factor",
    // _add_transformer_engine_args
    "--fp8-format"};

// Choices of the flags whose values are names (arguments.py `choices=`).
inline const std::set<std::string> kMegatronRecomputeGranularity = {"full", "selective"};
inline const std::set<std::string> kMegatronRecomputeMethod = {"uniform", "block"};
inline const std::set<std::string> kMegatronOptimizer = {"adam", "sgd", "muon", "dist_muon"};
inline const std::set<std::string> kMegatronShardingStrategy = {"no_shard", "optim", "optim_grads",
                                                                "optim_grads_params"};
inline const std::set<std::string> kMegatronAttentionBackend = {"flash", "fused", "unfused",
                                                                "local", "auto"};
inline const std::set<std::string> kMegatronNormalization = {"LayerNorm", "RMSNorm"};
inline const std::set<std::string> kMegatronPositionEmbedding = {"learned_absolute", "rope",
                                                                 "mrope", "relative", "none"};

// DeepSpeed Configuration JSON, top level (the batch, precision, optimizer, ZeRO and
// checkpointing keys).
inline const std::set<std::string> kDeepSpeedTopLevel = {"train_batch_size",
                                                         "train_micro_batch_size_per_gpu",
                                                         "gradient_accumulation_steps",
                                                         "optimizer",
                                                         "scheduler",
                                                         "fp16",
                                                         "bf16",
                                                         "amp",
                                                         "gradient_clipping",
                                                         "prescale_gradients",
                                                         "gradient_predivide_factor",
                                                         "sparse_gradients",
                                                         "zero_optimization",
                                                         "activation_checkpointing",
                                                         "steps_per_print",
                                                         "wall_clock_breakdown",
                                                         "communication_data_type",
                                                         "data_types"};
inline const std::set<std::string> kDeepSpeedBf16 = {"enabled"};
inline const std::set<std::string> kDeepSpeedFp16 = {"enabled",
                                                     "auto_cast",
                                                     "loss_scale",
                                                     "initial_scale_power",
                                                     "loss_scale_window",
                                                     "hysteresis",
                                                     "consecutive_hysteresis",
                                                     "min_loss_scale"};
inline const std::set<std::string> kDeepSpeedOptimizer = {"type", "params"};
inline const std::set<std::string> kDeepSpeedOptimizerTypes = {"Adam", "AdamW", "Lamb",
                                                               "OneBitAdam", "OneBitLamb"};
// deepspeed/runtime/zero/config.py: DeepSpeedZeroConfig fields and their aliases.
inline const std::set<std::string> kDeepSpeedZero = {"stage",
                                                     "contiguous_gradients",
                                                     "reduce_scatter",
                                                     "reduce_bucket_size",
                                                     "use_multi_rank_bucket_allreduce",
                                                     "allgather_partitions",
                                                     "allgather_bucket_size",
                                                     "overlap_comm",
                                                     "load_from_fp32_weights",
                                                     "elastic_checkpoint",
                                                     "offload_param",
                                                     "offload_optimizer",
                                                     "sub_group_size",
                                                     "stage3_prefetch_bucket_size",
                                                     "stage3_param_persistence_threshold",
                                                     "stage3_model_persistence_threshold",
                                                     "stage3_max_live_parameters",
                                                     "stage3_max_reuse_distance",
                                                     "stage3_gather_16bit_weights_on_model_save",
                                                     "ignore_unused_parameters",
                                                     "round_robin_gradients",
                                                     "zero_hpz_partition_size",
                                                     "zero_quantized_weights",
                                                     "zero_quantized_gradients",
                                                     "mics_shard_size",
                                                     "mics_hierarchical_params_gather",
                                                     "memory_efficient_linear"};
// offload_config.py: DeepSpeedZeroOffloadParamConfig / DeepSpeedZeroOffloadOptimizerConfig.
inline const std::set<std::string> kDeepSpeedOffloadParam = {
    "device", "nvme_path", "buffer_count", "buffer_size", "max_in_cpu", "pin_memory"};
inline const std::set<std::string> kDeepSpeedOffloadOptimizer = {
    "device",        "nvme_path",      "buffer_count", "pin_memory",
    "pipeline_read", "pipeline_write", "fast_init",    "ratio"};
inline const std::set<std::string> kDeepSpeedOffloadDevices = {"none", "cpu", "nvme"};
inline const std::set<std::string> kDeepSpeedActivationCheckpointing = {
    "partition_activations",           "cpu_checkpointing",
    "contiguous_memory_optimization",  "number_checkpoints",
    "synchronize_checkpoint_boundary", "profile"};

// torch/distributed/fsdp/api.py and the FullyShardedDataParallel constructor.
inline const std::set<std::string> kFsdpShardingStrategy = {
    "FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "_HYBRID_SHARD_ZERO2"};
inline const std::set<std::string> kFsdpBackwardPrefetch = {"BACKWARD_PRE", "BACKWARD_POST"};
inline const std::set<std::string> kFsdpConstructor = {
    "process_group",     "sharding_strategy",  "cpu_offload",      "auto_wrap_policy",
    "backward_prefetch", "mixed_precision",    "ignored_modules",  "param_init_fn",
    "device_id",         "sync_module_states", "forward_prefetch", "limit_all_gathers",
    "use_orig_params",   "ignored_states",     "device_mesh"};
inline const std::set<std::string> kFsdpMixedPrecision = {
    "param_dtype",         "reduce_dtype",
    "buffer_dtype",        "keep_low_precision_grads",
    "cast_forward_inputs", "cast_root_forward_inputs"};
inline const std::set<std::string> kFsdpCpuOffload = {"offload_params"};

}  // namespace placesim::exporting::documented

#endif  // PLACESIM_TESTS_EXPORT_DOCUMENTED_OPTIONS_H_
