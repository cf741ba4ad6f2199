#include "acan/job.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/byte_size.h"
#include "nn/layers.h"
#include "nn/read_file.h"

namespace acan {
namespace {

template <typename E, size_t N>
Result<E> ParseEnum(std::string_view what, std::string_view name,
                    const std::pair<std::string_view, E> (&table)[N]) {
  std::string options;
  for (const auto& [n, e] : table) {
    if (n == name) return e;
    if (!options.empty()) options += " | ";
    options += n;
  }
  return Status::InvalidArgument("unknown " + std::string(what) + " \"" + std::string(name) +
                                 "\"; use one of: " + options);
}

constexpr std::pair<std::string_view, Activation> kActivations[] = {
    {"relu", Activation::kRelu},
    {"tanh", Activation::kTanh},
    {"sigmoid", Activation::kSigmoid},
    {"identity", Activation::kIdentity}};
constexpr std::pair<std::string_view, LayerType> kLayerTypes[] = {
    {"conv2d", LayerType::kConv2d},
    {"max_pool2d", LayerType::kMaxPool2d},
    {"avg_pool2d", LayerType::kAvgPool2d},
    {"flatten", LayerType::kFlatten},
    {"linear", LayerType::kLinear},
    {"relu", LayerType::kRelu},
    {"tanh", LayerType::kTanh},
    {"sigmoid", LayerType::kSigmoid},
    {"dropout", LayerType::kDropout}};
constexpr std::pair<std::string_view, LossKind> kLosses[] = {
    {"mse", LossKind::kMse}, {"softmax_cross_entropy", LossKind::kSoftmaxCrossEntropy}};
constexpr std::pair<std::string_view, DataSource> kSources[] = {
    {"synthetic", DataSource::kSynthetic},
    {"csv", DataSource::kCsv},
    {"idx", DataSource::kIdx},
    {"fashion-mnist", DataSource::kFashionMnist}};
constexpr std::pair<std::string_view, InputScale> kScales[] = {
    {"auto", InputScale::kAuto}, {"none", InputScale::kNone}, {"unit", InputScale::kUnit}};
constexpr std::pair<std::string_view, Strategy> kStrategies[] = {{"tiles", Strategy::kTiles},
                                                                 {"data", Strategy::kData},
                                                                 {"pipeline", Strategy::kPipeline},
                                                                 {"chain", Strategy::kChain}};

template <typename E, size_t N>
std::string_view Name(E e, const std::pair<std::string_view, E> (&table)[N]) {
  for (const auto& [n, v] : table)
    if (v == e) return n;
  return "?";
}

// Reads one TOML table, checking each key once; Finish() reports keys nobody asked for.
class Section {
 public:
  Section(std::string_view source, std::string name, const toml::table* table)
      : source_(source), name_(std::move(name)), table_(table) {}

  Status Int(const char* key, int64_t* out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return Status::Ok();
    if (!n->is_integer()) return WrongType(key, *n, "an integer");
    *out = n->as_integer()->get();
    return Status::Ok();
  }
  Status Uint(const char* key, uint64_t* out) {
    int64_t v = static_cast<int64_t>(*out);
    ACAN_RETURN_IF_ERROR(Int(key, &v));
    if (v < 0) return Error(key, "must be >= 0, got " + std::to_string(v));
    *out = static_cast<uint64_t>(v);
    return Status::Ok();
  }
  Status Float(const char* key, double* out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return Status::Ok();
    if (n->is_integer()) {
      *out = static_cast<double>(n->as_integer()->get());
    } else if (n->is_floating_point()) {
      *out = n->as_floating_point()->get();
    } else {
      return WrongType(key, *n, "a number");
    }
    if (!std::isfinite(*out)) return Error(key, "must be a finite number");
    return Status::Ok();
  }
  Status Bool(const char* key, bool* out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return Status::Ok();
    if (!n->is_boolean()) return WrongType(key, *n, "true or false");
    *out = n->as_boolean()->get();
    return Status::Ok();
  }
  Status String(const char* key, std::string* out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return Status::Ok();
    if (!n->is_string()) return WrongType(key, *n, "a string");
    *out = n->as_string()->get();
    return Status::Ok();
  }
  template <typename E, size_t N>
  Status Enum(const char* key, E* out, const std::pair<std::string_view, E> (&table)[N]) {
    std::string s;
    const bool present = Find(key) != nullptr;
    ACAN_RETURN_IF_ERROR(String(key, &s));
    if (!present) return Status::Ok();
    Result<E> e = ParseEnum(key, s, table);
    if (!e.ok()) return Error(key, e.status().message());
    *out = *e;
    return Status::Ok();
  }
  Status IntArray(const char* key, std::vector<int64_t>* out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return Status::Ok();
    if (!n->is_array()) return WrongType(key, *n, "an array of integers");
    out->clear();
    for (const toml::node& e : *n->as_array()) {
      if (!e.is_integer()) return WrongType(key, e, "an array of integers");
      out->push_back(e.as_integer()->get());
    }
    return Status::Ok();
  }
  // Sizes in bytes: a string ("24MiB", common/byte_size.h), a non-negative integer (bytes), or an
  // array of them.
  Status Sizes(const char* key, std::vector<int64_t>* out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return Status::Ok();
    out->clear();
    auto one = [&](const toml::node& e) -> Status {
      if (e.is_integer() && e.as_integer()->get() >= 0) {
        out->push_back(e.as_integer()->get());
        return Status::Ok();
      }
      if (!e.is_string()) return WrongType(key, e, "a size such as \"16MiB\" (or a list of them)");
      Result<int64_t> size = ParseByteSize(e.as_string()->get());
      if (!size.ok()) return Error(key, size.status().message());
      out->push_back(*size);
      return Status::Ok();
    };
    if (!n->is_array()) return one(*n);
    for (const toml::node& e : *n->as_array()) ACAN_RETURN_IF_ERROR(one(e));
    if (out->empty()) return Error(key, "must name at least one size");
    return Status::Ok();
  }
  Status FloatArray(const char* key, std::vector<double>* out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return Status::Ok();
    if (!n->is_array()) return WrongType(key, *n, "an array of numbers");
    out->clear();
    for (const toml::node& e : *n->as_array()) {
      if (e.is_integer()) {
        out->push_back(static_cast<double>(e.as_integer()->get()));
      } else if (e.is_floating_point()) {
        out->push_back(e.as_floating_point()->get());
      } else {
        return WrongType(key, e, "an array of numbers");
      }
    }
    return Status::Ok();
  }
  // An array of tables {edge = N, share = N, budget = SIZE} (PartitionConfig::tile_bands).
  Status Bands(const char* key, std::vector<TileBand>* out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return Status::Ok();
    constexpr const char* kForm = "an array of tables such as {edge = 444, share = 1}";
    if (!n->is_array()) return WrongType(key, *n, kForm);
    out->clear();
    for (const toml::node& e : *n->as_array()) {
      if (!e.is_table()) return WrongType(key, e, kForm);
      const std::string band = fmt::format("band {}", out->size());
      TileBand b;
      for (const auto& [k, v] : *e.as_table()) {
        const std::string name(k.str());
        const bool integer = v.is_integer();
        if (name == "edge" && integer) {
          b.edge = v.as_integer()->get();
        } else if (name == "share" && integer) {
          b.share = v.as_integer()->get();
        } else if (name == "budget" && (integer || v.is_string())) {
          Result<int64_t> size = integer ? Result<int64_t>(v.as_integer()->get())
                                         : ParseByteSize(v.as_string()->get());
          if (!size.ok()) return At(v, key, band + ": budget: " + size.status().message());
          b.budget = *size;
        } else if (name == "edge" || name == "share" || name == "budget") {
          return At(v, key,
                    band + ": \"" + name + "\" must be " +
                        (name == "budget" ? "a size such as \"16MiB\"" : "an integer"));
        } else {
          return At(v, key,
                    band + ": unknown key \"" + name + "\" (a band has edge, share and budget)");
        }
      }
      if (b.edge < 1) return At(e, key, band + ": edge must be >= 1");
      if (b.share < 1) return At(e, key, band + ": share must be >= 1");
      if (b.budget < 0) return At(e, key, band + ": budget must be >= 0");
      out->push_back(b);
    }
    return Status::Ok();
  }
  // A kernel's size: an integer (square) or [height, width].
  Status KernelSize(const char* key, int64_t* h, int64_t* w) {
    const toml::node* n = Find(key);
    if (n == nullptr) return Status::Ok();
    constexpr const char* kForm = "an integer or [height, width]";
    if (n->is_integer()) {
      *h = *w = n->as_integer()->get();
      return Status::Ok();
    }
    const toml::array* a = n->as_array();
    if (a == nullptr || a->size() != 2 || !(*a)[0].is_integer() || !(*a)[1].is_integer()) {
      return WrongType(key, *n, kForm);
    }
    *h = (*a)[0].as_integer()->get();
    *w = (*a)[1].as_integer()->get();
    return Status::Ok();
  }
  // [[model.layer]]: an array of tables, each a layer with its type's keys (LayerConfig);
  // `where` gets each layer's file and line.
  Status Layers(const char* key, std::vector<LayerConfig>* out, std::vector<std::string>* where) {
    const toml::node* n = Find(key);
    if (n == nullptr) return Status::Ok();
    constexpr const char* kForm = "an array of tables ([[model.layer]] sections)";
    if (!n->is_array()) return WrongType(key, *n, kForm);
    out->clear();
    for (const toml::node& e : *n->as_array()) {
      if (!e.is_table()) return WrongType(key, e, kForm);
      Section s(source_, fmt::format("{}.{}[{}]", name_, key, out->size()), e.as_table());
      LayerConfig l;
      if (e.as_table()->get("type") == nullptr) {
        return At(e, key,
                  fmt::format("layer {} has no type (one of conv2d, max_pool2d, avg_pool2d, "
                              "flatten, linear, relu, tanh, sigmoid, dropout)",
                              out->size()));
      }
      ACAN_RETURN_IF_ERROR(s.Enum("type", &l.type, kLayerTypes));
      switch (l.type) {
        case LayerType::kConv2d:
          ACAN_RETURN_IF_ERROR(s.Int("in_channels", &l.in));
          ACAN_RETURN_IF_ERROR(s.Int("out_channels", &l.out));
          ACAN_RETURN_IF_ERROR(s.Bool("bias", &l.bias));
          [[fallthrough]];
        case LayerType::kMaxPool2d:
        case LayerType::kAvgPool2d:
          ACAN_RETURN_IF_ERROR(s.KernelSize("kernel_size", &l.kernel_h, &l.kernel_w));
          ACAN_RETURN_IF_ERROR(s.Int("stride", &l.stride));
          ACAN_RETURN_IF_ERROR(s.Int("padding", &l.padding));
          if (l.kernel_h == 0) return s.Error("type", "needs kernel_size");
          if (l.type == LayerType::kConv2d && (l.in == 0 || l.out == 0)) {
            return s.Error("type", "needs in_channels and out_channels");
          }
          if (s.table_->contains("stride") && l.stride < 1)
            return s.Error("stride", "must be >= 1");
          break;
        case LayerType::kLinear:
          ACAN_RETURN_IF_ERROR(s.Int("in_features", &l.in));
          ACAN_RETURN_IF_ERROR(s.Int("out_features", &l.out));
          ACAN_RETURN_IF_ERROR(s.Bool("bias", &l.bias));
          if (l.in == 0 || l.out == 0) return s.Error("type", "needs in_features and out_features");
          break;
        case LayerType::kDropout:
          ACAN_RETURN_IF_ERROR(s.Float("p", &l.p));
          break;
        case LayerType::kFlatten:
        case LayerType::kRelu:
        case LayerType::kTanh:
        case LayerType::kSigmoid:
          break;
      }
      ACAN_RETURN_IF_ERROR(s.Finish());
      where->push_back(Where(e));
      out->push_back(l);
    }
    if (out->empty()) return Error(key, "needs at least one layer");
    return Status::Ok();
  }
  // Every key of the table must have been read.
  Status Finish() const {
    if (table_ == nullptr) return Status::Ok();
    for (const auto& [k, v] : *table_) {
      if (seen_.count(std::string(k.str())) == 0) {
        return Status::InvalidArgument(Where(v) + ": unknown key \"" + name_ + "." +
                                       std::string(k.str()) + "\"; check its spelling (see " +
                                       "docs/nn.md for the keys of [" + name_ + "])");
      }
    }
    return Status::Ok();
  }
  // An out-of-range value for `key`, located at its line when present.
  Status Error(const char* key, const std::string& message) const {
    const toml::node* n = table_ ? table_->get(key) : nullptr;
    std::string where = n ? Where(*n) : std::string(source_);
    return Status::InvalidArgument(where + ": key \"" + name_ + "." + key + "\": " + message);
  }

 private:
  const toml::node* Find(const char* key) {
    seen_.insert(key);
    return table_ ? table_->get(key) : nullptr;
  }
  Status At(const toml::node& n, const char* key, const std::string& message) const {
    return Status::InvalidArgument(Where(n) + ": key \"" + name_ + "." + key + "\": " + message);
  }
  std::string Where(const toml::node& n) const {
    return std::string(source_) + ":" + std::to_string(n.source().begin.line);
  }
  Status WrongType(const char* key, const toml::node& n, const char* expected) const {
    std::ostringstream type;
    type << n.type();
    return Status::InvalidArgument(Where(n) + ": key \"" + name_ + "." + key + "\" must be " +
                                   expected + ", not a " + type.str());
  }

  std::string_view source_;
  std::string name_;
  const toml::table* table_;
  std::set<std::string> seen_;
};

// What every set of tile bands must be, wherever it comes from (a job file, a descriptor, code).
Status ValidateTileBands(const PartitionConfig& p) {
  const auto& bands = p.tile_bands;
  if (p.strategy != Strategy::kTiles) {
    return Status::InvalidArgument("bands cut tiles: they need partition.strategy = \"tiles\"");
  }
  if (bands.size() > kMaxTileBands) {
    return Status::InvalidArgument(
        fmt::format("{} bands, at most {}", bands.size(), kMaxTileBands));
  }
  int64_t with_budget = 0;
  for (size_t i = 0; i < bands.size(); ++i) {
    if (bands[i].edge < 1 || bands[i].share < 1 || bands[i].budget < 0) {
      return Status::InvalidArgument(
          fmt::format("band {}: edge and share must be >= 1, budget >= 0", i));
    }
    if (bands[i].share > kMaxTileBandShare) {
      return Status::InvalidArgument(
          fmt::format("band {}: share {} is over {}", i, bands[i].share, kMaxTileBandShare));
    }
    with_budget += bands[i].budget > 0;
  }
  if (with_budget != 0 && with_budget != int64_t(bands.size())) {
    return Status::InvalidArgument("give every band a budget, or none");
  }
  return Status::Ok();
}

Status ParseTable(const toml::table& root, std::string_view source, JobConfig* job) {
  static const std::set<std::string> kSections = {"model",     "data",    "train",
                                                  "partition", "runtime", "chaos"};
  for (const auto& [k, v] : root) {
    const std::string key(k.str());
    const std::string where = std::string(source) + ":" + std::to_string(v.source().begin.line);
    if (kSections.count(key) == 0) {
      return Status::InvalidArgument(where + ": unknown key \"" + key +
                                     "\"; the job file has sections [model], [data], [train], "
                                     "[partition], [runtime] and [chaos]");
    }
    if (!v.is_table()) {
      return Status::InvalidArgument(where + ": \"" + key + "\" must be a table ([" + key + "])");
    }
  }
  auto table = [&](const char* name) { return root.get_as<toml::table>(name); };

  Section model(source, "model", table("model"));
  ACAN_RETURN_IF_ERROR(model.IntArray("layers", &job->model.layers));
  ACAN_RETURN_IF_ERROR(model.IntArray("input_shape", &job->model.input_shape));
  std::vector<std::string> layer_where;
  ACAN_RETURN_IF_ERROR(model.Layers("layer", &job->model.layer, &layer_where));
  ACAN_RETURN_IF_ERROR(model.Enum("activation", &job->model.activation, kActivations));
  ACAN_RETURN_IF_ERROR(model.Enum("loss", &job->model.loss, kLosses));
  ACAN_RETURN_IF_ERROR(model.String("init", &job->model.init));
  ACAN_RETURN_IF_ERROR(model.Finish());

  Section data(source, "data", table("data"));
  ACAN_RETURN_IF_ERROR(data.Enum("source", &job->data.source, kSources));
  ACAN_RETURN_IF_ERROR(data.Int("samples", &job->data.samples));
  ACAN_RETURN_IF_ERROR(data.Int("limit", &job->data.limit));
  ACAN_RETURN_IF_ERROR(data.String("path", &job->data.path));
  ACAN_RETURN_IF_ERROR(data.String("images", &job->data.images));
  ACAN_RETURN_IF_ERROR(data.String("labels", &job->data.labels));
  ACAN_RETURN_IF_ERROR(data.Bool("shuffle", &job->data.shuffle));
  ACAN_RETURN_IF_ERROR(data.Enum("scale", &job->data.scale, kScales));
  ACAN_RETURN_IF_ERROR(data.Bool("standardize", &job->data.standardize));
  ACAN_RETURN_IF_ERROR(data.String("test_path", &job->data.test_path));
  ACAN_RETURN_IF_ERROR(data.String("test_images", &job->data.test_images));
  ACAN_RETURN_IF_ERROR(data.String("test_labels", &job->data.test_labels));
  ACAN_RETURN_IF_ERROR(data.Int("test_limit", &job->data.test_limit));
  ACAN_RETURN_IF_ERROR(data.Finish());

  Section train(source, "train", table("train"));
  ACAN_RETURN_IF_ERROR(train.Int("epochs", &job->train.epochs));
  ACAN_RETURN_IF_ERROR(train.Int("batch", &job->train.batch));
  ACAN_RETURN_IF_ERROR(train.Float("lr", &job->train.lr));
  ACAN_RETURN_IF_ERROR(train.Float("momentum", &job->train.momentum));
  ACAN_RETURN_IF_ERROR(train.Float("lr_decay", &job->train.lr_decay));
  ACAN_RETURN_IF_ERROR(train.Int("lr_decay_steps", &job->train.lr_decay_steps));
  ACAN_RETURN_IF_ERROR(train.Uint("seed", &job->train.seed));
  ACAN_RETURN_IF_ERROR(train.Finish());

  Section part(source, "partition", table("partition"));
  ACAN_RETURN_IF_ERROR(part.Enum("strategy", &job->partition.strategy, kStrategies));
  ACAN_RETURN_IF_ERROR(part.Int("task_size", &job->partition.task_size));
  ACAN_RETURN_IF_ERROR(part.Int("stages", &job->partition.stages));
  ACAN_RETURN_IF_ERROR(part.Bands("tile_bands", &job->partition.tile_bands));
  ACAN_RETURN_IF_ERROR(part.Finish());

  Section rt(source, "runtime", table("runtime"));
  ACAN_RETURN_IF_ERROR(rt.Int("handlers", &job->runtime.handlers));
  ACAN_RETURN_IF_ERROR(rt.Int("window", &job->runtime.window));
  ACAN_RETURN_IF_ERROR(rt.String("space", &job->runtime.space));
  ACAN_RETURN_IF_ERROR(rt.Bool("speculate", &job->runtime.speculate));
  ACAN_RETURN_IF_ERROR(rt.Sizes("handler_memory", &job->runtime.handler_memory));
  {
    std::vector<int64_t> manager;
    ACAN_RETURN_IF_ERROR(rt.Sizes("manager_memory", &manager));
    if (manager.size() > 1) return rt.Error("manager_memory", "is one size, not a list");
    if (!manager.empty()) job->runtime.manager_memory = manager[0];
  }
  ACAN_RETURN_IF_ERROR(rt.Finish());

  job->chaos.enabled = table("chaos") != nullptr;
  Section chaos(source, "chaos", table("chaos"));
  ACAN_RETURN_IF_ERROR(chaos.FloatArray("speeds", &job->chaos.speeds));
  ACAN_RETURN_IF_ERROR(chaos.Float("speed_change_s", &job->chaos.speed_change_s));
  ACAN_RETURN_IF_ERROR(chaos.Float("crash_interval_s", &job->chaos.crash_interval_s));
  ACAN_RETURN_IF_ERROR(chaos.Float("crash_probability", &job->chaos.crash_probability));
  ACAN_RETURN_IF_ERROR(chaos.Bool("crash_manager", &job->chaos.crash_manager));
  ACAN_RETURN_IF_ERROR(chaos.Float("speed_change_steps", &job->chaos.speed_change_steps));
  ACAN_RETURN_IF_ERROR(chaos.Float("crash_interval_steps", &job->chaos.crash_interval_steps));
  ACAN_RETURN_IF_ERROR(chaos.Finish());

  // Range checks that can point at a line.
  auto check = [](Section& s, const char* key, bool ok, const std::string& what) {
    return ok ? Status::Ok() : s.Error(key, what);
  };
  if (!job->model.layer.empty()) {
    if (table("model")->contains("layers")) {
      return model.Error("layers",
                         "give the widths (layers = [...]) or a list of layers "
                         "([[model.layer]]), not both");
    }
    Result<nn::SampleShape> input = nn::ListInputShape(job->model, job->data.source);
    if (!input.ok()) return model.Error("layer", input.status().message());
    Result<std::vector<nn::SampleShape>> shapes =
        nn::LayerShapes(job->model.layer, *input, layer_where);
    if (!shapes.ok()) return shapes.status();
    if (shapes->back().size() != 1) {
      return model.Error("layer", fmt::format("the last layer's output must be flat (one value a "
                                              "class or target), is {}; end with a linear layer",
                                              nn::ToString(shapes->back())));
    }
    // The widths form's fields: the stack's own when the list is one, else the outer widths.
    if (!nn::AsDenseStack(job->model.layer, *input, &job->model.layers, &job->model.activation)) {
      job->model.layers = {nn::NumElements(*input), shapes->back()[0]};
    }
  }
  bool layers_ok = job->model.layers.size() >= 2;
  for (int64_t w : job->model.layers) layers_ok = layers_ok && w >= 1;
  ACAN_RETURN_IF_ERROR(
      check(model, "layers", layers_ok, "needs at least two widths (input, output), each >= 1"));
  // nn::InitialModel's choices, checked here too so that a typo is found with its line, before
  // the data is loaded.
  const std::string& init = job->model.init;
  const bool init_ok = init == "xavier_uniform" || init == "kaiming_uniform" || init == "zeros" ||
                       (init.size() > 12 && init.ends_with(".safetensors"));
  ACAN_RETURN_IF_ERROR(check(model, "init", init_ok,
                             "\"" + init +
                                 "\" is not xavier_uniform | kaiming_uniform | zeros or a path "
                                 "ending in .safetensors"));
  ACAN_RETURN_IF_ERROR(check(data, "samples", job->data.samples >= 0, "must be >= 0"));
  ACAN_RETURN_IF_ERROR(check(data, "limit", job->data.limit >= 0, "must be >= 0 (0 = all rows)"));
  ACAN_RETURN_IF_ERROR(
      check(data, "test_limit", job->data.test_limit >= 0, "must be >= 0 (0 = all test rows)"));
  // Test-split keys that the source does not use, located at their line.
  const DataSource src = job->data.source;
  const std::string src_name(Name(src, kSources));
  auto unused = [&](const char* key, bool used_by_source, const std::string& hint) {
    return check(data, key, used_by_source,
                 std::string("is not used with data.source = \"") + src_name + "\"; " + hint);
  };
  const std::string split_hint =
      src == DataSource::kFashionMnist
          ? "fashion-mnist always tests on the package's t10k files; remove the key"
      : src == DataSource::kSynthetic ? "synthetic data has no test split; remove the key"
      : src == DataSource::kCsv       ? "a csv test split is data.test_path"
                                      : "an idx test split is data.test_images and "
                                        "data.test_labels";
  if (!job->data.test_path.empty()) {
    ACAN_RETURN_IF_ERROR(unused("test_path", src == DataSource::kCsv, split_hint));
  }
  if (!job->data.test_images.empty()) {
    ACAN_RETURN_IF_ERROR(unused("test_images", src == DataSource::kIdx, split_hint));
  }
  if (!job->data.test_labels.empty()) {
    ACAN_RETURN_IF_ERROR(unused("test_labels", src == DataSource::kIdx, split_hint));
  }
  if (src == DataSource::kIdx && !job->data.test_images.empty()) {
    ACAN_RETURN_IF_ERROR(check(data, "test_images", !job->data.test_labels.empty(),
                               "needs data.test_labels too (the test split's label file)"));
  }
  if (src == DataSource::kIdx && !job->data.test_labels.empty()) {
    ACAN_RETURN_IF_ERROR(check(data, "test_labels", !job->data.test_images.empty(),
                               "needs data.test_images too (the test split's image file)"));
  }
  ACAN_RETURN_IF_ERROR(check(train, "epochs", job->train.epochs >= 0, "must be >= 0"));
  ACAN_RETURN_IF_ERROR(check(train, "batch", job->train.batch >= 1, "must be >= 1"));
  ACAN_RETURN_IF_ERROR(check(train, "lr", job->train.lr > 0, "must be > 0"));
  ACAN_RETURN_IF_ERROR(check(train, "momentum", job->train.momentum >= 0 && job->train.momentum < 1,
                             "must be in [0, 1)"));
  ACAN_RETURN_IF_ERROR(check(train, "lr_decay", job->train.lr_decay > 0 && job->train.lr_decay <= 1,
                             "must be in (0, 1] (1 = constant learning rate)"));
  ACAN_RETURN_IF_ERROR(check(train, "lr_decay_steps", job->train.lr_decay_steps >= 0,
                             "must be >= 0 (0 = constant learning rate)"));
  ACAN_RETURN_IF_ERROR(check(part, "task_size", job->partition.task_size >= 0, "must be >= 0"));
  ACAN_RETURN_IF_ERROR(check(part, "stages", job->partition.stages >= 0, "must be >= 0"));
  if (!job->partition.tile_bands.empty()) {
    Status bands = ValidateTileBands(job->partition);
    if (!bands.ok()) return part.Error("tile_bands", bands.message());
  }
  ACAN_RETURN_IF_ERROR(check(rt, "handlers", job->runtime.handlers >= 1, "must be >= 1"));
  ACAN_RETURN_IF_ERROR(check(rt, "window", job->runtime.window >= 1, "must be >= 1"));
  bool speeds_ok = true;
  for (double s : job->chaos.speeds) speeds_ok = speeds_ok && s > 0;
  ACAN_RETURN_IF_ERROR(check(chaos, "speeds", speeds_ok, "every speed factor must be > 0"));
  ACAN_RETURN_IF_ERROR(check(chaos, "crash_probability",
                             job->chaos.crash_probability >= 0 && job->chaos.crash_probability <= 1,
                             "must be in [0, 1]"));
  ACAN_RETURN_IF_ERROR(
      check(chaos, "speed_change_s", job->chaos.speed_change_s >= 0, "must be >= 0"));
  ACAN_RETURN_IF_ERROR(
      check(chaos, "crash_interval_s", job->chaos.crash_interval_s >= 0, "must be >= 0"));
  ACAN_RETURN_IF_ERROR(
      check(chaos, "speed_change_steps", job->chaos.speed_change_steps >= 0, "must be >= 0"));
  ACAN_RETURN_IF_ERROR(
      check(chaos, "crash_interval_steps", job->chaos.crash_interval_steps >= 0, "must be >= 0"));
  return ValidateJob(*job).WithContext(source);
}

}  // namespace

std::string_view ToString(Activation a) { return Name(a, kActivations); }
std::string_view ToString(LossKind l) { return Name(l, kLosses); }
std::string_view ToString(LayerType t) { return Name(t, kLayerTypes); }
Result<LayerType> ParseLayerType(std::string_view n) {
  return ParseEnum("layer type", n, kLayerTypes);
}
std::string_view ToString(DataSource d) { return Name(d, kSources); }
std::string_view ToString(Strategy s) { return Name(s, kStrategies); }
Result<Activation> ParseActivation(std::string_view n) {
  return ParseEnum("activation", n, kActivations);
}
Result<LossKind> ParseLossKind(std::string_view n) { return ParseEnum("loss", n, kLosses); }
Result<DataSource> ParseDataSource(std::string_view n) {
  return ParseEnum("data source", n, kSources);
}
Result<Strategy> ParseStrategy(std::string_view n) { return ParseEnum("strategy", n, kStrategies); }
std::string_view ToString(InputScale s) { return Name(s, kScales); }
Result<InputScale> ParseInputScale(std::string_view n) { return ParseEnum("scale", n, kScales); }

float TrainConfig::LearningRate(int64_t step) const {
  if (lr_decay_steps <= 0 || lr_decay == 1.0) return static_cast<float>(lr);
  return static_cast<float>(lr * std::pow(lr_decay, static_cast<double>(step / lr_decay_steps)));
}

InputScale DataConfig::EffectiveScale() const {
  if (scale != InputScale::kAuto) return scale;
  return source == DataSource::kIdx || source == DataSource::kFashionMnist ? InputScale::kUnit
                                                                           : InputScale::kNone;
}

bool DataConfig::HasTestSplit() const {
  switch (source) {
    case DataSource::kSynthetic:
      return false;
    case DataSource::kCsv:
      return !test_path.empty();
    case DataSource::kIdx:
      return !test_images.empty() || !test_labels.empty();
    case DataSource::kFashionMnist:
      return true;
  }
  return false;
}

std::string JobConfig::Resolve(const std::string& path) const {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

Status ValidateJob(const JobConfig& job) {
  const auto& layers = job.model.layers;
  if (!job.model.layer.empty()) ACAN_RETURN_IF_ERROR(nn::CheckLayerList(job));
  if (layers.size() < 2) {
    return Status::InvalidArgument("model.layers needs at least two widths (input, output)");
  }
  for (int64_t w : layers) {
    if (w < 1) return Status::InvalidArgument("model.layers: every width must be >= 1");
  }
  if (job.model.loss == LossKind::kSoftmaxCrossEntropy && layers.back() < 2) {
    return Status::InvalidArgument(
        "model.loss = \"softmax_cross_entropy\" needs an output width >= 2 (one per class); "
        "set the last entry of model.layers to the number of classes");
  }
  if (job.model.init.empty()) {
    return Status::InvalidArgument("model.init is empty; use \"xavier_uniform\" or a file");
  }
  switch (job.data.source) {
    case DataSource::kSynthetic:
      if (job.data.samples < 1) {
        return Status::InvalidArgument("data.samples must be >= 1 for synthetic data");
      }
      break;
    case DataSource::kCsv:
      if (job.data.path.empty()) {
        return Status::InvalidArgument("data.source = \"csv\" needs data.path (the CSV file)");
      }
      break;
    case DataSource::kIdx:
      if (job.data.images.empty() || job.data.labels.empty()) {
        return Status::InvalidArgument(
            "data.source = \"idx\" needs data.images and data.labels (IDX files, .gz or not)");
      }
      break;
    case DataSource::kFashionMnist:
      break;
  }
  if (job.data.source == DataSource::kIdx &&
      job.data.test_images.empty() != job.data.test_labels.empty()) {
    return Status::InvalidArgument(
        "an idx test split needs both data.test_images and data.test_labels");
  }
  if (job.data.test_limit < 0) {
    return Status::InvalidArgument("data.test_limit must be >= 0 (0 = every test row)");
  }
  if (job.train.batch < 1) return Status::InvalidArgument("train.batch must be >= 1");
  if (job.train.epochs < 0) return Status::InvalidArgument("train.epochs must be >= 0");
  if (!(job.train.lr > 0) || !std::isfinite(job.train.lr)) {
    return Status::InvalidArgument("train.lr must be a finite number > 0");
  }
  if (!(job.train.momentum >= 0 && job.train.momentum < 1)) {
    return Status::InvalidArgument("train.momentum must be in [0, 1)");
  }
  if (!(job.train.lr_decay > 0 && job.train.lr_decay <= 1)) {
    return Status::InvalidArgument("train.lr_decay must be in (0, 1] (1 = constant)");
  }
  if (job.train.lr_decay_steps < 0) {
    return Status::InvalidArgument("train.lr_decay_steps must be >= 0 (0 = constant)");
  }
  if (job.partition.task_size < 0) {
    return Status::InvalidArgument("partition.task_size must be >= 0 (0 = automatic)");
  }
  if (!job.partition.tile_bands.empty()) {
    ACAN_RETURN_IF_ERROR(ValidateTileBands(job.partition).WithContext("partition.tile_bands"));
  }
  if (job.runtime.handlers < 1) return Status::InvalidArgument("runtime.handlers must be >= 1");
  if (job.runtime.window < 1) return Status::InvalidArgument("runtime.window must be >= 1");
  return Status::Ok();
}

Result<JobConfig> ParseJobString(std::string_view text, std::string_view source_name) {
  JobConfig job;
  try {
    toml::table root = toml::parse(text, source_name);
    ACAN_RETURN_IF_ERROR(ParseTable(root, source_name, &job));
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(std::string(source_name) + ":" +
                                   std::to_string(e.source().begin.line) + ":" +
                                   std::to_string(e.source().begin.column) +
                                   ": TOML syntax error: " + std::string(e.description()));
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string(source_name) + ": cannot parse: " + e.what());
  }
  return job;
}

Result<JobConfig> ParseJobFile(const std::string& path) {
  ACAN_ASSIGN_OR_RETURN(std::string text,
                        nn::ReadWholeFile(path, "job file", Limits().job_file_bytes));
  ACAN_ASSIGN_OR_RETURN(JobConfig job, ParseJobString(text, path));
  const size_t slash = path.find_last_of('/');
  job.base_dir = slash == std::string::npos ? "" : path.substr(0, slash);
  if (slash == 0) job.base_dir = "/";
  return job;
}

}  // namespace acan
