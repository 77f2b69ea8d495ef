// import minivmm: the public C++ API (docs/API.md) as a Python module
// (docs/python.md). A run returns the CLI's run record and a bench the
// CLI's bench record (both built by the CLI's own code, minivmm_cli_shared),
// converted once from JSON to plain Python objects. The GIL is released
// while a guest runs; errors are exceptions carrying the library's message.
#include <dlfcn.h>
#include <pybind11/eval.h>
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "cli/bench_plan.h"
#include "cli/exit_timeline.h"
#include "cli/experiment.h"
#include "cli/file_digest.h"
#include "cli/probe_cache.h"
#include "cli/report_value.h"
#include "cli/run_record.h"
#include "cli/site_names.h"
#include "cli/sites_record.h"
#include "fmt/format.h"
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

// JSON (a run or bench record) -> plain Python objects: None, bool, int,
// float, str, list, dict.
py::object ToPython(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      return py::none();
    case nlohmann::json::value_t::boolean:
      return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return py::int_(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return py::int_(j.get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return py::float_(j.get<double>());
    case nlohmann::json::value_t::string:
      return py::str(j.get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      py::list out;
      for (const nlohmann::json& v : j) out.append(ToPython(v));
      return out;
    }
    case nlohmann::json::value_t::object: {
      py::dict out;
      for (const auto& [key, v] : j.items()) out[py::str(key)] = ToPython(v);
      return out;
    }
    case nlohmann::json::value_t::binary:
      break;
  }
  return py::none();
}

// `site`: the exit's site as the trace gives it (cli::SiteSummary), or null
// for a run without sites.
py::dict EventToDict(const ExitEvent& e, const nlohmann::json* site) {
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
  for (const auto& [key, value] : e.reports)
    reports[py::str(key)] = ToPython(cli::ReportValueJson(value));
  d["reports"] = reports;
  d["site"] = site != nullptr ? ToPython(*site) : py::object(py::none());
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
  std::string machine = "builtin";
  std::string initrd;
  bool pit = false;
  bool pc_testdev = false;
  bool hyperv = false;
  bool hyperv_testdev = false;
  bool split_irqchip = false;
  bool intel_iommu = false;
  bool edu = false;
  std::string cpu_features, cpu_vendor;
  bool cpu_enforce = false;
  bool kernel_exits = false;
  bool kernel_exit_events = false;
  std::string kernel;
  int64_t memory = 64ll << 20;
  std::string backend, pvops, workload, cmdline;
  int64_t timer_hz = 0;
  std::optional<double> timeout;
  std::string kvm_device = "/dev/kvm";
  bool wasted = false;
  bool sites = false;
  int64_t cpus = 1;
  bool probe_host = true;  // the host probe's answers in provenance.host
  std::optional<int64_t> recent_exits;  // None: the library's default
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
  const std::optional<MachineKind> machine = MachineNamed(o.machine);
  if (!machine) {
    std::string names;
    for (const MachineInfo& m : kMachines) names += (names.empty() ? "" : ", ") + std::string(m.name);
    RaiseValueError("unknown machine '" + o.machine + "' (" + names + ")");
  }
  config.machine = *machine;
  config.initrd_path = o.initrd;
  config.pit = o.pit;
  config.pc_testdev = o.pc_testdev;
  config.hyperv = o.hyperv;
  config.hyperv_testdev = o.hyperv_testdev;
  config.split_irqchip = o.split_irqchip;
  config.intel_iommu = o.intel_iommu;
  config.edu = o.edu;
  absl::StatusOr<std::vector<CpuFeatureChange>> features = ParseCpuFeatures(o.cpu_features);
  if (!features.ok()) RaiseValueError(std::string(features.status().message()));
  config.cpu_features = *std::move(features);
  if (!o.cpu_vendor.empty()) {
    if (absl::Status vendor = CheckCpuVendor(o.cpu_vendor); !vendor.ok())
      RaiseValueError(std::string(vendor.message()));
  }
  config.cpu_vendor = o.cpu_vendor;
  config.cpu_enforce = o.cpu_enforce;
  config.kernel_exits = o.kernel_exits;
  if (o.kernel_exit_events && !o.kernel_exits)
    RaiseValueError("kernel_exit_events needs kernel_exits=True");
  config.kernel_exit_events = o.kernel_exit_events;
  if (config.machine != MachineKind::kBuiltin &&
      (!o.backend.empty() || !o.pvops.empty() || !o.workload.empty()))
    RaiseValueError("backend, pvops and workload are the built-in guest's; the " + o.machine +
                    " machine's guest takes cmdline");
  config.kernel_path =
      o.kernel.empty() && config.machine == MachineKind::kBuiltin ? ModuleDefaultKernel() : o.kernel;
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
  config.record_sites = o.sites;
  if (o.recent_exits) {
    if (*o.recent_exits < 0 || *o.recent_exits > kMaxRecentExits)
      RaiseValueError("recent_exits must be in [0, " + std::to_string(kMaxRecentExits) +
                      "] or None, got " + std::to_string(*o.recent_exits));
    config.recent_exits = static_cast<uint32_t>(*o.recent_exits);
  }
  config.console = console;
  return config;
}

class PyVm {
 public:
  explicit PyVm(const PyVmOptions& o) : probe_host_(o.probe_host) {
    config_ = MakeConfig(o, &console_);
    absl::StatusOr<std::unique_ptr<Vm>> vm;
    {
      py::gil_scoped_release release;
      vm = Vm::Create(config_);
    }
    if (!vm.ok()) Raise(vm.status());
    vm_ = std::move(*vm);
  }

  py::object Run(py::object on_exit) {
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
    const bool callback = !on_exit.is_none();
    if (callback && !PyCallable_Check(on_exit.ptr())) {
      PyErr_SetString(PyExc_TypeError, "on_exit must be callable or None");
      throw py::error_already_set();
    }
    // The record's exits over time, as `minivmm run --sites --json` keeps it.
    std::optional<cli::ExitTimeline> timeline;
    if (config_.record_sites) timeline.emplace(ExitClockNs());
    // Each event's site, named once per distinct site, as the trace does.
    std::unique_ptr<cli::SiteNames> names;
    absl::flat_hash_map<ExitSite, nlohmann::json> named;
    if (callback && config_.record_sites)
      names = std::make_unique<cli::SiteNames>(config_.kernel_path);
    if (callback || timeline) {
      Vm* vm = vm_.get();
      vm_->SetExitObserver(
          [&on_exit, &callback_error, &timeline, &names, &named, callback, vm](const ExitEvent& e) {
            if (timeline) timeline->Add(e);
            if (!callback || callback_error) return;  // stopping: no more calls
            const nlohmann::json* site = nullptr;
            if (e.site != nullptr && names != nullptr) {
              auto [at, inserted] = named.try_emplace(*e.site);
              if (inserted) at->second = cli::SiteSummary(*e.site, *names);
              site = &at->second;
            }
            py::gil_scoped_acquire acquire;
            try {
              on_exit(EventToDict(e, site));
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
    if (callback || timeline) vm_->SetExitObserver(nullptr);
    if (callback_error) std::rethrow_exception(callback_error);
    if (!result.ok()) Raise(result.status());
    // The record as `minivmm run --json` makes it: the host, with the host
    // probe unless the caller opted out, and the guest image's digest.
    nlohmann::json record;
    {
      py::gil_scoped_release release;
      std::optional<HostInfo> host;
      if (absl::StatusOr<HostInfo> probed = ProbeHost(config_.kvm_device); probed.ok()) {
        host = *std::move(probed);
        if (probe_host_)
          cli::CachedProbeBehaviourInto(*host, config_.kvm_device, /*reprobe=*/false,
                                        ModuleDefaultKernel());
      }
      record = cli::MakeRunRecord(config_, *result, host ? &*host : nullptr,
                                  cli::FileSha256(config_.kernel_path));
      cli::AddSites(record, *result, config_.kernel_path);
      if (timeline) record["timeline"] = timeline->Record();
    }
    // What the record does not hold, as attributes (docs/python.md).
    py::module_ module = py::module_::import("minivmm");
    py::object out = module.attr("RunRecord")(ToPython(record));
    if (record.contains("sites")) out.attr("sites") = module.attr("sites")(out);
    const std::string failure = cli::RunFailure(*result);
    out.attr("ok") = failure.empty();
    out.attr("failure") = failure;
    out.attr("status") = cli::ExitStatusFor(*result, SIGINT);  // as `minivmm run` would exit
    out.attr("console") = py::bytes(console_.Take()).attr("decode")("utf-8", "replace");
    out.attr("console_tail") = result->console_tail;
    if (config_.kernel_exit_events) {
      // Every exit KVM's tracepoint saw, one dict each, in time order.
      py::list events;
      for (const KernelExitEvent& e : result->kernel_exit_events) {
        py::dict event;
        event["vcpu"] = e.vcpu;
        event["time_ns"] = e.time_ns;
        event["reason"] = result->kernel_exit_reasons.at(e.reason);
        event["rip"] = e.rip;
        event["to_vmm"] = e.to_vmm;
        // With sites=True where the host gives stacks: the exit's stack.
        if (e.stack != 0 && e.stack <= result->kernel_exit_stack_list.size())
          event["stack"] = result->kernel_exit_stack_list[e.stack - 1];
        events.append(std::move(event));
      }
      out.attr("kernel_exit_events") = events;
    }
    return out;
  }

  void RequestStop() { vm_->RequestStop(); }
  const VmConfig& config() const { return config_; }

 private:
  StringConsole console_;
  VmConfig config_;
  std::unique_ptr<Vm> vm_;
  bool probe_host_;
  bool running_ = false;
};

// minivmm.bench: `minivmm bench`'s own plan and execution
// (cli/bench_plan.h), and its record. `workloads` and `backend` are the
// CLI's --workloads and --backend values.
py::object Bench(const std::string& workloads, const std::string& backend, int repeat,
                 const std::string& kernel, int64_t memory, std::optional<double> timeout,
                 int64_t cpus, bool probe_host, bool guest_counters, py::object progress,
                 const std::string& configurations) {
  if (!kernel.empty() && guest_counters)
    RaiseValueError("guest_counters applies to the built-in guest, not to kernel=");
  if (repeat < 1 || repeat > 1000)
    RaiseValueError("repeat must be between 1 and 1000, got " + std::to_string(repeat));
  if (backend != "both") {
    const auto& backends = cli::GuestBackends();
    if (std::find(backends.begin(), backends.end(), backend) == backends.end())
      RaiseValueError("unknown backend '" + backend + "' (pv, native or both)");
  }
  if (memory <= 0)
    RaiseValueError("memory must be a positive number of bytes, got " + std::to_string(memory));
  if (cpus < 1 || cpus > MVMM_MAX_CPUS)
    RaiseValueError("cpus must be between 1 and " + std::to_string(MVMM_MAX_CPUS) + ", got " +
                    std::to_string(cpus));
  if (timeout && (!(*timeout > 0) || std::isinf(*timeout)))
    RaiseValueError("timeout must be a positive number of seconds or None");
  cli::BenchSettings settings{
      workloads,
      backend,
      repeat,
      static_cast<uint64_t>(memory),
      timeout ? *timeout : 0,
      static_cast<uint32_t>(cpus),
      kernel,
      fmt::format(
          "minivmm.bench(\"{}\", backends=\"{}\", repeat={}, cpus={}{})", workloads, backend,
          repeat, cpus,
          configurations.empty() ? "" : fmt::format(", configurations=\"{}\"", configurations)),
      guest_counters,
      configurations};
  cli::BenchMatrix matrix(settings);
  if (matrix.workloads().empty()) RaiseValueError("workloads is empty");
  if (!matrix.configuration_status().ok())
    RaiseValueError(std::string(matrix.configuration_status().message()));
  if (absl::Status s = matrix.CheckGuestCommandLines(); !s.ok()) Raise(s);
  cli::BenchHooks hooks;
  // Ctrl-C (a pending KeyboardInterrupt) ends the bench between runs.
  hooks.stop_signal = [] {
    py::gil_scoped_acquire acquire;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    return 0;
  };
  hooks.error = [](const std::string& line) { fmt::print(stderr, "minivmm.bench: {}\n", line); };
  if (!progress.is_none()) {
    hooks.progress = [&](size_t i, size_t n, const cli::PlannedRun&, absl::Duration) {
      py::gil_scoped_acquire acquire;
      progress(i, n, ToPython(matrix.RunEntry(i - 1)));
    };
  }
  nlohmann::json record;
  {
    py::gil_scoped_release release;
    matrix.Prepare(probe_host, ModuleDefaultKernel());
    matrix.Run(hooks);
    std::vector<cli::ConfigResult> results = matrix.Aggregate();
    matrix.ComputeSeeds(results);
    record = matrix.Record(results);
  }
  return ToPython(record);
}

// A str as it is, or a list of str joined with `sep`: `bench`'s workloads
// and backends in the CLI's syntax.
std::string Joined(py::object v, const char* sep, const char* what) {
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  try {
    return absl::StrJoin(v.cast<std::vector<std::string>>(), sep);
  } catch (const py::cast_error&) {
    RaiseValueError(std::string(what) + " must be a str or a list of str");
  }
}

// Python-side helpers, defined in the module's namespace.
constexpr const char* kPythonHelpers = R"PY(
class RunRecord(dict):
    """A run record (docs/run-record.md) as a dict: exactly the keys and
    values of `minivmm run --json`. Attributes hold what a record does not:
    ok (the guest shut down with 0 and no self-check failed), failure (why
    not, or ""), status (the exit status `minivmm run` would return),
    console (the guest's output, up to 1 MiB) and console_tail (its last
    lines); with sites=True, sites (minivmm.sites(record)), else None;
    with kernel_exit_events=True, kernel_exit_events (every exit KVM's
    tracepoint saw, in time order: dicts of vcpu, time_ns (CLOCK_MONOTONIC),
    reason, rip and to_vmm, and with sites=True, where the host gives them
    (the record's kernel_exits.stacks), stack: the exit's frame-pointer
    stack, the RIP first), else None."""

    sites = None
    kernel_exit_events = None


def sites(record):
    """The exit sites of a run record (its "sites" section, docs/sites.md)
    as a list of dicts, one per distinct (cause, stack), most exits first:
    cause, reason, hypercall (or None), function, file, line (the
    innermost source frame; "" / None where the ELF names nothing), rip
    (int), exits, wasted (its wasted exits, None without wasted=True),
    batchable (its exits a batch could have carried),
    user (a CPL-3 exit), stack (every frame's name, innermost first: the
    function, else the raw address) and by_vcpu. For every cause, the
    sites' exits sum to that cause's exits. A record without sites raises
    KeyError."""
    out = []
    for s in record["sites"]["stacks"]:
        frames = s["frames"]
        leaf = frames[0] if frames else {}
        wasted = s.get("wasted")
        out.append({
            "cause": s["cause"],
            "reason": s["reason"],
            "hypercall": s.get("hypercall"),
            "function": leaf.get("function", ""),
            "file": leaf.get("file", ""),
            "line": leaf.get("line"),
            "rip": int(leaf["pc"], 16) if leaf else None,
            "exits": s["exits"],
            "wasted": sum(wasted.values()) if wasted is not None else None,
            "batchable": s["batchable"],
            "user": s.get("user", False),
            "stack": [f.get("function") or f["pc"] for f in frames],
            "by_vcpu": s["by_vcpu"],
        })
    return out


def sites_dataframe(record):
    """minivmm.sites(record) as a pandas DataFrame, one row per site; the
    stack column is its frames joined root first with ";", as a folded
    stack (docs/sites.md) without the cause."""
    pandas = _pandas("sites_dataframe")
    rows = []
    for s in sites(record):
        row = dict(s)
        row["stack"] = ";".join(reversed(s["stack"]))
        rows.append(row)
    columns = ["cause", "reason", "hypercall", "function", "file", "line", "rip", "exits",
               "wasted", "user", "stack", "by_vcpu"]
    return pandas.DataFrame(rows, columns=columns)


def _pandas(what):
    try:
        import pandas
    except ImportError as e:
        raise ImportError(
            "minivmm.%s needs pandas (Debian: apt-get install python3-pandas)" % what
        ) from e
    return pandas


def to_dataframe(results):
    """One row per run and metric: a pandas DataFrame.

    `results` is a bench record (minivmm.bench), a list of its "runs"
    entries, or a list of run records (Vm.run / minivmm.run). Columns: run,
    workload, workload_spec, backend, configuration, pvops, repetition,
    baseline, stop_reason, exit_code, metric, value. Metrics are the
    record's counts flattened with dots: exits.total, exits.by_reason.io,
    causes.if_clear.exits, hypercalls.set_if.ops, host_counters.<name>,
    reports.<key> (integer reports only), elapsed_ns; with several vCPUs
    also vcpuN.exits.total, vcpuN.causes.<cause>.exits and
    vcpuN.hypercalls.<name>.exits.
    """
    pandas = _pandas("to_dataframe")
    if isinstance(results, dict) and results.get("schema") == "minivmm.bench":
        results = results["runs"]
    rows = []
    for index, item in enumerate(results):
        if "record" in item:
            record, meta = item["record"], item
        else:
            record, meta = item, {}
        reports = record["guest"]["reports"]
        base = {
            "run": meta.get("index", index),
            "workload": meta.get("workload", reports.get("config.workload")),
            "workload_spec": meta.get("workload_spec"),
            "backend": meta.get("backend", reports.get("config.backend")),
            "configuration": meta.get("configuration"),
            "pvops": meta.get("pvops", reports.get("config.pvops")),
            "repetition": meta.get("repetition"),
            "baseline": meta.get("baseline", False),
            "stop_reason": record["result"]["stop_reason"],
            "exit_code": record["result"]["exit_code"],
        }
        for metric, value in _metrics(record):
            row = dict(base)
            row["metric"] = metric
            row["value"] = value
            rows.append(row)
    columns = ["run", "workload", "workload_spec", "backend", "configuration", "pvops",
               "repetition", "baseline", "stop_reason", "exit_code", "metric", "value"]
    return pandas.DataFrame(rows, columns=columns)


def _metrics(record):
    yield "elapsed_ns", record["result"]["elapsed_ns"]
    exits = record["exits"]
    yield "exits.total", exits["total"]
    for name, n in exits["by_reason"].items():
        yield "exits.by_reason." + name, n
    for group in ("pio_by_device", "mmio_by_device"):
        for name, n in exits[group].items():
            yield "exits.%s.%s" % (group, name), n
    for name, c in record["causes"]["causes"].items():
        for k, n in c.items():
            yield "causes.%s.%s" % (name, k), n
    for name, c in record["hypercalls"]["calls"].items():
        for k in ("ops", "exits", "errors"):
            yield "hypercalls.%s.%s" % (name, k), c[k]
    for name, n in record["host_counters"]["deltas"].items():
        yield "host_counters." + name, n
    if len(exits["per_vcpu"]) > 1:
        for v in exits["per_vcpu"]:
            prefix = "vcpu%d." % v["vcpu"]
            yield prefix + "exits.total", v["total"]
            for name, c in v["causes"].items():
                yield prefix + "causes.%s.exits" % name, c["exits"]
            for name, c in v["hypercalls"].items():
                yield prefix + "hypercalls.%s.exits" % name, c["exits"]
    for key, v in record["guest"]["reports"].items():
        if isinstance(v, int) and not isinstance(v, bool):
            yield "reports." + key, v


def run(**kwargs):
    """Vm(**kwargs).run(on_exit=...): create a VM, run it once, return its run record."""
    on_exit = kwargs.pop("on_exit", None)
    return Vm(**kwargs).run(on_exit=on_exit)
)PY";

}  // namespace
}  // namespace minivmm::python

namespace {

using namespace minivmm;
using namespace minivmm::python;

// minivmm.Vm: one VM, run once.
void DefineVm(py::module_& m) {
  py::class_<PyVm>(m, "Vm", R"doc(
A minivmm VM (include/minivmm/vm.h): created here, run once with run().

Vm(kernel=None, memory=64 MiB, backend=None, pvops=None, workload=None,
   cmdline=None, timer_hz=0, timeout=None, kvm_device="/dev/kvm", wasted=False,
   sites=False, cpus=1, probe_host=True, recent_exits=None, machine="builtin",
   initrd=None, pit=False, pc_testdev=False, cpu_features=None, cpu_vendor=None,
   cpu_enforce=False, kernel_exits=False, hyperv=False, kernel_exit_events=False,
   hyperv_testdev=False, intel_iommu=False, edu=False, split_irqchip=False)

backend, pvops and workload become the guest command line
"backend=B pvops=P workload=W CMDLINE", as `minivmm run` builds it.
wasted=True runs the wasted-exit analysis (`minivmm run --wasted`): the
record's "wasted" section, and "wasted"/"cancels" in each on_exit event.
sites=True records where exits come from (`minivmm run --sites`,
docs/sites.md): the record's "sites" section and the RunRecord's sites
(minivmm.sites()).
cpus=N gives the VM N vCPUs (1 to 32, `minivmm run --cpus N`), each on a
thread of its own; the record has result.vcpus (how each stopped) and
exits.per_vcpu (each vCPU's counts). probe_host=False skips the host probe
(a short second guest run after run()): the record's provenance.host
answers are then null (not measured), as in the CLI's record without one.
machine="pc" runs a Multiboot-1 kernel on the PC machine (`minivmm run
--machine pc`, docs/machines.md), with initrd=FILE as its module, pit=True
for KVM's PIT, pc_testdev=True for QEMU's pc-testdev and hyperv=True for
Hyper-V's enlightenments (`minivmm run --hyperv`), with
hyperv_testdev=True for QEMU's hyperv-testdev too; cmdline is then the
guest's whole command line after the image path. machine="q35" is that
machine with QEMU's q35 chipset (`minivmm run --machine q35`; KVM's full
irqchip, as pc's), with edu=True for QEMU's edu PCI device,
split_irqchip=True for KVM's split irqchip with minivmm's IOAPIC instead, and
with it intel_iommu=True for an Intel IOMMU.
cpu_features="+x2apic,-pcid" gives the guest CPUID bits or takes them away
and cpu_vendor="GenuineIntel" replaces CPUID's vendor string (`minivmm run
--cpu-features`, `--cpu-vendor`; include/minivmm/cpu_features.h lists the
names), on either machine; a bit asked for that cannot be given is left
clear with a warning in the record's result.notes, or, with cpu_enforce=True,
refused.
kernel_exits=True reads every exit from KVM's kvm:kvm_exit tracepoint
(`minivmm run --kernel-exits`): the record's "kernel_exits" section; with
kernel_exit_events=True too, the RunRecord's kernel_exit_events lists every
one of them (what `minivmm run --kernel-exits --trace` writes); with
sites=True too, each exit's frame-pointer stack, read at the exit by a BPF
program on kvm_amd (the section's "stacks", "by_stack" and "sites"; where
the host does not allow it, the record's result.notes says why).
recent_exits=N keeps each vCPU's last N exits (`minivmm run --recent-exits
N`, 0 to 4096): the record's result.recent_exits; None: 16 in a debug
build of the module, 0 in a release build (docs/design.md "Recent exits").
Raises ValueError for bad arguments, FileNotFoundError for a missing kernel
or KVM device, PermissionError, RuntimeError for other library errors.)doc")
      .def(py::init([](py::object kernel, int64_t memory, py::object backend, py::object pvops,
                       py::object workload, py::object cmdline, int64_t timer_hz,
                       std::optional<double> timeout, std::string kvm_device, bool wasted,
                       bool sites, int64_t cpus, bool probe_host,
                       std::optional<int64_t> recent_exits, std::string machine, py::object initrd,
                       bool pit, bool pc_testdev, py::object cpu_features, py::object cpu_vendor,
                       bool cpu_enforce, bool kernel_exits, bool hyperv, bool kernel_exit_events,
                       bool hyperv_testdev, bool intel_iommu, bool edu, bool split_irqchip) {
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
             o.sites = sites;
             o.cpus = cpus;
             o.probe_host = probe_host;
             o.recent_exits = recent_exits;
             o.machine = std::move(machine);
             o.initrd = str(initrd);
             o.pit = pit;
             o.pc_testdev = pc_testdev;
             o.cpu_features = str(cpu_features);
             o.cpu_vendor = str(cpu_vendor);
             o.cpu_enforce = cpu_enforce;
             o.kernel_exits = kernel_exits;
             o.hyperv = hyperv;
             o.kernel_exit_events = kernel_exit_events;
             o.hyperv_testdev = hyperv_testdev;
             o.intel_iommu = intel_iommu;
             o.edu = edu;
             o.split_irqchip = split_irqchip;
             return std::make_unique<PyVm>(o);
           }),
           py::kw_only(), py::arg("kernel") = py::none(), py::arg("memory") = int64_t{64} << 20,
           py::arg("backend") = py::none(), py::arg("pvops") = py::none(),
           py::arg("workload") = py::none(), py::arg("cmdline") = py::none(),
           py::arg("timer_hz") = 0, py::arg("timeout") = py::none(),
           py::arg("kvm_device") = "/dev/kvm", py::arg("wasted") = false, py::arg("sites") = false,
           py::arg("cpus") = 1, py::arg("probe_host") = true, py::arg("recent_exits") = py::none(),
           py::arg("machine") = "builtin", py::arg("initrd") = py::none(), py::arg("pit") = false,
           py::arg("pc_testdev") = false, py::arg("cpu_features") = py::none(),
           py::arg("cpu_vendor") = py::none(), py::arg("cpu_enforce") = false,
           py::arg("kernel_exits") = false, py::arg("hyperv") = false,
           py::arg("kernel_exit_events") = false, py::arg("hyperv_testdev") = false,
           py::arg("intel_iommu") = false, py::arg("edu") = false, py::arg("split_irqchip") = false)
      .def("run", &PyVm::Run, py::arg("on_exit") = py::none(), R"doc(
Runs the guest until it stops and returns its run record (`minivmm run
--json`, docs/run-record.md) as a RunRecord: a dict, with the attributes ok,
failure, status, console and console_tail. Releases the GIL while the guest
runs. Once per VM: a second call raises RuntimeError.

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
}

// What the CLI composes and lists: the guest command line, the bench's
// configurations, the backends, the built-in guest.
void DefineLists(py::module_& m) {
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
  m.def(
      "causes",
      [] {
        py::list out;
        for (int c = 0; c < static_cast<int>(Cause::kCount); ++c)
          out.append(std::string(CauseName(static_cast<Cause>(c))));
        return out;
      },
      "The exit causes, in MINIVMM_CAUSE_LIST's order (the exit table's).");
  m.def("default_kernel_path", &ModuleDefaultKernel,
        "The built-in guest this module boots when no kernel is given.");
}

// minivmm.bench(): the CLI's bench plan.
void DefineBench(py::module_& m) {
  m.def(
      "bench",
      [](py::object workloads, py::object backends, int repeat, py::object kernel, int64_t memory,
         std::optional<double> timeout, int64_t cpus, bool probe_host, bool guest_counters,
         py::object progress, py::object configurations) {
        std::string backend = Joined(backends, ",", "backends");
        if (backend == "pv,native") backend = "both";
        return Bench(Joined(workloads, ",", "workloads"), backend, repeat,
                     kernel.is_none() ? std::string() : kernel.cast<std::string>(), memory, timeout,
                     cpus, probe_host, guest_counters, progress,
                     configurations.is_none() ? std::string()
                                              : Joined(configurations, ",", "configurations"));
      },
      py::arg("workloads"), py::kw_only(), py::arg("backends") = "both", py::arg("repeat") = 1,
      py::arg("kernel") = py::none(), py::arg("memory") = int64_t{64} << 20,
      py::arg("timeout") = 120.0, py::arg("cpus") = 1, py::arg("probe_host") = true,
      py::arg("guest_counters") = false, py::arg("progress") = py::none(),
      py::arg("configurations") = py::none(), R"doc(
Runs `minivmm bench`: the CLI's own plan and code (cli/bench_plan.h) and
returns its bench record (`minivmm bench --json`, docs/run-record.md): the
exit-cost runs, one baseline (workload=none) per backend and configuration,
then `repeat` repetitions of every workload x backend x configuration,
forwards on even repetitions and backwards on odd ones; "results" (median,
range and spread of every metric per configuration), "seeds" and "runs"
(each with its run record).
workloads: `--workloads`, e.g. "ctx:rounds=50,irq", or a list of such
items (["ctx:rounds=50", "irq"]). backends: "pv", "native" or "both".
timeout: seconds per run, None for none. probe_host=False skips the host
probe (provenance.host's answers are then null: not measured).
guest_counters: time the built-in guest that counts its own events (as
`--guest-counters on`); by default the uncounted one, as the CLI's bench.
progress(i, n, run) is called after each run with its entry of "runs".
configurations: `--configurations`, the names of bench_configurations() to
run, as "sp0,xen+tls" or a list; None for all. naive always runs, and xen
with a xen+<op>: each is compared with its reference.)doc");
}

// minivmm.probe_host(): the host description and probe.
void DefineProbe(py::module_& m) {
  m.def(
      "probe_host",
      [](bool behaviour, const std::string& kvm_device) {
        absl::StatusOr<HostInfo> host;
        {
          py::gil_scoped_release release;
          host = ProbeHost(kvm_device);
          if (host.ok() && behaviour)
            cli::CachedProbeBehaviourInto(*host, kvm_device, /*reprobe=*/false,
                                          ModuleDefaultKernel());
        }
        if (!host.ok()) Raise(host.status());
        return ToPython(cli::HostRecord(*host));
      },
      py::kw_only(), py::arg("behaviour") = false, py::arg("kvm_device") = "/dev/kvm",
      "ProbeHost(), and with behaviour=True the host probe (a short guest run), in the run "
      "record's provenance.host form.");
}

}  // namespace

PYBIND11_MODULE(minivmm, m) {
  m.doc() = "minivmm: KVM mini hypervisor with exact exit accounting (docs/python.md)";
  m.attr("__version__") = MINIVMM_VERSION;
  DefineVm(m);
  DefineLists(m);
  DefineBench(m);
  DefineProbe(m);
  py::exec(kPythonHelpers, m.attr("__dict__"));
}
