#include "lib/cmdline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

namespace guest {
namespace {

struct Parsed {
  bool ok;
  Config config;
  std::string error;
};

Parsed Parse(const char* line) {
  Parsed p;
  char storage[256];
  TextBuf err(storage, sizeof(storage));
  p.ok = ParseCmdline(StrView(line), &p.config, &err);
  p.error.assign(err.data(), err.size());
  return p;
}

// Every op's name, in the list's order (lib/pvop_list.h), as the parser's
// messages list them: "a|b|c".
std::string AllOpNames() {
  std::string names;
#define CMDLINE_TEST_OP_NAME_(id, name, ...) \
  names += names.empty() ? "" : "|";         \
  names += name;
  GUEST_PVOP_LIST(CMDLINE_TEST_OP_NAME_)
#undef CMDLINE_TEST_OP_NAME_
  return names;
}

// Every workload's name, in the list's order (lib/workload_list.h): "a|b|c".
std::string AllWorkloadNames() {
  std::string names;
  for (const WorkloadSpec* w = WorkloadTable(); w->name != nullptr; ++w)
    names += (names.empty() ? "" : "|") + std::string(w->name);
  return names;
}

const WorkloadSpec& Workload(const char* name) {
  const WorkloadSpec* w = FindWorkload(StrView(name));
  EXPECT_NE(w, nullptr) << name;
  return *w;
}

// A workload's parameter names, in its list's order: "a|b|c".
std::string ParamNames(const char* workload) {
  const WorkloadSpec& w = Workload(workload);
  std::string names;
  for (int i = 0; i < w.param_count; ++i)
    names += (names.empty() ? "" : "|") + std::string(w.params[i].name);
  return names;
}

// What the parser's message says `workload`'s parameter `name` takes:
// "(integer MIN..MAX)" or "(a|b|c)".
std::string Allowed(const char* workload, const char* name) {
  const WorkloadSpec& w = Workload(workload);
  for (int i = 0; i < w.param_count; ++i) {
    const ParamSpec& p = w.params[i];
    if (std::string(p.name) != name) continue;
    if (p.choices != nullptr) return std::string("(") + p.choices + ")";
    return "(integer " + std::to_string(p.min) + ".." + std::to_string(p.max) + ")";
  }
  ADD_FAILURE() << workload << " has no parameter " << name;
  return "";
}

// config.workload.<param>=<value> for every parameter of `workload`: the
// value given in `set` ({name, spelling}), else its default's spelling.
std::string WorkloadReport(const char* workload, const std::map<std::string, std::string>& set) {
  const WorkloadSpec& w = Workload(workload);
  std::string report = std::string("config.workload=") + workload + "\n";
  for (int i = 0; i < w.param_count; ++i) {
    const ParamSpec& p = w.params[i];
    std::string value;
    if (auto it = set.find(p.name); it != set.end()) {
      value = it->second;
    } else if (p.choices != nullptr) {
      std::string choices = p.choices;
      for (uint64_t k = 0; k < p.default_value; ++k) choices.erase(0, choices.find('|') + 1);
      value = choices.substr(0, choices.find('|'));
    } else {
      value = std::to_string(p.default_value);
    }
    report += std::string("config.workload.") + p.name + "=" + value + "\n";
  }
  return report;
}

// The spelling of `variant` among `choices`: the first word of the choices
// that means it.
std::string SpellingOf(const std::string& choices, Variant variant) {
  for (size_t at = 0; at <= choices.size();) {
    const size_t end = std::min(choices.find('|', at), choices.size());
    const std::string word = choices.substr(at, end - at);
#define CMDLINE_TEST_WORD_(spelling, v) \
  if (word == spelling && Variant::v == variant) return word;
    GUEST_VARIANT_WORD_LIST(CMDLINE_TEST_WORD_)
#undef CMDLINE_TEST_WORD_
    at = end + 1;
  }
  return "?";
}

// config.pvops.<op>=<its naive spelling> for every op the all-op item
// `naive` sets (the first of its choices) and its default for the others,
// but batch, which is `on`: what pvops=naive,batch:on reports.
std::string NaiveOpsWithBatchOnReport() {
  std::string report;
#define CMDLINE_TEST_OP_LINE_(id, name, choices, def, xen, preset, ...)                \
  report += std::string("config.pvops.") + name + "=" +                                \
            (std::string(name) == "batch" ? std::string("on")                          \
             : preset ? std::string(choices).substr(0, std::string(choices).find('|')) \
                      : SpellingOf(choices, Variant::def)) +                           \
            "\n";
  GUEST_PVOP_LIST(CMDLINE_TEST_OP_LINE_)
#undef CMDLINE_TEST_OP_LINE_
  return report;
}

std::string Report(const Config& c) {
  char storage[2048];
  TextBuf out(storage, sizeof(storage));
  AppendConfigReport(c, &out);
  return std::string(out.data(), out.size());
}

TEST(CmdlineTest, EmptyLineGivesDefaults) {
  Parsed p = Parse("");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.config.backend, Backend::kPv);
  EXPECT_STREQ(p.config.workload.spec->name, "none");
  for (int i = 0; i < kPvSeedOpCount; ++i) EXPECT_EQ(p.config.variant[i], Variant::kOptimized);
  EXPECT_EQ(p.config.Get(PvOp::kIrq), Variant::kNaive);  // the set_if hypercall
}

TEST(CmdlineTest, ParsesAllThreeKeysWithExtraSpaces) {
  Parsed p = Parse("  backend=native   pvops=naive workload=hello,lines=7 ");
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.config.backend, Backend::kNative);
  EXPECT_EQ(p.config.Get(PvOp::kTls), Variant::kNaive);
  EXPECT_STREQ(p.config.workload.spec->name, "hello");
  EXPECT_EQ(p.config.workload.Get("lines"), 7u);
}

TEST(CmdlineTest, PvopsListAppliesInOrder) {
  Parsed p = Parse("pvops=naive,fpu_switch:eager,pte_flags:patched,batch:on,tls:optimized");
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.config.Get(PvOp::kIrqRestore), Variant::kNaive);
  EXPECT_EQ(p.config.Get(PvOp::kFpuSwitch), Variant::kEager);
  EXPECT_EQ(p.config.Get(PvOp::kPteFlags), Variant::kPatched);
  EXPECT_EQ(p.config.Get(PvOp::kBatch), Variant::kOptimized);
  EXPECT_EQ(p.config.Get(PvOp::kTls), Variant::kOptimized);
}

TEST(CmdlineTest, BatchAcceptsOffOnAndNaiveOptimized) {
  EXPECT_EQ(Parse("pvops=batch:off").config.Get(PvOp::kBatch), Variant::kNaive);
  EXPECT_EQ(Parse("pvops=batch:naive").config.Get(PvOp::kBatch), Variant::kNaive);
  EXPECT_EQ(Parse("pvops=batch:on").config.Get(PvOp::kBatch), Variant::kOptimized);
}

TEST(CmdlineTest, IrqIsHypercallOrShared) {
  EXPECT_EQ(Parse("pvops=irq:hypercall").config.Get(PvOp::kIrq), Variant::kNaive);
  EXPECT_EQ(Parse("pvops=irq:shared").config.Get(PvOp::kIrq), Variant::kShared);
}

TEST(CmdlineTest, NaiveAndOptimizedLeaveTheIrqModelAlone) {
  for (const char* line : {"pvops=irq:shared,naive", "pvops=irq:shared,optimized"}) {
    Parsed p = Parse(line);
    ASSERT_TRUE(p.ok) << p.error;
    EXPECT_EQ(p.config.Get(PvOp::kIrq), Variant::kShared) << line;
  }
  EXPECT_EQ(Parse("pvops=naive").config.Get(PvOp::kIrq), Variant::kNaive);
}

TEST(CmdlineTest, XenPresetIsNaiveSeedsBatchingAndTheSharedFlag) {
  Parsed p = Parse("pvops=xen");
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.config.Get(PvOp::kIrqRestore), Variant::kNaive);
  EXPECT_EQ(p.config.Get(PvOp::kFpuSwitch), Variant::kNaive);
  EXPECT_EQ(p.config.Get(PvOp::kTls), Variant::kNaive);
  EXPECT_EQ(p.config.Get(PvOp::kPteFlags), Variant::kNaive);
  EXPECT_EQ(p.config.Get(PvOp::kBatch), Variant::kOptimized);
  EXPECT_EQ(p.config.Get(PvOp::kSendIpi), Variant::kNaive);       // an event channel per target
  EXPECT_EQ(p.config.Get(PvOp::kFlushTlb), Variant::kOptimized);  // MMUEXT_TLB_FLUSH_MULTI
  EXPECT_EQ(p.config.Get(PvOp::kIrq), Variant::kShared);
}

TEST(CmdlineTest, SmpOpsAreNaiveOrOptimizedAndFollowTheAllOpItems) {
  Parsed naive = Parse("pvops=naive");
  EXPECT_EQ(naive.config.Get(PvOp::kSendIpi), Variant::kNaive);
  EXPECT_EQ(naive.config.Get(PvOp::kFlushTlb), Variant::kNaive);
  Parsed opt = Parse("pvops=naive,optimized");
  EXPECT_EQ(opt.config.Get(PvOp::kSendIpi), Variant::kOptimized);
  EXPECT_EQ(opt.config.Get(PvOp::kFlushTlb), Variant::kOptimized);
  Parsed one = Parse("pvops=naive,send_ipi:optimized");
  ASSERT_TRUE(one.ok) << one.error;
  EXPECT_EQ(one.config.Get(PvOp::kSendIpi), Variant::kOptimized);
  EXPECT_EQ(one.config.Get(PvOp::kFlushTlb), Variant::kNaive);
  Parsed shootdown = Parse("workload=shootdown");
  ASSERT_TRUE(shootdown.ok) << shootdown.error;
  EXPECT_EQ(shootdown.config.workload.Get("rounds"), 20u);
  Parsed lock = Parse("workload=lock,cs=0");
  ASSERT_TRUE(lock.ok) << lock.error;
  EXPECT_EQ(lock.config.workload.Get("iters"), 200u);
  EXPECT_EQ(lock.config.workload.Get("cs"), 0u);
  EXPECT_EQ(Parse("pvops=spinlock:naive,yield:optimized").config.Get(PvOp::kSpinlock),
            Variant::kNaive);
  EXPECT_EQ(Parse("pvops=xen").config.Get(PvOp::kSpinlock), Variant::kOptimized);
  EXPECT_EQ(Parse("pvops=xen").config.Get(PvOp::kYield), Variant::kNaive);
}

TEST(CmdlineTest, XenPresetItemsApplyInOrder) {
  Parsed after = Parse("pvops=xen,tls:optimized,irq:hypercall");
  ASSERT_TRUE(after.ok) << after.error;
  EXPECT_EQ(after.config.Get(PvOp::kTls), Variant::kOptimized);
  EXPECT_EQ(after.config.Get(PvOp::kIrq), Variant::kNaive);
  EXPECT_EQ(after.config.Get(PvOp::kFpuSwitch), Variant::kNaive);
  // An item before the preset is overwritten by it.
  Parsed before = Parse("pvops=tls:optimized,batch:off,xen");
  ASSERT_TRUE(before.ok) << before.error;
  EXPECT_EQ(before.config.Get(PvOp::kTls), Variant::kNaive);
  EXPECT_EQ(before.config.Get(PvOp::kBatch), Variant::kOptimized);
}

TEST(CmdlineTest, SharedFlagWithNativeIsRefusedWhateverTheOrder) {
  for (const char* line : {"backend=native pvops=xen", "pvops=irq:shared backend=native",
                           "backend=native pvops=optimized,irq:shared"}) {
    Parsed p = Parse(line);
    EXPECT_FALSE(p.ok) << line;
    EXPECT_EQ(p.error, "pvops irq:shared (also in pvops=xen) needs backend=pv: native has cli/sti");
  }
  // The last word counts: switched back to the hypercall model, native is fine.
  EXPECT_TRUE(Parse("backend=native pvops=xen,irq:hypercall").ok);
}

TEST(CmdlineTest, WorkloadDefaultsFillUnsetParameters) {
  Parsed p = Parse("workload=ctx,rounds=5");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.config.workload.Get("tasks"), 3u);
  EXPECT_EQ(p.config.workload.Get("rounds"), 5u);
  EXPECT_EQ(std::string(p.config.workload.Choice("tls").data(), 3), "all");
}

TEST(CmdlineTest, ChoiceParameterStoresIndex) {
  Parsed p = Parse("workload=fault,kind=pf");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.config.workload.Get("kind"), 2u);
}

struct BadCase {
  const char* line;
  std::string error;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.line; }

class CmdlineRejectTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(CmdlineRejectTest, RefusesWithOneClearLine) {
  Parsed p = Parse(GetParam().line);
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error, GetParam().error);
  EXPECT_EQ(p.error.find('\n'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    All, CmdlineRejectTest,
    ::testing::Values(
        BadCase{"foo=1", "unknown command-line key 'foo' (backend|pvops|workload)"},
        BadCase{"junk", "malformed command-line token 'junk' (expected key=value)"},
        BadCase{"backend=kvm", "unknown backend 'kvm' (pv|native)"},
        BadCase{"pvops=", "empty pvops= value (naive|optimized|xen|<op>:<variant>,...)"},
        BadCase{"pvops=fast", "bad pvops item 'fast' (naive, optimized, xen or <op>:<variant>)"},
        BadCase{"pvops=zz:naive", "unknown pvops op 'zz' (" + AllOpNames() + ")"},
        BadCase{"pvops=irq:naive", "unknown variant 'naive' for pvops op irq (hypercall|shared)"},
        BadCase{"pvops=irq:optimized",
                "unknown variant 'optimized' for pvops op irq (hypercall|shared)"},
        BadCase{"pvops=xen:on", "unknown pvops op 'xen' (" + AllOpNames() + ")"},
        BadCase{"pvops=tls:eager", "unknown variant 'eager' for pvops op tls (naive|optimized)"},
        BadCase{"pvops=fpu_switch:patched",
                "unknown variant 'patched' for pvops op fpu_switch (naive|optimized|eager)"},
        BadCase{"workload=nope", "unknown workload 'nope' (" + AllWorkloadNames() + ")"},
        BadCase{"pvops=send_ipi:eager",
                "unknown variant 'eager' for pvops op send_ipi (naive|optimized)"},
        BadCase{"pvops=flush_tlb:on",
                "unknown variant 'on' for pvops op flush_tlb (naive|optimized)"},
        BadCase{"workload=shootdown,rounds=0",
                "bad value '0' for shootdown.rounds " + Allowed("shootdown", "rounds")},
        BadCase{"workload=ctx,bogus=1",
                "unknown parameter 'bogus' for workload ctx (" + ParamNames("ctx") + ")"},
        BadCase{"workload=none,x=1", "unknown parameter 'x' for workload none (it takes none)"},
        BadCase{"workload=ctx,rounds=0",
                "bad value '0' for ctx.rounds " + Allowed("ctx", "rounds")},
        BadCase{"workload=ctx,tasks=17", "bad value '17' for ctx.tasks " + Allowed("ctx", "tasks")},
        BadCase{"workload=hello,lines=x",
                "bad value 'x' for hello.lines " + Allowed("hello", "lines")},
        BadCase{"workload=ctx,tls=two", "bad value 'two' for ctx.tls " + Allowed("ctx", "tls")},
        BadCase{"workload=hello,lines",
                "workload parameter 'lines' needs a value (hello,lines=...)"}));

TEST(CmdlineTest, ConfigReportListsEveryOpAndParameter) {
  Parsed p = Parse("backend=native pvops=naive,batch:on workload=ctx,tasks=4,tls=one");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(Report(p.config), "config.backend=native\n" + NaiveOpsWithBatchOnReport() +
                                  WorkloadReport("ctx", {{"tasks", "4"}, {"tls", "one"}}));
}

TEST(CmdlineTest, RingRunsProcessesByDefaultAndTakesAWorkingSetInKib) {
  for (const char* w : {"ctx", "pipe"}) {
    Parsed p = Parse((std::string("workload=") + w).c_str());
    ASSERT_TRUE(p.ok) << w;
    EXPECT_EQ(std::string(p.config.workload.Choice("mm").data(), 7), "process") << w;
    EXPECT_EQ(p.config.workload.Get("ws"), 0u) << w;
    Parsed q = Parse((std::string("workload=") + w + ",mm=thread,ws=1024").c_str());
    ASSERT_TRUE(q.ok) << w;
    EXPECT_EQ(q.config.workload.Get("mm"), 1u) << w;
    EXPECT_EQ(q.config.workload.Get("ws"), 1024u) << w;
    EXPECT_FALSE(Parse((std::string("workload=") + w + ",ws=1025").c_str()).ok) << w;
    EXPECT_FALSE(Parse((std::string("workload=") + w + ",mm=both").c_str()).ok) << w;
  }
}

TEST(CmdlineTest, HelloReportMatchesTheDocumentedKeys) {
  Parsed p = Parse("workload=hello,lines=3");
  ASSERT_TRUE(p.ok);
  std::string r = Report(p.config);
  EXPECT_NE(r.find("config.backend=pv\n"), std::string::npos);
  EXPECT_NE(r.find("config.workload=hello\nconfig.workload.lines=3\n"), std::string::npos);
}

TEST(CmdlineTest, EveryWorkloadParameterDefaultIsInRange) {
  for (const WorkloadSpec* w = WorkloadTable(); w->name != nullptr; ++w) {
    for (int i = 0; i < w->param_count; ++i) {
      const ParamSpec& ps = w->params[i];
      if (ps.choices == nullptr) {
        EXPECT_GE(ps.default_value, ps.min) << w->name << "." << ps.name;
        EXPECT_LE(ps.default_value, ps.max) << w->name << "." << ps.name;
      } else {
        EXPECT_FALSE(ChoiceAt(ps.choices, ps.default_value).empty()) << w->name << "." << ps.name;
      }
    }
    EXPECT_LE(w->param_count, kMaxParams);
  }
}

}  // namespace
}  // namespace guest
