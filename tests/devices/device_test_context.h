// An ExitContext over plain test state, for driving a device without a VM.
#ifndef MINIVMM_TESTS_DEVICES_DEVICE_TEST_CONTEXT_H_
#define MINIVMM_TESTS_DEVICES_DEVICE_TEST_CONTEXT_H_

#include <string>
#include <string_view>

#include "minivmm/exit_context.h"
#include "minivmm/sinks.h"

namespace minivmm {

struct DeviceTestContext {
  PlainVcpuState vcpu;
  RunControl control;
  ExitStats stats;
  ExitContext ctx{vcpu, control, stats};
};

class StringConsole final : public ConsoleSink {
 public:
  void Write(std::string_view bytes) override {
    text.append(bytes);
    ++writes;
  }
  std::string text;
  int writes = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_TESTS_DEVICES_DEVICE_TEST_CONTEXT_H_
