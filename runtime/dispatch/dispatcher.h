// The runtime dispatcher: one Attention per spec serves every call of that layer. Per call it
// buckets the shape (runtime/dispatch/shape_bucket.h), picks the config (memory table, then the SQLite
// tuning record once per bucket, then the heuristic), finds the loaded kernel for that config
// (memory, then the cubin cache, then NVRTC) and launches it on the caller's stream.
//
// The warm path (bucket and kernel seen before) allocates nothing, never synchronises and copies
// nothing between host and device, so run() can be captured in a CUDA graph once the bucket is
// warm. It takes a shared lock for one integer-keyed lookup; builds and loads run under a
// per-kernel once-guard, so any number of threads may call run() and select() at once.
//
// Split-KV workspace: run() never allocates. It uses the args' workspace when given, else the one
// reserve() sized. When the chosen split count (tuned or heuristic) needs more than that
// workspace holds, run() lowers it to what fits (1 at worst: no split, no workspace). A split
// count the caller asks for explicitly (args.num_splits > 0) is lowered only by parts that would
// be empty (past the call's last KV tile): too small a workspace is otherwise a BadCall. reserve()
// covers every forced count. The same workspace holds prefill_sm90's widened V (v_prewiden: contiguous
// int8_qkv, total_k x Hkv x Dv fp16): reserve() sizes it for prefill shapes too, and a call whose
// workspace cannot hold it runs the kernel that widens V in its producer instead.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "generator/spec/spec.h"
#include "runtime/launch/attention_args.h"
#include "runtime/launch/cache_write_args.h"
#include "runtime/launch/cascade.h"
#include "runtime/launch/lse_correct_args.h"
#include "runtime/launch/merge_args.h"
#include "runtime/driver/device_info.h"
#include "runtime/dispatch/dispatch_error.h"
#include "runtime/compiler/kernel_builder.h"
#include "runtime/dispatch/shape_bucket.h"
#include "runtime/dispatch/tuned_choice.h"

namespace attnc {

struct AttentionOptions {
  // "" = the default cache (default_cache_path()); "none" (or "disabled") = memory only; else a path.
  std::string db;
  int device = 0;  // ordinal
  // Describe the device instead of asking the driver: select() and prepare() then need no GPU.
  std::optional<DeviceInfo> device_info;
  bool use_tuning = true;  // false: ignore tuning records, always the heuristic
  // A kernel missing from the cache fails with JitDisabled instead of compiling.
  // nullopt: on when the environment has ATTNC_NO_JIT=1.
  std::optional<bool> no_jit;
  // A tuned kernel that is not built yet compiles on a worker thread while the heuristic kernel
  // serves; later calls use the tuned kernel once it is loaded.
  bool background_compile = false;
  std::string spec_path;  // for messages (set by from_file)
};

// Where the config of a call came from.
enum class ChoiceOrigin {
  memory,     // pinned in memory by pin()
  tuned,      // a tuning record for the bucket
  heuristic,  // no record (or use_tuning off): default_config and the split heuristic
  fallback,   // a record exists but its kernel is not ready (background compile) or failed to
              // build or plan: the heuristic kernel serves
};
const char* to_string(ChoiceOrigin);

struct Selection {
  ShapeBucket bucket;
  const Config* config = nullptr;      // the compiled config; valid while the Attention lives
  const std::string* entry = nullptr;  // its kernel's entry name; same lifetime
  int num_splits = 1;                  // what the call uses, after the workspace clamp
  ChoiceOrigin origin = ChoiceOrigin::heuristic;
  bool cached = false;         // the bucket was in the memory table (no SQLite read)
  bool kernel_loaded = false;  // the serving kernel is loaded (run launches at once)
  // {"bucket":..,"config":{..},"num_splits":..,"origin":..,"entry":..}
  std::string to_json() const;
};

class Attention {
 public:
  // Nothing here needs a GPU: the device (or the options' description) is looked at on first use.
  explicit Attention(Spec spec, AttentionOptions options = {});
  static std::unique_ptr<Attention> from_file(const std::string& path, AttentionOptions options = {});
  static std::unique_ptr<Attention> from_yaml(const std::string& yaml, AttentionOptions options = {});
  ~Attention();
  Attention(const Attention&) = delete;
  Attention& operator=(const Attention&) = delete;

  const Spec& spec() const;
  const std::string& spec_id() const;
  const DeviceInfo& device_info();  // opens the device unless described in the options

  // What run() would use for this shape, without launching or building. For decode the split
  // count assumes total_q = batch * max_seqlen_q; `workspace_bytes` (default: the reserved
  // workspace) is what the clamp sees.
  Selection select(const Problem&, std::optional<size_t> workspace_bytes = std::nullopt);

  // Builds (memory, cache or NVRTC) the kernel run() would use for this shape, synchronously, the
  // tuned one included; no GPU needed. Returns where the cubin came from.
  KernelOrigin prepare(const Problem&);

  // Sizes the split-KV workspace for every call up to `largest` (batch, query and KV lengths):
  // the most any batch up to largest.batch needs at those lengths, with the chosen split count or
  // any count a caller forces (args.num_splits), up to one part per KV tile (max_useful_splits,
  // generator/split_kv.h). max_num_splits > 0 caps the forced counts covered (less memory; the
  // dispatcher's own choices are always covered). Allocates device memory; call it before
  // serving, not while other threads are inside run().
  void reserve(const Problem& largest, int max_num_splits = 0);
  void reserve_bytes(size_t bytes);
  size_t workspace_bytes() const;
  // The workspace reserve(largest, max_num_splits) would allocate; no GPU needed.
  size_t workspace_needed(const Problem& largest, int max_num_splits = 0);

  // One call. args.batch, max_seqlen_q (with cu_seqlens_q) and max_seqlen_k choose the bucket;
  // num_splits (when 0) and workspace (when null) are filled in here. Throws BadCall,
  // JitDisabled, CompileError, DispatchError, CudaError.
  void run(const AttentionArgs& args, KernelKind kind, CUstream stream);

  // The layer's ops (runtime/launch/merge_args.h, cache_write_args.h, cascade.h, lse_correct_args.h), built from the
  // spec's dims and dtypes whether or not its `kernels:` list names them, with default configs.
  // The first call builds (memory -> SQLite -> NVRTC) and loads the kernels; later calls check
  // their arguments and launch on `stream`, allocating nothing (capturable once warm). Throw
  // BadCall naming the argument, JitDisabled, CompileError, DispatchError, CudaError.
  void merge(const MergeArgs&, CUstream stream);
  void cache_write(const CacheWriteArgs&, CUstream stream);
  // Decode context parallelism's LSE correction (runtime/launch/lse_correct_args.h), for the
  // layer of the gathered query heads (docs/dcp.md).
  void lse_correct(const LseCorrectArgs&, CUstream stream);
  // Cascade attention; args.workspace null: the reserved workspace (reserve_bytes with
  // cascade_workspace_needed(num_tokens) first).
  void cascade(const CascadeArgs&, CUstream stream);
  size_t cascade_workspace_needed(int num_tokens);  // no GPU needed

  // Serve `bucket` with `choice` (origin memory), ahead of any tuning record.
  void pin(const ShapeBucket& bucket, const TunedChoice& choice);
  // Blocks until every queued background compile has finished (tests, benchmarks).
  void wait_background();
  // Non-empty when the cache could not be used (memory only) or a tuning record was unusable.
  std::string warnings() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnc
