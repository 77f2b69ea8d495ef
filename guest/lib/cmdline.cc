#include "lib/cmdline.h"

#include "lib/workload_list.h"

namespace guest {
namespace {

constexpr PvOpInfo kPvOps[kPvOpCount] = {
#define GUEST_PVOP_INFO_(id, name, choices, dflt, xen, preset, bench, seed, description) \
  {name, choices, Variant::dflt, Variant::xen, preset, bench, seed, description},
    GUEST_PVOP_LIST(GUEST_PVOP_INFO_)
#undef GUEST_PVOP_INFO_
};

struct VariantWord {
  const char* word;
  Variant variant;
};
constexpr VariantWord kVariantWords[] = {
#define GUEST_VARIANT_WORD_(word, variant) {word, Variant::variant},
    GUEST_VARIANT_WORD_LIST(GUEST_VARIANT_WORD_)
#undef GUEST_VARIANT_WORD_
};

constexpr const ParamSpec* ParamsOf(NoParams) { return nullptr; }
template <size_t N>
constexpr const ParamSpec* ParamsOf(const ParamSpec (&params)[N]) {
  return params;
}
constexpr int ParamCount(NoParams) { return 0; }
template <size_t N>
constexpr int ParamCount(const ParamSpec (&)[N]) {
  return static_cast<int>(N);
}

// clang-format off
#define GUEST_WORKLOAD_SPEC_(name, runner, params, flags, op, op_counter, time_op, bench) \
  {name, ParamsOf(params), ParamCount(params), flags, op, op_counter, time_op, bench},
constexpr WorkloadSpec kWorkloads[] = {
    GUEST_WORKLOAD_LIST(GUEST_WORKLOAD_SPEC_)
    {nullptr, nullptr, 0, 0, nullptr, nullptr, nullptr, nullptr},
};
// clang-format on
#undef GUEST_WORKLOAD_SPEC_

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Splits `s` at the first `sep`: head before, rest after (empty if absent).
StrView SplitAt(StrView* s, char sep) {
  size_t i = s->Find(sep);
  StrView head = s->Sub(0, i);
  *s = (i < s->size()) ? s->Sub(i + 1) : StrView(s->data() + s->size(), 0);
  return head;
}

void AppendChoices(TextBuf* err, const char* choices) { err->Str(" (").Str(choices).Str(")"); }

bool ParseBackend(StrView v, Config* c, TextBuf* err) {
  int i = ChoiceIndex("pv|native", v);
  if (i < 0) {
    err->Str("unknown backend '").Str(v).Str("'");
    AppendChoices(err, "pv|native");
    return false;
  }
  c->backend = i == 0 ? Backend::kPv : Backend::kNative;
  return true;
}

// The Variant a word spells (GUEST_VARIANT_WORD_LIST), if any.
bool WordVariant(StrView word, Variant* out) {
  for (const VariantWord& w : kVariantWords) {
    if (word == w.word) {
      *out = w.variant;
      return true;
    }
  }
  return false;
}

// True when one of `op`'s choices spells `v`.
bool HasVariant(int op, Variant v) {
  for (uint64_t i = 0;; ++i) {
    StrView word = ChoiceAt(kPvOps[op].choices, i);
    if (word.empty()) return false;
    Variant w;
    if (WordVariant(word, &w) && w == v) return true;
  }
}

// Maps a spelling of a variant of `op` to the Variant: one of the op's
// choices, or naive/optimized for an op whose choices spell both (batch's
// off/on), so that an op list can be uniform.
bool LookupVariant(int op, StrView word, Variant* out) {
  Variant v;
  if (!WordVariant(word, &v)) return false;
  if (ChoiceIndex(kPvOps[op].choices, word) >= 0 ||
      (ChoiceIndex("naive|optimized", word) >= 0 && HasVariant(op, Variant::kNaive) &&
       HasVariant(op, Variant::kOptimized))) {
    *out = v;
    return true;
  }
  return false;
}

bool ParsePvops(StrView v, Config* c, TextBuf* err) {
  if (v.empty()) {
    err->Str("empty pvops= value (naive|optimized|xen|<op>:<variant>,...)");
    return false;
  }
  while (!v.empty()) {
    StrView item = SplitAt(&v, ',');
    size_t colon = item.Find(':');
    if (colon == item.size()) {
      if (item == "xen") {
        for (int i = 0; i < kPvOpCount; ++i) c->variant[i] = kPvOps[i].xen;
        continue;
      }
      int all = ChoiceIndex("naive|optimized", item);
      if (all < 0) {
        err->Str("bad pvops item '").Str(item).Str("' (naive, optimized, xen or <op>:<variant>)");
        return false;
      }
      for (int i = 0; i < kPvOpCount; ++i)
        if (kPvOps[i].preset) c->variant[i] = static_cast<Variant>(all);
      continue;
    }
    StrView op_name = item.Sub(0, colon);
    StrView word = item.Sub(colon + 1);
    int op = -1;
    for (int i = 0; i < kPvOpCount; ++i) {
      if (op_name == kPvOps[i].name) op = i;
    }
    if (op < 0) {
      err->Str("unknown pvops op '").Str(op_name).Str("' (");
      for (int i = 0; i < kPvOpCount; ++i) err->Str(i ? "|" : "").Str(kPvOps[i].name);
      err->Str(")");
      return false;
    }
    Variant var;
    if (!LookupVariant(op, word, &var)) {
      err->Str("unknown variant '").Str(word).Str("' for pvops op ").Str(kPvOps[op].name);
      AppendChoices(err, kPvOps[op].choices);
      return false;
    }
    c->variant[op] = var;
  }
  return true;
}

bool ParseParam(const WorkloadSpec* spec, StrView item, WorkloadArgs* args, TextBuf* err) {
  size_t eq = item.Find('=');
  StrView key = item.Sub(0, eq);
  StrView value = eq < item.size() ? item.Sub(eq + 1) : StrView();
  for (int i = 0; i < spec->param_count; ++i) {
    const ParamSpec& p = spec->params[i];
    if (key != p.name) continue;
    if (eq == item.size()) {
      err->Str("workload parameter '")
          .Str(key)
          .Str("' needs a value (")
          .Str(spec->name)
          .Str(",")
          .Str(key)
          .Str("=...)");
      return false;
    }
    if (p.choices != nullptr) {
      int idx = ChoiceIndex(p.choices, value);
      if (idx < 0) {
        err->Str("bad value '").Str(value).Str("' for ").Str(spec->name).Str(".").Str(key);
        AppendChoices(err, p.choices);
        return false;
      }
      args->values[i] = static_cast<uint64_t>(idx);
      return true;
    }
    uint64_t n;
    if (!value.ToU64(&n) || n < p.min || n > p.max) {
      err->Str("bad value '")
          .Str(value)
          .Str("' for ")
          .Str(spec->name)
          .Str(".")
          .Str(key)
          .Str(" (integer ");
      err->Dec(p.min).Str("..").Dec(p.max).Str(")");
      return false;
    }
    args->values[i] = n;
    return true;
  }
  err->Str("unknown parameter '").Str(key).Str("' for workload ").Str(spec->name).Str(" (");
  if (spec->param_count == 0) err->Str("it takes none");
  for (int i = 0; i < spec->param_count; ++i) err->Str(i ? "|" : "").Str(spec->params[i].name);
  err->Str(")");
  return false;
}

bool ParseWorkload(StrView v, Config* c, TextBuf* err) {
  StrView name = SplitAt(&v, ',');
  const WorkloadSpec* spec = FindWorkload(name);
  if (spec == nullptr) {
    err->Str("unknown workload '")
        .Str(name)
        .Str(
            "' (none|hello|fault|ctx|pipe|irq|cpa|fpu|all|custom|hcall|hostile|hostprobe|exitcost|"
            "shootdown|lock|aim)");
    return false;
  }
  WorkloadArgs args;
  args.spec = spec;
  for (int i = 0; i < spec->param_count; ++i) args.values[i] = spec->params[i].default_value;
  while (!v.empty()) {
    StrView item = SplitAt(&v, ',');
    if (!ParseParam(spec, item, &args, err)) return false;
  }
  c->workload = args;
  return true;
}

}  // namespace

const PvOpInfo& PvOpInfoOf(PvOp op) { return kPvOps[static_cast<int>(op)]; }

const char* PvOpName(PvOp op) { return kPvOps[static_cast<int>(op)].name; }

const char* VariantName(PvOp op, Variant v) {
  // The op's own spelling of `v`: the first of its choices that means it.
  const char* choices = kPvOps[static_cast<int>(op)].choices;
  for (const VariantWord& w : kVariantWords) {
    if (w.variant == v && ChoiceIndex(choices, w.word) >= 0) return w.word;
  }
  return "?";
}

const char* BackendName(Backend b) { return b == Backend::kPv ? "pv" : "native"; }

int ChoiceIndex(const char* choices, StrView word) {
  StrView rest(choices);
  for (int i = 0; !rest.empty(); ++i) {
    if (SplitAt(&rest, '|') == word) return i;
  }
  return -1;
}

StrView ChoiceAt(const char* choices, uint64_t index) {
  StrView rest(choices);
  for (uint64_t i = 0; !rest.empty(); ++i) {
    StrView w = SplitAt(&rest, '|');
    if (i == index) return w;
  }
  return StrView();
}

const WorkloadSpec* WorkloadTable() { return kWorkloads; }

const WorkloadSpec* FindWorkload(StrView name) {
  for (const WorkloadSpec* w = kWorkloads; w->name != nullptr; ++w) {
    if (name == w->name) return w;
  }
  return nullptr;
}

uint64_t WorkloadArgs::Get(StrView name) const {
  for (int i = 0; spec != nullptr && i < spec->param_count; ++i) {
    if (name == spec->params[i].name) return values[i];
  }
  return 0;
}

StrView WorkloadArgs::Choice(StrView name) const {
  for (int i = 0; spec != nullptr && i < spec->param_count; ++i) {
    if (name == spec->params[i].name && spec->params[i].choices != nullptr) {
      return ChoiceAt(spec->params[i].choices, values[i]);
    }
  }
  return StrView();
}

bool ParseCmdline(StrView line, Config* config, TextBuf* error) {
  if (config->workload.spec == nullptr) config->workload.spec = FindWorkload("none");
  size_t i = 0;
  while (i < line.size()) {
    if (IsSpace(line[i])) {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < line.size() && !IsSpace(line[i])) ++i;
    StrView token = line.Sub(start, i - start);
    size_t eq = token.Find('=');
    if (eq == token.size()) {
      error->Str("malformed command-line token '").Str(token).Str("' (expected key=value)");
      return false;
    }
    StrView key = token.Sub(0, eq);
    StrView value = token.Sub(eq + 1);
    bool ok;
    if (key == "backend") {
      ok = ParseBackend(value, config, error);
    } else if (key == "pvops") {
      ok = ParsePvops(value, config, error);
    } else if (key == "workload") {
      ok = ParseWorkload(value, config, error);
    } else {
      error->Str("unknown command-line key '").Str(key).Str("' (backend|pvops|workload)");
      ok = false;
    }
    if (!ok) return false;
  }
  if (config->backend == Backend::kNative && config->Get(PvOp::kIrq) == Variant::kShared) {
    error->Str("pvops irq:shared (also in pvops=xen) needs backend=pv: native has cli/sti");
    return false;
  }
  return true;
}

void AppendConfigReport(const Config& config, TextBuf* out) {
  out->Kv("config.backend", BackendName(config.backend));
  for (int i = 0; i < kPvOpCount; ++i) {
    PvOp op = static_cast<PvOp>(i);
    out->Str("config.pvops.")
        .Str(PvOpName(op))
        .Char('=')
        .Str(VariantName(op, config.variant[i]))
        .Char('\n');
  }
  const WorkloadSpec* spec = config.workload.spec;
  out->Kv("config.workload", spec->name);
  for (int i = 0; i < spec->param_count; ++i) {
    const ParamSpec& p = spec->params[i];
    out->Str("config.workload.").Str(p.name).Char('=');
    if (p.choices != nullptr) {
      out->Str(ChoiceAt(p.choices, config.workload.values[i]));
    } else {
      out->Dec(config.workload.values[i]);
    }
    out->Char('\n');
  }
}

}  // namespace guest
