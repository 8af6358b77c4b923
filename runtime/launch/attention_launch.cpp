#include "runtime/launch/attention_launch.h"

namespace attnc {

void launch_attention(const Kernel& kernel, const Kernel* combine, const AttentionLaunch& l, CUstream stream) {
  if (l.combine && !combine)
    throw BadCall("attention: the call splits KV into " + std::to_string(l.params.num_splits) +
                  " parts but no combine kernel (<entry>_combine) was given");
  if (l.tensor_maps) {
    void* args[] = {const_cast<AttentionParams*>(&l.params), const_cast<AttentionTensorMaps*>(&l.maps)};
    kernel.launch_args(l.persistent ? persistent_grid(l.grid, kernel.sm_count()) : l.grid, l.block, l.smem_bytes,
                       stream, args);
  } else {
    kernel.launch(l.grid, l.block, l.smem_bytes, stream, &l.params);
  }
  if (l.combine) combine->launch(l.combine_grid, l.combine_block, 0, stream, &l.params);
}

}  // namespace attnc
