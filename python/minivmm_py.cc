// import minivmm: the public C++ API (docs/API.md) as a Python module
// (docs/python.md). Results are plain Python objects: dicts, lists, ints
// and strs. The GIL is released while a guest runs; errors are exceptions
// carrying the library's message.
#include <dlfcn.h>
#include <pybind11/eval.h>
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <csignal>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "cli/exit_codes.h"
#include "cli/experiment.h"
#include "minivmm/host_info.h"
#include "minivmm/vm.h"
#include "minivmm_abi/boot.h"

namespace py = pybind11;

namespace minivmm::python {
namespace {

// absl::Status -> the matching Python exception, with the library's message.
[[noreturn]] void Raise(const absl::Status& status) {
  std::string message(status.message());
  PyObject* type = PyExc_RuntimeError;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      type = PyExc_ValueError;
      break;
    case absl::StatusCode::kNotFound:
      type = PyExc_FileNotFoundError;
      break;
    case absl::StatusCode::kPermissionDenied:
      type = PyExc_PermissionError;
      break;
    default:  // FailedPrecondition (a missing capability, a second run), Internal, ...
      type = PyExc_RuntimeError;
      break;
  }
  PyErr_SetString(type, message.c_str());
  throw py::error_already_set();
}

[[noreturn]] void RaiseValueError(const std::string& message) {
  PyErr_SetString(PyExc_ValueError, message.c_str());
  throw py::error_already_set();
}

// Where this module's guest is: beside the build tree's module
// (<build>/python -> <build>/guest), beside the installed one
// (<prefix>/lib/python3/dist-packages -> <prefix>/share/minivmm), else the
// library's own choice.
// The module's own file, from the dynamic loader (its __file__ is set only
// after the module's init function returns).
std::string ModuleFile() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ModuleFile), &info) == 0 || info.dli_fname == nullptr)
    return "";
  std::error_code ec;
  std::filesystem::path path = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::string(info.dli_fname) : path.string();
}

std::string ModuleDefaultKernel() {
  std::error_code ec;
  const std::string module_file = ModuleFile();
  if (!module_file.empty()) {
    std::filesystem::path dir = std::filesystem::path(module_file).parent_path();
    std::filesystem::path build_guest = MINIVMM_PY_BUILD_GUEST_ELF;
    if (std::filesystem::equivalent(dir, build_guest.parent_path().parent_path() / "python", ec) &&
        std::filesystem::exists(build_guest, ec))
      return build_guest.string();
    std::filesystem::path installed =
        dir.parent_path().parent_path().parent_path() / "share/minivmm/minivmm-guest.elf";
    if (std::filesystem::exists(installed, ec)) return installed.string();
  }
  return DefaultGuestKernelPath();
}

// Guest report values: integers become ints, anything else stays a str.
py::object ReportValue(const std::string& value) {
  if (!value.empty()) {
    const char* begin = value.data();
    const char* end = begin + value.size();
    if (*begin == '-') {
      int64_t v = 0;
      auto [p, err] = std::from_chars(begin, end, v);
      if (err == std::errc() && p == end) return py::int_(v);
    } else {
      uint64_t v = 0;
      auto [p, err] = std::from_chars(begin, end, v);
      if (err == std::errc() && p == end) return py::int_(v);
    }
  }
  return py::str(value);
}

py::dict ReasonCounts(const ExitStats& s, uint64_t* total) {
  py::dict by_reason;
  uint64_t sum = 0;
  for (int i = 0; i < static_cast<int>(ExitReason::kCount); ++i) {
    sum += s.by_reason[i];
    by_reason[py::str(std::string(ExitReasonName(static_cast<ExitReason>(i))))] = s.by_reason[i];
  }
  *total = sum;
  return by_reason;
}

// Every registered hypercall's counts in `s`: {name: {nr, ops, exits, errors}}.
py::dict HypercallDict(const RunResult& r, const ExitStats& s) {
  py::dict calls;
  for (size_t nr = 0; nr < r.hypercall_names.size() && nr < MVMM_HC_MAX; ++nr) {
    if (r.hypercall_names[nr].empty()) continue;
    py::dict c;
    c["nr"] = nr;
    c["ops"] = s.hc_ops[nr];
    c["exits"] = s.hc_exits[nr];
    c["errors"] = s.hc_errors[nr];
    calls[py::str(r.hypercall_names[nr])] = c;
  }
  return calls;
}

// Every cause's counts in `s`: {cause: {ops, exits}}.
py::dict CauseDict(const ExitStats& s) {
  py::dict causes;
  for (int i = 0; i < static_cast<int>(Cause::kCount); ++i) {
    py::dict c;
    c["ops"] = s.causes[i].ops;
    c["exits"] = s.causes[i].exits;
    causes[py::str(std::string(CauseName(static_cast<Cause>(i))))] = c;
  }
  // Interrupt-window exits are included in if_set's exits and depend on the host.
  causes["if_set"]["host_dependent_exits"] =
      s.by_reason[static_cast<int>(ExitReason::kIrqWindowOpen)];
  return causes;
}

// The wasted-exit analysis of `s` as the run record's "wasted" section, or
// None when it did not run.
py::object WastedDict(const RunResult& r, const ExitStats& s) {
  if (!s.waste_analysed) return py::none();
  const auto count = [](const CauseCount& c) {
    py::dict d;
    d["ops"] = c.ops;
    d["exits"] = c.exits;
    return d;
  };
  py::dict by_cause, by_hypercall, by_reason;
  for (int i = 0; i < static_cast<int>(Cause::kCount); ++i)
    by_cause[py::str(std::string(CauseName(static_cast<Cause>(i))))] = count(s.wasted_by_cause[i]);
  for (size_t nr = 0; nr < r.hypercall_names.size() && nr < MVMM_HC_MAX; ++nr) {
    if (r.hypercall_names[nr].empty() || (s.hc_ops[nr] == 0 && s.hc_exits[nr] == 0)) continue;
    by_hypercall[py::str(r.hypercall_names[nr])] = count(s.wasted_by_hypercall[nr]);
  }
  for (int i = 0; i < static_cast<int>(WasteReason::kCount); ++i)
    by_reason[py::str(std::string(WasteReasonName(static_cast<WasteReason>(i))))] =
        count(s.wasted_by_reason[i]);
  py::dict d;
  d["by_cause"] = by_cause;
  d["by_hypercall"] = by_hypercall;
  d["by_reason"] = by_reason;
  return d;
}

// RunResult -> dict (docs/python.md "The result"); key names follow the run
// record (docs/run-record.md) where it has them.
py::dict ResultToDict(const RunResult& r, const std::string& cmdline, const std::string& console) {
  py::dict d;
  d["stop_reason"] = std::string(StopReasonName(r.reason));
  d["exit_code"] = r.exit_code;
  d["status"] = cli::ExitStatusFor(r, SIGINT);  // as `minivmm run` would exit
  d["failure"] = cli::RunFailure(r);
  d["ok"] = cli::RunFailure(r).empty();
  d["detail"] = r.detail;
  d["elapsed_ns"] = absl::ToInt64Nanoseconds(r.elapsed);
  d["cmdline"] = cmdline;
  d["vcpu_count"] = r.per_vcpu.size();
  d["stopped_by_vcpu"] =
      r.stopped_by_vcpu < 0 ? py::object(py::none()) : py::object(py::int_(r.stopped_by_vcpu));
  py::list vcpus;
  for (size_t v = 0; v < r.vcpu_stops.size(); ++v) {
    const VcpuStop& stop = r.vcpu_stops[v];
    py::dict one;
    one["vcpu"] = v;
    one["stop_reason"] = std::string(StopReasonName(stop.reason));
    one["detail"] = stop.detail;
    one["with_vm"] = stop.with_vm;
    one["idle"] = stop.idle;
    vcpus.append(one);
  }
  d["vcpus"] = vcpus;

  uint64_t total = 0;
  py::dict exits;
  py::dict by_reason = ReasonCounts(r.stats, &total);
  exits["total"] = total;
  exits["by_reason"] = by_reason;
  py::dict pio, mmio;
  for (size_t i = 0; i < r.pio_devices.size() && i < kMaxBusDevices; ++i)
    pio[py::str(r.pio_devices[i])] = r.stats.pio_by_device[i];
  pio["unclaimed"] = r.stats.pio_unclaimed;
  for (size_t i = 0; i < r.mmio_devices.size() && i < kMaxBusDevices; ++i)
    mmio[py::str(r.mmio_devices[i])] = r.stats.mmio_by_device[i];
  mmio["unclaimed"] = r.stats.mmio_unclaimed;
  exits["pio_by_device"] = pio;
  exits["mmio_by_device"] = mmio;
  py::list per_vcpu;
  for (size_t v = 0; v < r.per_vcpu.size(); ++v) {
    uint64_t vcpu_total = 0;
    py::dict reasons = ReasonCounts(r.per_vcpu[v], &vcpu_total);
    py::dict one;
    one["vcpu"] = v;
    one["total"] = vcpu_total;
    one["by_reason"] = reasons;
    one["hypercalls"] = HypercallDict(r, r.per_vcpu[v]);
    one["causes"] = CauseDict(r.per_vcpu[v]);
    one["wasted"] = WastedDict(r, r.per_vcpu[v]);
    one["timer_injections"] = r.per_vcpu[v].timer_injections;
    per_vcpu.append(one);
  }
  exits["per_vcpu"] = per_vcpu;
  d["exits"] = exits;

  py::dict hypercalls;
  hypercalls["calls"] = HypercallDict(r, r.stats);
  hypercalls["bad_number"] = r.stats.hc_bad_number;
  hypercalls["refused_cpl3"] = r.stats.hc_refused_cpl3;
  d["hypercalls"] = hypercalls;

  d["causes"] = CauseDict(r.stats);
  d["wasted"] = WastedDict(r, r.stats);
  py::list histogram;
  for (uint64_t n : r.stats.multicall_entries_histogram) histogram.append(n);
  d["multicall_entries_histogram_log2"] = histogram;
  py::dict gdt;
  gdt["applied"] = r.stats.gdt_stores_applied;
  gdt["rejected"] = r.stats.gdt_stores_rejected;
  d["gdt_stores"] = gdt;
  d["timer_injections"] = r.stats.timer_injections;
  d["ipi_injections"] = r.stats.ipi_injections;
  d["tlb_flushes_deferred"] = r.stats.tlb_flushes_deferred;
  d["lock_waits_slept"] = r.stats.lock_waits_slept;
  d["lock_wakes_by_kick"] = r.stats.lock_wakes_by_kick;
  d["directed_yields"] = r.stats.directed_yields;

  py::dict host_counters;
  for (const HostCounter& c : r.host_counters) host_counters[py::str(c.name)] = c.delta;
  d["host_counters"] = host_counters;
  py::dict reports;
  for (const auto& [key, value] : r.reports.entries) reports[py::str(key)] = ReportValue(value);
  d["reports"] = reports;
  d["console_tail"] = r.console_tail;
  py::dict registers;
  for (const auto& [name, value] : r.registers) registers[py::str(name)] = value;
  d["registers"] = registers;
  d["notes"] = r.notes;
  d["console"] = py::bytes(console).attr("decode")("utf-8", "replace");
  return d;
}

py::dict EventToDict(const ExitEvent& e) {
  py::dict d;
  d["sequence"] = e.sequence;
  d["reason"] = std::string(ExitReasonName(e.reason));
  d["address"] = e.address;
  d["is_write"] = e.is_write;
  d["hypercall"] = e.hypercall;
  py::list args;
  if (e.hypercall >= 0)
    for (uint64_t a : e.args) args.append(a);
  d["args"] = args;
  d["result"] = e.hypercall >= 0 ? py::object(py::int_(e.result)) : py::object(py::none());
  d["refusal"] = e.refusal.empty() ? py::object(py::none()) : py::object(py::str(e.refusal));
  d["wasted"] = e.wasted.empty() ? py::object(py::none()) : py::object(py::str(e.wasted));
  d["cancels"] = e.cancels >= 0 ? py::object(py::int_(e.cancels)) : py::object(py::none());
  d["vcpu"] = e.vcpu;
  d["exit_ns"] = e.exit_ns;
  d["resume_ns"] = e.resume_ns;
  py::dict reports;  // a `report` hypercall's entries
  for (const auto& [key, value] : e.reports) reports[py::str(key)] = ReportValue(value);
  d["reports"] = reports;
  return d;
}

class StringConsole final : public ConsoleSink {
 public:
  void Write(std::string_view bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (text_.size() + bytes.size() <= kMax) text_.append(bytes);
  }
  std::string Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(text_);
  }

 private:
  static constexpr size_t kMax = 1 << 20;
  std::mutex mu_;
  std::string text_;
};

struct PyVmOptions {
  std::string kernel;
  int64_t memory = 64ll << 20;
  std::string backend, pvops, workload, cmdline;
  int64_t timer_hz = 0;
  std::optional<double> timeout;
  std::string kvm_device = "/dev/kvm";
  bool wasted = false;
  int64_t cpus = 1;
};

VmConfig MakeConfig(const PyVmOptions& o, ConsoleSink* console) {
  if (o.memory <= 0)
    RaiseValueError("memory must be a positive number of bytes, got " + std::to_string(o.memory));
  if (!o.backend.empty()) {
    const auto& backends = cli::GuestBackends();
    if (std::find(backends.begin(), backends.end(), o.backend) == backends.end())
      RaiseValueError("unknown backend '" + o.backend + "' (pv or native)");
  }
  if (o.timer_hz < 0 || o.timer_hz > 0xffffffffll)
    RaiseValueError("timer_hz must be in [0, 10000], got " + std::to_string(o.timer_hz));
  VmConfig config;
  config.kernel_path = o.kernel.empty() ? ModuleDefaultKernel() : o.kernel;
  config.memory_bytes = static_cast<uint64_t>(o.memory);
  config.cmdline = cli::ComposeGuestCommandLine(o.backend, o.pvops, o.workload, o.cmdline);
  config.timer_hz = static_cast<uint32_t>(o.timer_hz);
  if (o.timeout) {
    if (!(*o.timeout > 0) || std::isinf(*o.timeout))
      RaiseValueError("timeout must be a positive number of seconds or None");
    config.timeout = absl::Seconds(*o.timeout);
  }
  // The library refuses a count outside 1..MVMM_MAX_CPUS (ValueError); this
  // only keeps the value from wrapping on the way.
  if (o.cpus < 1 || o.cpus > 0xffffffffll)
    RaiseValueError("cpus must be between 1 and " + std::to_string(MVMM_MAX_CPUS) + ", got " +
                    std::to_string(o.cpus));
  config.cpus = static_cast<uint32_t>(o.cpus);
  config.kvm_device = o.kvm_device;
  config.analyse_waste = o.wasted;
  config.console = console;
  return config;
}

class PyVm {
 public:
  explicit PyVm(const PyVmOptions& o) {
    config_ = MakeConfig(o, &console_);
    absl::StatusOr<std::unique_ptr<Vm>> vm;
    {
      py::gil_scoped_release release;
      vm = Vm::Create(config_);
    }
    if (!vm.ok()) Raise(vm.status());
    vm_ = std::move(*vm);
  }

  py::dict Run(py::object on_exit) {
    if (running_) {
      PyErr_SetString(PyExc_RuntimeError, "this VM is already running (in another thread)");
      throw py::error_already_set();
    }
    running_ = true;
    struct Reset {
      bool& flag;
      ~Reset() { flag = false; }
    } reset{running_};

    // An exception from the callback: kept, the run stopped, and rethrown
    // here with the GIL held.
    std::exception_ptr callback_error;
    if (!on_exit.is_none()) {
      if (!PyCallable_Check(on_exit.ptr())) {
        PyErr_SetString(PyExc_TypeError, "on_exit must be callable or None");
        throw py::error_already_set();
      }
      Vm* vm = vm_.get();
      vm_->SetExitObserver([&on_exit, &callback_error, vm](const ExitEvent& e) {
        if (callback_error) return;  // stopping: no more calls
        py::gil_scoped_acquire acquire;
        try {
          on_exit(EventToDict(e));
        } catch (...) {
          callback_error = std::current_exception();
          vm->RequestStop();
        }
      });
    }
    absl::StatusOr<RunResult> result;
    {
      py::gil_scoped_release release;
      result = vm_->Run();
    }
    if (!on_exit.is_none()) vm_->SetExitObserver(nullptr);
    if (callback_error) std::rethrow_exception(callback_error);
    if (!result.ok()) Raise(result.status());
    return ResultToDict(*result, config_.cmdline, console_.Take());
  }

  void RequestStop() { vm_->RequestStop(); }
  const VmConfig& config() const { return config_; }

 private:
  StringConsole console_;
  VmConfig config_;
  std::unique_ptr<Vm> vm_;
  bool running_ = false;
};

// minivmm.bench: the CLI's matrix and order (cli/bench_command.cc Plan):
// optionally one baseline (workload=none) per backend and configuration,
// then `repeat` repetitions of every (workload, backend, configuration),
// forwards on even repetitions and backwards on odd ones.
py::list Bench(const std::vector<std::string>& workloads, const std::vector<std::string>& backends,
               int repeat, bool baselines, const std::string& kernel, int64_t memory,
               std::optional<double> timeout, int64_t cpus, py::object progress) {
  if (repeat < 1) RaiseValueError("repeat must be at least 1");
  if (workloads.empty()) RaiseValueError("no workloads");
  if (backends.empty()) RaiseValueError("no backends");
  struct Planned {
    std::string name, spec, backend;
    const cli::BenchConfiguration* config;
    int repetition;
    bool baseline;
  };
  std::vector<std::pair<std::string, std::string>> choices;  // name, spec
  for (const std::string& w : workloads) {
    // "ctx:rounds=50" and "ctx,rounds=50" both name ctx with rounds=50.
    std::vector<std::string> parts = absl::StrSplit(w, absl::ByAnyChar(":,"));
    if (parts.empty() || parts[0].empty()) RaiseValueError("empty workload in '" + w + "'");
    std::string spec = parts[0];
    for (size_t i = 1; i < parts.size(); ++i) spec += "," + parts[i];
    choices.push_back({parts[0], spec});
  }
  std::vector<Planned> plan, cycle;
  for (const std::string& b : backends) {
    PyVmOptions check;
    check.backend = b;
    check.memory = memory;
    check.cpus = cpus;
    MakeConfig(check, nullptr);  // validates the backend, memory and cpus up front
    if (baselines)
      for (const auto& c : cli::BenchConfigurations())
        if (!c.pv_only || b == "pv") plan.push_back({"none", "none", b, &c, 0, true});
  }
  for (const auto& [name, spec] : choices)
    for (const std::string& b : backends)
      for (const auto& c : cli::BenchConfigurations())
        if (!c.pv_only || b == "pv") cycle.push_back({name, spec, b, &c, 0, false});
  for (int r = 0; r < repeat; ++r) {
    if (r % 2 == 0) {
      for (Planned p : cycle) plan.push_back({p.name, p.spec, p.backend, p.config, r, false});
    } else {
      for (auto it = cycle.rbegin(); it != cycle.rend(); ++it)
        plan.push_back({it->name, it->spec, it->backend, it->config, r, false});
    }
  }
  py::list out;
  for (size_t i = 0; i < plan.size(); ++i) {
    // Ctrl-C (a pending KeyboardInterrupt) ends the bench between runs.
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    const Planned& p = plan[i];
    PyVmOptions o;
    o.kernel = kernel;
    o.memory = memory;
    o.backend = p.backend;
    o.pvops = p.config->pvops;
    o.workload = p.spec;
    o.timeout = timeout;
    o.cpus = cpus;
    PyVm vm(o);
    py::dict result = vm.Run(py::none());
    py::dict run;
    run["index"] = i;
    run["workload"] = p.name;
    run["workload_spec"] = p.spec;
    run["baseline"] = p.baseline;
    run["backend"] = p.backend;
    run["configuration"] = p.config->name;
    run["pvops"] = p.config->pvops;
    run["repetition"] = p.repetition;
    run["result"] = result;
    out.append(run);
    if (!progress.is_none()) progress(i + 1, plan.size(), run);
  }
  return out;
}

py::dict HostToDict(const HostInfo& h) {
  py::dict d;
  d["kvm_api_version"] = h.kvm_api_version;
  d["kvm_module"] = h.kvm_module;
  d["host_kernel"] = h.host_kernel;
  d["cpu_model"] = h.cpu_model;
  py::dict caps;
  for (const HostCapability& c : h.capabilities) {
    py::dict one;
    one["value"] = c.value;
    one["required"] = c.required;
    caps[py::str(c.name)] = one;
  }
  d["capabilities"] = caps;
  return d;
}

py::dict BehaviourToDict(const HostBehaviour& b) {
  auto one = [](const ProbedBehaviour& p) {
    py::dict d;
    d["value"] = p.value ? py::object(py::bool_(*p.value)) : py::object(py::none());
    d["evidence"] = p.evidence;
    return d;
  };
  py::dict d;
  d["ring0_emulated"] = one(b.ring0_emulated);
  d["ring3_nm"] = one(b.ring3_nm);
  d["vmcall_in_kernel"] = one(b.vmcall_in_kernel);
  d["loop_insns"] = b.loop_insns;
  d["insn_emulation"] = b.insn_emulation ? py::object(py::int_(*b.insn_emulation)) : py::none();
  d["vmcall_rax"] = b.vmcall_rax ? py::object(py::int_(*b.vmcall_rax)) : py::none();
  d["vmcall_wait_ns"] = absl::ToInt64Nanoseconds(b.vmcall_wait);
  d["elapsed_ns"] = absl::ToInt64Nanoseconds(b.elapsed);
  d["runs"] = b.runs;
  return d;
}

std::vector<std::string> ToList(py::object v, const char* what) {
  if (py::isinstance<py::str>(v)) {
    std::vector<std::string> out;
    for (absl::string_view s : absl::StrSplit(v.cast<std::string>(), ' ', absl::SkipWhitespace()))
      out.emplace_back(s);
    return out;
  }
  try {
    return v.cast<std::vector<std::string>>();
  } catch (const py::cast_error&) {
    RaiseValueError(std::string(what) + " must be a str or a list of str");
  }
}

// Python-side helpers, defined in the module's namespace.
constexpr const char* kPythonHelpers = R"PY(
def to_dataframe(results):
    """One row per run and metric: a pandas DataFrame.

    `results` is a list of bench runs (minivmm.bench) or of plain results
    (Vm.run / minivmm.run). Columns: run, workload, workload_spec, backend,
    configuration, pvops, repetition, baseline, stop_reason, exit_code,
    metric, value. Metrics are the result's counts flattened with dots:
    exits.total, exits.by_reason.io, causes.if_clear.exits,
    hypercalls.set_if.ops, host_counters.<name>, reports.<key> (integer
    reports only), elapsed_ns; with several vCPUs also vcpuN.exits.total,
    vcpuN.causes.<cause>.exits and vcpuN.hypercalls.<name>.exits.
    """
    try:
        import pandas
    except ImportError as e:
        raise ImportError(
            "minivmm.to_dataframe needs pandas (Debian: apt-get install python3-pandas)"
        ) from e
    rows = []
    for index, item in enumerate(results):
        if "result" in item:
            result, meta = item["result"], item
        else:
            result, meta = item, {}
        base = {
            "run": meta.get("index", index),
            "workload": meta.get("workload", result.get("reports", {}).get("config.workload")),
            "workload_spec": meta.get("workload_spec"),
            "backend": meta.get("backend", result.get("reports", {}).get("config.backend")),
            "configuration": meta.get("configuration"),
            "pvops": meta.get("pvops", result.get("reports", {}).get("config.pvops")),
            "repetition": meta.get("repetition"),
            "baseline": meta.get("baseline", False),
            "stop_reason": result["stop_reason"],
            "exit_code": result["exit_code"],
        }
        for metric, value in _metrics(result):
            row = dict(base)
            row["metric"] = metric
            row["value"] = value
            rows.append(row)
    columns = ["run", "workload", "workload_spec", "backend", "configuration", "pvops",
               "repetition", "baseline", "stop_reason", "exit_code", "metric", "value"]
    return pandas.DataFrame(rows, columns=columns)


def _metrics(result):
    yield "elapsed_ns", result["elapsed_ns"]
    exits = result["exits"]
    yield "exits.total", exits["total"]
    for name, n in exits["by_reason"].items():
        yield "exits.by_reason." + name, n
    for group in ("pio_by_device", "mmio_by_device"):
        for name, n in exits[group].items():
            yield "exits.%s.%s" % (group, name), n
    for name, c in result["causes"].items():
        for k, n in c.items():
            yield "causes.%s.%s" % (name, k), n
    for name, c in result["hypercalls"]["calls"].items():
        for k in ("ops", "exits", "errors"):
            yield "hypercalls.%s.%s" % (name, k), c[k]
    for name, n in result["host_counters"].items():
        yield "host_counters." + name, n
    if len(exits["per_vcpu"]) > 1:
        for v in exits["per_vcpu"]:
            prefix = "vcpu%d." % v["vcpu"]
            yield prefix + "exits.total", v["total"]
            for name, c in v["causes"].items():
                yield prefix + "causes.%s.exits" % name, c["exits"]
            for name, c in v["hypercalls"].items():
                yield prefix + "hypercalls.%s.exits" % name, c["exits"]
    for key, v in result["reports"].items():
        if isinstance(v, int):
            yield "reports." + key, v


def run(**kwargs):
    """Vm(**kwargs).run(on_exit=...): create a VM, run it once, return the result dict."""
    on_exit = kwargs.pop("on_exit", None)
    return Vm(**kwargs).run(on_exit=on_exit)
)PY";

}  // namespace
}  // namespace minivmm::python

PYBIND11_MODULE(minivmm, m) {
  using namespace minivmm;
  using namespace minivmm::python;
  m.doc() = "minivmm: KVM mini hypervisor with exact exit accounting (docs/python.md)";
  m.attr("__version__") = MINIVMM_VERSION;

  py::class_<PyVm>(m, "Vm", R"doc(
A minivmm VM (include/minivmm/vm.h): created here, run once with run().

Vm(kernel=None, memory=64 MiB, backend=None, pvops=None, workload=None,
   cmdline=None, timer_hz=0, timeout=None, kvm_device="/dev/kvm", wasted=False,
   cpus=1)

backend, pvops and workload become the guest command line
"backend=B pvops=P workload=W CMDLINE", as `minivmm run` builds it.
wasted=True runs the wasted-exit analysis (`minivmm run --wasted`): the
record's "wasted" section, and "wasted"/"cancels" in each on_exit event.
cpus=N gives the VM N vCPUs (1 to 32, `minivmm run --cpus N`), each on a
thread of its own; the result has vcpu_count, stopped_by_vcpu, vcpus (how
each stopped) and exits.per_vcpu (each vCPU's counts).
Raises ValueError for bad arguments, FileNotFoundError for a missing kernel
or KVM device, PermissionError, RuntimeError for other library errors.)doc")
      .def(py::init([](py::object kernel, int64_t memory, py::object backend, py::object pvops,
                       py::object workload, py::object cmdline, int64_t timer_hz,
                       std::optional<double> timeout, std::string kvm_device, bool wasted,
                       int64_t cpus) {
             auto str = [](py::object o) {
               return o.is_none() ? std::string() : py::str(o).cast<std::string>();
             };
             PyVmOptions o;
             o.kernel = str(kernel);
             o.memory = memory;
             o.backend = str(backend);
             o.pvops = str(pvops);
             o.workload = str(workload);
             o.cmdline = str(cmdline);
             o.timer_hz = timer_hz;
             o.timeout = timeout;
             o.kvm_device = std::move(kvm_device);
             o.wasted = wasted;
             o.cpus = cpus;
             return std::make_unique<PyVm>(o);
           }),
           py::kw_only(), py::arg("kernel") = py::none(), py::arg("memory") = int64_t{64} << 20,
           py::arg("backend") = py::none(), py::arg("pvops") = py::none(),
           py::arg("workload") = py::none(), py::arg("cmdline") = py::none(),
           py::arg("timer_hz") = 0, py::arg("timeout") = py::none(),
           py::arg("kvm_device") = "/dev/kvm", py::arg("wasted") = false, py::arg("cpus") = 1)
      .def("run", &PyVm::Run, py::arg("on_exit") = py::none(), R"doc(
Runs the guest until it stops and returns the result as a dict. Releases the
GIL while the guest runs. Once per VM: a second call raises RuntimeError.

on_exit: optional callable, called with a dict per exit (sequence, reason,
address, is_write, hypercall (number or -1), args, result). Slow: every
exit takes the GIL and calls Python. An exception it raises stops the run
and propagates from run().)doc")
      .def("request_stop", &PyVm::RequestStop,
           "Asks a running run() (in another thread) to stop soon with stop_reason "
           "'stop requested'. Thread-safe.")
      .def_property_readonly("cmdline", [](const PyVm& v) { return v.config().cmdline; })
      .def_property_readonly("kernel", [](const PyVm& v) { return v.config().kernel_path; })
      .def_property_readonly("memory", [](const PyVm& v) { return v.config().memory_bytes; })
      .def_property_readonly("cpus", [](const PyVm& v) { return v.config().cpus; });

  m.def(
      "guest_cmdline",
      [](const std::string& backend, const std::string& pvops, const std::string& workload,
         const std::string& cmdline) {
        return cli::ComposeGuestCommandLine(backend, pvops, workload, cmdline);
      },
      py::kw_only(), py::arg("backend") = "", py::arg("pvops") = "", py::arg("workload") = "",
      py::arg("cmdline") = "",
      "The guest command line the arguments add up to, as `minivmm run` composes it.");
  m.def(
      "bench_configurations",
      [] {
        py::list out;
        for (const cli::BenchConfiguration& c : cli::BenchConfigurations()) {
          py::dict d;
          d["name"] = c.name;
          d["pvops"] = c.pvops;
          d["pv_only"] = c.pv_only;
          out.append(d);
        }
        return out;
      },
      "The pvops configurations `minivmm bench` runs, in its order.");
  m.def(
      "backends", [] { return cli::GuestBackends(); }, "The guest's backends.");
  m.def("default_kernel_path", &ModuleDefaultKernel,
        "The built-in guest this module boots when no kernel is given.");
  m.def(
      "bench",
      [](py::object workloads, py::object backends, int repeat, bool baselines, py::object kernel,
         int64_t memory, std::optional<double> timeout, int64_t cpus, py::object progress) {
        std::vector<std::string> w = ToList(workloads, "workloads");
        std::vector<std::string> b;
        if (py::isinstance<py::str>(backends) && backends.cast<std::string>() == "both")
          b = cli::GuestBackends();
        else
          b = ToList(backends, "backends");
        return Bench(w, b, repeat, baselines,
                     kernel.is_none() ? std::string() : kernel.cast<std::string>(), memory, timeout,
                     cpus, progress);
      },
      py::arg("workloads"), py::kw_only(), py::arg("backends") = "both", py::arg("repeat") = 1,
      py::arg("baselines") = false, py::arg("kernel") = py::none(),
      py::arg("memory") = int64_t{64} << 20, py::arg("timeout") = 120.0, py::arg("cpus") = 1,
      py::arg("progress") = py::none(), R"doc(
Runs `minivmm bench`'s matrix: every workload x backend x configuration
(bench_configurations(): all naive, each op optimized alone, pte_flags
patched, all optimized),
`repeat` times, forwards on even repetitions and backwards on odd ones, and
returns the runs as a list of dicts: index, workload, workload_spec,
baseline, backend, configuration, pvops, repetition, result (as Vm.run).
workloads: a list like ["ctx,rounds=50", "irq"] or a str of such words
("ctx:rounds=50 irq"). backends: "pv", "native", "both" or a list.
baselines=True adds one workload=none run per backend and configuration
first (as the CLI, which subtracts them). cpus=N runs every VM with N vCPUs
(`minivmm bench --cpus N`). progress(i, n, run) is called after each run.)doc");
  m.def(
      "probe_host",
      [](bool behaviour, const std::string& kvm_device) {
        absl::StatusOr<HostInfo> host;
        std::optional<absl::StatusOr<HostBehaviour>> b;
        {
          py::gil_scoped_release release;
          host = ProbeHost(kvm_device);
          if (host.ok() && behaviour) b = ProbeHostBehaviour(ModuleDefaultKernel(), kvm_device);
        }
        if (!host.ok()) Raise(host.status());
        py::dict d = HostToDict(*host);
        if (b) {
          if (!b->ok()) Raise(b->status());
          d["behaviour"] = BehaviourToDict(**b);
        } else {
          d["behaviour"] = py::none();
        }
        return d;
      },
      py::kw_only(), py::arg("behaviour") = false, py::arg("kvm_device") = "/dev/kvm",
      "ProbeHost(), and with behaviour=True ProbeHostBehaviour() (a short guest run).");
  py::exec(kPythonHelpers, m.attr("__dict__"));
}
