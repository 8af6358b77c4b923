#include "runtime/launch/attention_launch.h"

namespace attnc {

void launch_attention(const Kernel& kernel, const Kernel* companion, const AttentionLaunch& l, CUstream stream) {
  if (l.combine && !companion)
    throw BadCall("attention: the call splits KV into " + std::to_string(l.params.num_splits) +
                  " parts but no combine kernel (<entry>_combine) was given");
  if (l.widen_v && !companion)
    throw BadCall("attention: the kernel reads V widened into the workspace (v_prewiden) but no widening kernel "
                  "(<entry>_widen_v) was given");
  if (l.widen_v) companion->launch(l.widen_grid, l.widen_block, 0, stream, &l.params);
  if (l.tensor_maps) {
    void* args[] = {const_cast<AttentionParams*>(&l.params), const_cast<AttentionTensorMaps*>(&l.maps)};
    kernel.launch_args(l.persistent ? persistent_grid(l.grid, kernel.sm_count()) : l.grid, l.block, l.smem_bytes,
                       stream, args);
  } else {
    kernel.launch(l.grid, l.block, l.smem_bytes, stream, &l.params);
  }
  if (l.combine) companion->launch(l.combine_grid, l.combine_block, 0, stream, &l.params);
}

}  // namespace attnc
