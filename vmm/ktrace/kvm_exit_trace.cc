#include "vmm/ktrace/kvm_exit_trace.h"

#include <linux/kvm.h>
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
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "minivmm/exit_stats.h"
#include "vmm/ktrace/tracefs_shim.h"

extern "C" {
#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>
}

namespace minivmm {

namespace {

template <typename Map>
void AddMap(Map& into, const Map& from) {
  for (const auto& [key, n] : from) into[key] += n;
}

}  // namespace

void KernelExitCounts::Add(const KernelExitCounts& other) {
  exits += other.exits;
  lost += other.lost;
  AddMap(by_reason, other.by_reason);
  AddMap(by_reason_rip, other.by_reason_rip);
  AddMap(to_vmm_by_reason, other.to_vmm_by_reason);
  AddMap(to_vmm_by_reason_rip, other.to_vmm_by_reason_rip);
  AddMap(by_reason_stack, other.by_reason_stack);
  AddMap(to_vmm_by_reason_stack, other.to_vmm_by_reason_stack);
  unstacked += other.unstacked;
  AddMap(by_reason_detail, other.by_reason_detail);
  AddMap(returns, other.returns);
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

// How KVM_RUN returned, named as minivmm counts it (ExitReasonName), as
// KvmVcpu::Run decodes kvm_run's exit_reason (vmm/kvm/vcpu.h): -EINTR and
// -EAGAIN are kicks (ExitReason::kIntr), any other error a failed run.
std::string ReturnName(uint64_t kvm_exit_reason, int64_t error) {
  if (error < 0)
    return error == -EINTR || error == -EAGAIN ? std::string(ExitReasonName(ExitReason::kIntr))
                                               : "failed";
  static constexpr std::pair<uint32_t, ExitReason> kDecoded[] = {
      {KVM_EXIT_IO, ExitReason::kIo},
      {KVM_EXIT_MMIO, ExitReason::kMmio},
      {KVM_EXIT_HLT, ExitReason::kHlt},
      {KVM_EXIT_IRQ_WINDOW_OPEN, ExitReason::kIrqWindowOpen},
      {KVM_EXIT_INTR, ExitReason::kIntr},
      {KVM_EXIT_SHUTDOWN, ExitReason::kShutdown},
      {KVM_EXIT_FAIL_ENTRY, ExitReason::kFailEntry},
      {KVM_EXIT_INTERNAL_ERROR, ExitReason::kInternalError},
      {KVM_EXIT_SYSTEM_EVENT, ExitReason::kSystemEvent},
      {KVM_EXIT_HYPERV, ExitReason::kHyperv},
      {KVM_EXIT_IOAPIC_EOI, ExitReason::kIoapicEoi}};
  for (const auto& [code, reason] : kDecoded)
    if (code == kvm_exit_reason) return std::string(ExitReasonName(reason));
  return std::string(ExitReasonName(ExitReason::kUnknown));
}

}  // namespace

absl::StatusOr<std::unique_ptr<KvmExitTrace>> KvmExitTrace::Open(uint32_t cpus, bool keep_events,
                                                                  bool stacks) {
  // kvm_pvm has the tracepoint but records no kvm:kvm_exit for the guest
  // code it emulates (all of guest ring 0 on these hosts), while KVM's
  // `exits` statistic counts it: seen, 0 records against 720 exits
  // (docs/hosts.md). No count from the tracepoint would be the run's.
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
  tep_event* returns = tep_find_event_by_name(tep, "kvm", "kvm_userspace_exit");
  if (event == nullptr || returns == nullptr) {
    tep_free(tep);
    return absl::FailedPreconditionError(
        absl::StrFormat("--kernel-exits: this host's KVM has no kvm:%s tracepoint",
                        event == nullptr ? "kvm_exit" : "kvm_userspace_exit"));
  }
  std::vector<Source> sources = {{Kind::kExit, event}, {Kind::kUserspaceExit, returns}};
  // The details, where this KVM has them.
  for (const auto& [kind, name] :
       {std::pair{Kind::kMsr, "kvm_msr"}, std::pair{Kind::kCr, "kvm_cr"},
        std::pair{Kind::kPio, "kvm_pio"}, std::pair{Kind::kHypercall, "kvm_hypercall"}}) {
    if (tep_event* detail = tep_find_event_by_name(tep, "kvm", name))
      sources.push_back({kind, detail});
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
  auto trace =
      std::unique_ptr<KvmExitTrace>(new KvmExitTrace(tep, std::move(sources), cpus, keep_events));
  if (stacks) {
    absl::StatusOr<std::unique_ptr<KvmExitStacks>> taken = KvmExitStacks::Open();
    if (taken.ok()) {
      trace->stacks_ = *std::move(taken);
    } else {
      trace->stacks_missing_ = absl::StrCat(
          "--kernel-exits --sites: each in-kernel exit's site is its RIP alone, without its "
          "frame-pointer stack: ",
          taken.status().message());
    }
  }
  return trace;
}

void KvmExitTrace::SetRam(std::span<const uint8_t> ram) {
  if (stacks_ != nullptr) stacks_->SetRam(ram);
}

KvmExitTrace::KvmExitTrace(tep_handle* tep, std::vector<Source> sources, uint32_t cpus,
                           bool keep_events)
    : tep_(tep), sources_(std::move(sources)), rings_(cpus), keep_events_(keep_events) {
  for (size_t i = 0; i < sources_.size(); ++i) source_of_id_[sources_[i].event->id] = i;
}

KvmExitTrace::~KvmExitTrace() {
  const size_t bytes = (kRingPages + 1) * PageSize();
  for (Ring& ring : rings_) {
    if (ring.base != nullptr) munmap(ring.base, bytes);
    for (int fd : ring.fds) close(fd);
  }
  tep_free(tep_);
}

absl::Status KvmExitTrace::AttachCurrentThread(uint32_t cpu) {
  std::lock_guard lock(mu_);
  Ring& ring = rings_.at(cpu);
  const pid_t tid = CurrentTid();
  if (stacks_ != nullptr) {
    if (absl::Status added = stacks_->AddThread(tid); !added.ok()) return added;
    ring_of_tid_[static_cast<uint32_t>(tid)] = cpu;
  }
  for (const Source& source : sources_) {
    const int fd = OpenTracepoint(source.event->id, tid);
    if (fd < 0)
      return absl::InternalError(absl::StrFormat("perf_event_open(kvm:%s) for vCPU %u: %s",
                                                 source.event->name, cpu, std::strerror(errno)));
    ring.fds.push_back(fd);
    if (ring.fds.size() == 1) {
      void* base =
          mmap(nullptr, (kRingPages + 1) * PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (base == MAP_FAILED)
        return absl::InternalError(
            absl::StrFormat("mmap(kvm:kvm_exit ring) for vCPU %u: %s", cpu, std::strerror(errno)));
      ring.base = static_cast<uint8_t*>(base);
    } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring.fds[0]) < 0) {
      return absl::InternalError(
          absl::StrFormat("PERF_EVENT_IOC_SET_OUTPUT(kvm:%s) for vCPU %u: %s", source.event->name,
                          cpu, std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

void KvmExitTrace::Drain() {
  std::lock_guard lock(mu_);
  DrainLocked(/*last=*/false);
}

void KvmExitTrace::DrainLocked(bool last) {
  // The stacks first: each is written in the same tracepoint call as its
  // exit's record, so an exit read below without its stack gets it at a
  // later drain.
  if (stacks_ != nullptr) {
    stacks_->Consume([&](const minivmm_exit_stack& stack) {
      const auto ring = ring_of_tid_.find(stack.tid);
      if (ring == ring_of_tid_.end()) return;
      const size_t depth = std::clamp<size_t>(stack.depth, 1, MINIVMM_EXIT_STACK_FRAMES);
      rings_[ring->second].pairing.AddStack({stack.frames, stack.frames + depth});
    });
  }
  for (Ring& ring : rings_) {
    if (ring.base != nullptr) DrainRing(ring);
    if (stacks_ != nullptr) Settle(ring, last);
  }
}

void KvmExitTrace::Settle(Ring& ring, bool last) {
  ring.pairing.Settle(
      last,
      [&](const StackPairing::Exit& exit, std::vector<uint64_t> stack) {
        const std::pair<std::string, std::vector<uint64_t>> key{*exit.reason, std::move(stack)};
        if (keep_events_) {
          auto [id, added] = stack_ids_.try_emplace(key.second, stack_list_.size() + 1);
          if (added) stack_list_.push_back(key.second);
          ring.events[exit.event].stack = id->second;
        }
        Count(exit.time_ns, ring, [&](KernelExitCounts& c) {
          ++c.by_reason_stack[key];
          if (exit.to_vmm) ++c.to_vmm_by_reason_stack[key];
        });
      },
      [&](const StackPairing::Exit& exit) {
        Count(exit.time_ns, ring, [](KernelExitCounts& c) { ++c.unstacked; });
      });
}

std::vector<KernelExitCounts> KvmExitTrace::Counts() {
  std::lock_guard lock(mu_);
  // The run has ended: every record is written, so no exit waits for its
  // stack any more.
  DrainLocked(/*last=*/true);
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
        Parse(time_ns, record + sizeof header + 12, raw_size, ring);
    } else if (header.type == PERF_RECORD_LOST && header.size >= sizeof header + 16) {
      uint64_t lost;
      std::memcpy(&lost, record + sizeof header + 8, 8);
      ring.counts.lost += lost;
    }
    tail += header.size;
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

template <typename F>
void KvmExitTrace::Count(uint64_t time_ns, Ring& ring, F f) {
  f(ring.counts);
  // Its phase: the first whose end is after it (or the open one).
  std::lock_guard lock(phase_mu_);
  const size_t phase =
      std::upper_bound(boundaries_.begin(), boundaries_.end(), time_ns) - boundaries_.begin();
  if (phase_counts_.size() <= phase) phase_counts_.resize(phase + 1);
  f(phase_counts_[phase]);
}

uint64_t KvmExitTrace::Field(tep_event* event, const char* name, const uint8_t* raw) {
  unsigned long long value = 0;
  if (tep_format_field* field = tep_find_field(event, name))
    tep_read_number_field(field, raw, &value);
  return value;
}

std::string KvmExitTrace::Detail(Kind kind, tep_event* event, const uint8_t* raw) {
  switch (kind) {
    case Kind::kMsr:
      return absl::StrFormat("%s %#x", Field(event, "write", raw) ? "wrmsr" : "rdmsr",
                             Field(event, "ecx", raw));
    case Kind::kCr:
      return absl::StrFormat("cr%u %s", Field(event, "cr", raw),
                             Field(event, "rw", raw) ? "write" : "read");
    case Kind::kPio:
      return absl::StrFormat("%s %#x", Field(event, "rw", raw) ? "out" : "in",
                             Field(event, "port", raw));
    case Kind::kHypercall:
      return absl::StrFormat("hypercall %u", Field(event, "nr", raw));
    case Kind::kExit:
    case Kind::kUserspaceExit:
      break;
  }
  return "";
}

void KvmExitTrace::Parse(uint64_t time_ns, const uint8_t* raw, uint32_t size, Ring& ring) {
  tep_record record{};
  record.data = const_cast<uint8_t*>(raw);
  record.size = static_cast<int>(size);
  const auto source = source_of_id_.find(tep_data_type(tep_, &record));
  if (source == source_of_id_.end()) return;
  const Kind kind = sources_[source->second].kind;
  tep_event* event = sources_[source->second].event;
  if (kind == Kind::kExit) {
    const uint64_t code = Field(event, "exit_reason", raw);
    const uint64_t rip = Field(event, "guest_rip", raw);
    const uint16_t reason = Reason(raw, size, Field(event, "isa", raw), code);
    const std::string& name = reason_names_[reason];
    ring.last_reason = &name;
    if (keep_events_) {
      ring.events.push_back({time_ns, rip, static_cast<uint32_t>(&ring - rings_.data()), reason,
                             /*to_vmm=*/false});
    }
    ring.last_rip = rip;
    ring.detailed = false;
    if (stacks_ != nullptr)
      ring.pairing.AddExit({time_ns, &name, rip, /*to_vmm=*/false, ring.events.size() - 1});
    Count(time_ns, ring, [&](KernelExitCounts& c) {
      ++c.exits;
      ++c.by_reason[name];
      ++c.by_reason_rip[{name, rip}];
    });
  } else if (kind == Kind::kUserspaceExit) {
    // The errno field is an int: sign-extend what libtraceevent read.
    const auto error = static_cast<int32_t>(Field(event, "errno", raw));
    const std::string returned = ReturnName(Field(event, "reason", raw), error);
    const std::string* reason = ring.last_reason;
    const uint64_t rip = ring.last_rip;
    ring.last_reason = nullptr;
    if (reason != nullptr && keep_events_) ring.events.back().to_vmm = true;
    if (reason != nullptr && stacks_ != nullptr) ring.pairing.LastReachedVmm();
    Count(time_ns, ring, [&](KernelExitCounts& c) {
      ++c.returns[returned];
      if (reason != nullptr) {
        ++c.to_vmm_by_reason[*reason];
        ++c.to_vmm_by_reason_rip[{*reason, rip}];
      }
    });
  } else if (ring.last_reason != nullptr && !ring.detailed) {
    // The first detail after an exit is its own (an instruction KVM
    // emulates may do more, e.g. a string I/O's further ports).
    ring.detailed = true;
    const std::string detail = Detail(kind, event, raw);
    const std::string& reason = *ring.last_reason;
    Count(time_ns, ring, [&](KernelExitCounts& c) { ++c.by_reason_detail[{reason, detail}]; });
  }
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

std::vector<KernelExitEvent> KvmExitTrace::Events() {
  Drain();
  std::lock_guard lock(mu_);
  std::vector<KernelExitEvent> events;
  for (const Ring& ring : rings_)
    events.insert(events.end(), ring.events.begin(), ring.events.end());
  std::stable_sort(events.begin(), events.end(),
                   [](const auto& a, const auto& b) { return a.time_ns < b.time_ns; });
  return events;
}

std::vector<std::vector<uint64_t>> KvmExitTrace::StackList() {
  std::lock_guard lock(mu_);
  return stack_list_;
}

std::vector<std::string> KvmExitTrace::ReasonNames() {
  std::lock_guard lock(mu_);
  return {reason_names_.begin(), reason_names_.end()};
}

// The reason as the tracepoint's own print format names it (its
// __print_symbolic tables, one per vendor), rendered once per (isa, code)
// by libtraceevent and kept.
uint16_t KvmExitTrace::Reason(const uint8_t* raw, uint32_t size, uint64_t isa, uint64_t code) {
  auto [it, inserted] = names_.try_emplace({isa, code}, 0);
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
  std::string name = end == std::string::npos ? absl::StrFormat("reason_%#x", code)
                                              : info.substr(start, end - start);
  // Two codes of one name (never in KVM's tables) share its index.
  for (size_t i = 0; i < reason_names_.size(); ++i) {
    if (reason_names_[i] == name) return it->second = static_cast<uint16_t>(i);
  }
  it->second = static_cast<uint16_t>(reason_names_.size());
  reason_names_.push_back(std::move(name));
  return it->second;
}

}  // namespace minivmm
