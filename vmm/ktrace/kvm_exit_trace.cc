#include "vmm/ktrace/kvm_exit_trace.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_format.h"
#include "vmm/ktrace/tracefs_shim.h"

extern "C" {
#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>
}

namespace minivmm {

void KernelExitCounts::Add(const KernelExitCounts& other) {
  exits += other.exits;
  lost += other.lost;
  for (const auto& [name, n] : other.by_reason) by_reason[name] += n;
  for (const auto& [key, n] : other.by_reason_rip) by_reason_rip[key] += n;
}

namespace {

// 2 MiB of records per vCPU (about 28000 kvm_exit records), drained every
// few milliseconds while the run goes on.
constexpr size_t kRingPages = 512;

long PageSize() { return sysconf(_SC_PAGESIZE); }

int OpenTracepoint(int id, pid_t tid) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_TRACEPOINT;
  attr.config = static_cast<uint64_t>(id);
  attr.sample_period = 1;
  attr.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
  // The records' times on CLOCK_MONOTONIC, the phases' clock (EndPhase).
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC;
  attr.wakeup_events = 1;
  return static_cast<int>(
      syscall(SYS_perf_event_open, &attr, tid, /*cpu=*/-1, /*group_fd=*/-1, PERF_FLAG_FD_CLOEXEC));
}

std::string Paranoid() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  std::string value;
  in >> value;
  return value.empty() ? "unknown" : value;
}

pid_t CurrentTid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

}  // namespace

absl::StatusOr<std::unique_ptr<KvmExitTrace>> KvmExitTrace::Open(uint32_t cpus) {
  // kvm_pvm, by its source, records kvm:kvm_exit only for guest code that
  // ran on the CPU in its PVM mode, while KVM's `exits` statistic also
  // counts each batch of the guest code it emulates (all of guest ring 0
  // on these hosts, docs/hosts.md): no count from the tracepoint would be
  // the run's.
  std::error_code ec;
  if (std::filesystem::exists("/sys/module/kvm_pvm", ec))
    return absl::FailedPreconditionError(
        "--kernel-exits: kvm_pvm does not report the guest code it emulates through "
        "kvm:kvm_exit, so this host's exits cannot be counted from it (docs/hosts.md)");
  const char* dir = minivmm_tracing_dir();
  if (dir == nullptr)
    return absl::FailedPreconditionError(
        "--kernel-exits: tracefs is not mounted and this process could not mount it (as root: "
        "mount -t tracefs nodev /sys/kernel/tracing)");
  tep_handle* tep = minivmm_kvm_event_formats();
  if (tep == nullptr)
    return absl::FailedPreconditionError(absl::StrFormat(
        "--kernel-exits: cannot read KVM's tracepoint formats under %s/events/kvm (%s)", dir,
        std::strerror(errno)));
  tep_event* event = tep_find_event_by_name(tep, "kvm", "kvm_exit");
  if (event == nullptr) {
    tep_free(tep);
    return absl::FailedPreconditionError(
        "--kernel-exits: this host's KVM has no kvm:kvm_exit tracepoint");
  }
  // The right to open it, asked of this thread before any vCPU runs.
  const int probe = OpenTracepoint(event->id, CurrentTid());
  if (probe < 0) {
    const int error = errno;
    tep_free(tep);
    return absl::FailedPreconditionError(
        absl::StrFormat("--kernel-exits: no right to trace kvm:kvm_exit (perf_event_open: %s; "
                        "kernel.perf_event_paranoid is %s; run as root or with CAP_PERFMON)",
                        std::strerror(error), Paranoid()));
  }
  close(probe);
  return std::unique_ptr<KvmExitTrace>(new KvmExitTrace(tep, event, cpus));
}

KvmExitTrace::KvmExitTrace(tep_handle* tep, tep_event* event, uint32_t cpus)
    : tep_(tep),
      event_(event),
      reason_field_(tep_find_field(event, "exit_reason")),
      rip_field_(tep_find_field(event, "guest_rip")),
      isa_field_(tep_find_field(event, "isa")),
      rings_(cpus) {}

KvmExitTrace::~KvmExitTrace() {
  const size_t bytes = (kRingPages + 1) * PageSize();
  for (Ring& ring : rings_) {
    if (ring.base != nullptr) munmap(ring.base, bytes);
    if (ring.fd >= 0) close(ring.fd);
  }
  tep_free(tep_);
}

absl::Status KvmExitTrace::AttachCurrentThread(uint32_t cpu) {
  std::lock_guard lock(mu_);
  Ring& ring = rings_.at(cpu);
  ring.fd = OpenTracepoint(event_->id, CurrentTid());
  if (ring.fd < 0)
    return absl::InternalError(absl::StrFormat("perf_event_open(kvm:kvm_exit) for vCPU %u: %s", cpu,
                                               std::strerror(errno)));
  void* base =
      mmap(nullptr, (kRingPages + 1) * PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, ring.fd, 0);
  if (base == MAP_FAILED)
    return absl::InternalError(
        absl::StrFormat("mmap(kvm:kvm_exit ring) for vCPU %u: %s", cpu, std::strerror(errno)));
  ring.base = static_cast<uint8_t*>(base);
  return absl::OkStatus();
}

void KvmExitTrace::Drain() {
  std::lock_guard lock(mu_);
  for (Ring& ring : rings_) {
    if (ring.base != nullptr) DrainRing(ring);
  }
}

std::vector<KernelExitCounts> KvmExitTrace::Counts() {
  Drain();
  std::lock_guard lock(mu_);
  std::vector<KernelExitCounts> counts;
  for (const Ring& ring : rings_) counts.push_back(ring.counts);
  return counts;
}

void KvmExitTrace::DrainRing(Ring& ring) {
  auto* meta = reinterpret_cast<perf_event_mmap_page*>(ring.base);
  const uint8_t* data = ring.base + PageSize();
  const uint64_t size = kRingPages * PageSize();
  const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta->data_tail;
  // A record as one contiguous span, copied out where it wraps.
  auto view = [&](uint64_t at, uint64_t bytes) -> const uint8_t* {
    const uint64_t offset = at % size;
    if (offset + bytes <= size) return data + offset;
    scratch_.resize(bytes);
    std::memcpy(scratch_.data(), data + offset, size - offset);
    std::memcpy(scratch_.data() + (size - offset), data, bytes - (size - offset));
    return scratch_.data();
  };
  while (tail < head) {
    perf_event_header header;
    std::memcpy(&header, view(tail, sizeof header), sizeof header);
    if (header.size < sizeof header || header.size > head - tail) break;
    const uint8_t* record = view(tail, header.size);
    // PERF_SAMPLE_TIME | PERF_SAMPLE_RAW: u64 time, u32 size, the raw record.
    if (header.type == PERF_RECORD_SAMPLE && header.size >= sizeof header + 12) {
      uint64_t time_ns;
      uint32_t raw_size;
      std::memcpy(&time_ns, record + sizeof header, 8);
      std::memcpy(&raw_size, record + sizeof header + 8, 4);
      if (sizeof header + 12 + raw_size <= header.size)
        Parse(time_ns, record + sizeof header + 12, raw_size, ring.counts);
    } else if (header.type == PERF_RECORD_LOST && header.size >= sizeof header + 16) {
      uint64_t lost;
      std::memcpy(&lost, record + sizeof header + 8, 8);
      ring.counts.lost += lost;
    }
    tail += header.size;
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

void KvmExitTrace::Parse(uint64_t time_ns, const uint8_t* raw, uint32_t size,
                         KernelExitCounts& counts) {
  unsigned long long code = 0, rip = 0, isa = 0;
  if (tep_read_number_field(reason_field_, raw, &code) != 0) return;
  tep_read_number_field(rip_field_, raw, &rip);
  if (isa_field_ != nullptr) tep_read_number_field(isa_field_, raw, &isa);
  const std::string& name = ReasonName(raw, size, isa, code);
  ++counts.exits;
  ++counts.by_reason[name];
  ++counts.by_reason_rip[{name, rip}];
  // Its phase: the first whose end is after it (or the open one).
  std::lock_guard lock(phase_mu_);
  const size_t phase =
      std::upper_bound(boundaries_.begin(), boundaries_.end(), time_ns) - boundaries_.begin();
  if (phase_counts_.size() <= phase) phase_counts_.resize(phase + 1);
  KernelExitCounts& in_phase = phase_counts_[phase];
  ++in_phase.exits;
  ++in_phase.by_reason[name];
  ++in_phase.by_reason_rip[{name, rip}];
}

void KvmExitTrace::EndPhase(const std::string& line) {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  std::lock_guard lock(phase_mu_);
  boundaries_.push_back(static_cast<uint64_t>(now.tv_sec) * 1'000'000'000u +
                        static_cast<uint64_t>(now.tv_nsec));
  lines_.push_back(line);
}

std::vector<KernelExitPhase> KvmExitTrace::Phases() {
  Drain();
  std::lock_guard lock(phase_mu_);
  std::vector<KernelExitPhase> phases(boundaries_.size() + 1);
  for (size_t i = 0; i < phases.size(); ++i) {
    if (i < lines_.size()) phases[i].line = lines_[i];
    if (i < phase_counts_.size()) phases[i].counts = phase_counts_[i];
  }
  return phases;
}

// The reason as the tracepoint's own print format names it (its
// __print_symbolic tables, one per vendor), rendered once per (isa, code)
// by libtraceevent and kept.
const std::string& KvmExitTrace::ReasonName(const uint8_t* raw, uint32_t size, uint64_t isa,
                                            uint64_t code) {
  auto [it, inserted] = names_.try_emplace({isa, code});
  if (!inserted) return it->second;
  tep_record record{};
  record.data = const_cast<uint8_t*>(raw);
  record.size = static_cast<int>(size);
  trace_seq seq;
  trace_seq_init(&seq);
  tep_print_event(tep_, &seq, &record, "%s", TEP_PRINT_INFO);
  trace_seq_terminate(&seq);
  const std::string info(seq.buffer, seq.len);
  trace_seq_destroy(&seq);
  // "vcpu 0 reason cpuid rip 0x..." (VMX: "reason CPUID rip ...", and
  // " FAILED_VMENTRY" after the name on a failed entry).
  const size_t at = info.find(" reason ");
  const size_t start = at == std::string::npos ? std::string::npos : at + 8;
  const size_t end = start == std::string::npos ? start : info.find(" rip ", start);
  it->second = end == std::string::npos ? absl::StrFormat("reason_%#x", code)
                                        : info.substr(start, end - start);
  return it->second;
}

}  // namespace minivmm
