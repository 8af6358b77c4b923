// One GPU on its primary context, plus the RAII pieces tests, the tuner and the dispatcher need:
// device memory, streams and timing events. All calls go through Driver and throw CudaError.
// CUDA contexts are per thread: the constructing thread gets the context made current; any other
// thread calls make_current() before touching buffers, streams or events.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>
#include <vector>

namespace attnc {

// The arch we compile for on compute capability major.minor: "sm_90a" on 9.0 (wgmma/TMA need the
// arch-specific target), "sm_<major><minor>" otherwise.
std::string arch_for_compute_capability(int major, int minor);

class Device {
 public:
  static int count();  // 0 without a driver or GPU; never throws
  // Retains device `ordinal`'s primary context and makes it current. Throws DriverUnavailable
  // without a driver, CudaError for a bad ordinal.
  explicit Device(int ordinal = 0);
  ~Device();  // releases the primary context
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  void make_current() const;
  void synchronize() const;  // the whole context
  size_t free_memory() const;

  int ordinal() const { return ordinal_; }
  CUdevice handle() const { return device_; }
  CUcontext context() const { return context_; }
  const std::string& name() const { return name_; }
  int cc_major() const { return cc_major_; }
  int cc_minor() const { return cc_minor_; }
  const std::string& arch() const { return arch_; }
  int sm_count() const { return sm_count_; }
  size_t total_memory() const { return total_memory_; }
  int max_smem_per_block_optin() const { return max_smem_optin_; }  // bytes of dynamic smem a block may opt in to
  int max_smem_per_sm() const { return max_smem_per_sm_; }
  int l2_bytes() const { return l2_bytes_; }
  int driver_version() const { return driver_version_; }               // e.g. 13000

 private:
  int ordinal_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  std::string name_, arch_;
  int cc_major_ = 0, cc_minor_ = 0, sm_count_ = 0, max_smem_optin_ = 0, max_smem_per_sm_ = 0, l2_bytes_ = 0;
  int driver_version_ = 0;
  size_t total_memory_ = 0;
};

// Device memory, freed on destruction. Copies are synchronous (legacy default stream).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  template <class T>
  static DeviceBuffer from(const std::vector<T>& host) {
    DeviceBuffer b(host.size() * sizeof(T));
    b.upload(host);
    return b;
  }

  CUdeviceptr ptr() const { return ptr_; }
  // As a pointer for a params struct field.
  template <class T = void>
  T* as() const { return reinterpret_cast<T*>(ptr_); }
  size_t size() const { return bytes_; }

  void upload(const void* host, size_t bytes, size_t offset = 0);
  void download(void* host, size_t bytes, size_t offset = 0) const;
  void memset(unsigned char byte);  // every byte of the buffer

  template <class T>
  void upload(const std::vector<T>& host) { upload(host.data(), host.size() * sizeof(T)); }
  template <class T>
  std::vector<T> download() const {
    std::vector<T> host(bytes_ / sizeof(T));
    download(host.data(), host.size() * sizeof(T));
    return host;
  }

 private:
  void release() noexcept;
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

class Stream {
 public:
  Stream();  // non-blocking with respect to the legacy default stream
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  CUstream handle() const { return stream_; }
  void synchronize() const;

 private:
  CUstream stream_ = nullptr;
};

class Event {
 public:
  Event();  // with timing
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  CUevent handle() const { return event_; }
  void record(CUstream stream = nullptr);
  void synchronize() const;

 private:
  CUevent event_ = nullptr;
};

// Milliseconds from `start` to `stop`; waits for `stop` to complete first.
float elapsed_ms(const Event& start, const Event& stop);

}  // namespace attnc
