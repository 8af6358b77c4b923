#include "runtime/driver/device.h"

#include <stdexcept>
#include <utility>

#include "runtime/driver/cuda_driver.h"

namespace attnc {
namespace {

int attribute(CUdevice dev, CUdevice_attribute a) {
  int v = 0;
  ATTNC_CU(DeviceGetAttribute, &v, a, dev);
  return v;
}

}  // namespace

std::string arch_for_compute_capability(int major, int minor) {
  std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
  if (major == 9 && minor == 0) arch += "a";
  return arch;
}

int Device::count() {
  const Driver& d = Driver::get();
  if (!d.available()) return 0;
  int n = 0;
  return d.api().DeviceGetCount(&n) == CUDA_SUCCESS ? n : 0;
}

Device::Device(int ordinal) : ordinal_(ordinal) {
  const auto& cu = Driver::get().api();
  driver_version_ = Driver::get().version();
  ATTNC_CU(DeviceGet, &device_, ordinal);
  char name[256] = {};
  ATTNC_CU(DeviceGetName, name, static_cast<int>(sizeof name - 1), device_);
  name_ = name;
  cc_major_ = attribute(device_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  cc_minor_ = attribute(device_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  arch_ = arch_for_compute_capability(cc_major_, cc_minor_);
  sm_count_ = attribute(device_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  max_smem_optin_ = attribute(device_, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  max_smem_per_sm_ = attribute(device_, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  l2_bytes_ = attribute(device_, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  ATTNC_CU(DeviceTotalMem, &total_memory_, device_);
  ATTNC_CU(DevicePrimaryCtxRetain, &context_, device_);
  if (const CUresult r = cu.CtxSetCurrent(context_); r != CUDA_SUCCESS) {
    cu.DevicePrimaryCtxRelease(device_);
    cu_check(r, "cuCtxSetCurrent");
  }
}

Device::~Device() {
  if (context_) Driver::get().api().DevicePrimaryCtxRelease(device_);
}

void Device::make_current() const { ATTNC_CU(CtxSetCurrent, context_); }
void Device::synchronize() const { ATTNC_CU(CtxSynchronize); }

size_t Device::free_memory() const {
  size_t free = 0, total = 0;
  ATTNC_CU(MemGetInfo, &free, &total);
  return free;
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes > 0) ATTNC_CU(MemAlloc, &ptr_, bytes);
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  // A destructor must not throw; a failed free leaks rather than aborting.
  if (ptr_) Driver::get().api().MemFree(ptr_);
  ptr_ = 0;
  bytes_ = 0;
}

void DeviceBuffer::upload(const void* host, size_t bytes, size_t offset) {
  if (offset + bytes > bytes_) throw std::out_of_range("DeviceBuffer::upload: past the end of the buffer");
  if (bytes) ATTNC_CU(MemcpyHtoD, ptr_ + offset, host, bytes);
}

void DeviceBuffer::download(void* host, size_t bytes, size_t offset) const {
  if (offset + bytes > bytes_) throw std::out_of_range("DeviceBuffer::download: past the end of the buffer");
  if (bytes) ATTNC_CU(MemcpyDtoH, host, ptr_ + offset, bytes);
}

void DeviceBuffer::memset(unsigned char byte) {
  if (bytes_) ATTNC_CU(MemsetD8, ptr_, byte, bytes_);
}

Stream::Stream() { ATTNC_CU(StreamCreate, &stream_, CU_STREAM_NON_BLOCKING); }
Stream::~Stream() {
  if (stream_) Driver::get().api().StreamDestroy(stream_);
}
void Stream::synchronize() const { ATTNC_CU(StreamSynchronize, stream_); }

Event::Event() { ATTNC_CU(EventCreate, &event_, CU_EVENT_DEFAULT); }
Event::~Event() {
  if (event_) Driver::get().api().EventDestroy(event_);
}
void Event::record(CUstream stream) { ATTNC_CU(EventRecord, event_, stream); }
void Event::synchronize() const { ATTNC_CU(EventSynchronize, event_); }

float elapsed_ms(const Event& start, const Event& stop) {
  stop.synchronize();
  float ms = 0;
  ATTNC_CU(EventElapsedTime, &ms, start.handle(), stop.handle());
  return ms;
}

}  // namespace attnc
