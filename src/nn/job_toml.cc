// A JobConfig written back as a job file (ToToml, acan/job.h): what ParseJobString reads back to
// the same configuration, relative paths resolved against the job's folder.
#include <toml++/toml.h>

#include <filesystem>
#include <sstream>

#include "acan/job.h"
#include "common/byte_size.h"

namespace acan {

std::string ToToml(const JobConfig& job) {
  auto ints = [](const std::vector<int64_t>& v) {
    toml::array a;
    for (int64_t x : v) a.push_back(x);
    return a;
  };
  toml::array speeds;
  for (double x : job.chaos.speeds) speeds.push_back(x);
  auto path = [&](const std::string& p) {
    return p.empty() ? p : std::filesystem::absolute(job.Resolve(p)).lexically_normal().string();
  };
  toml::table model{
      {"activation", std::string(ToString(job.model.activation))},
      {"loss", std::string(ToString(job.model.loss))},
      {"init", job.model.init == "xavier_uniform" || job.model.init == "kaiming_uniform" ||
                       job.model.init == "zeros"
                   ? job.model.init
                   : path(job.model.init)}};
  if (job.model.layer.empty()) {
    model.insert("layers", ints(job.model.layers));
  } else {
    toml::array list;
    for (const LayerConfig& l : job.model.layer) {
      toml::table t{{"type", std::string(ToString(l.type))}};
      const bool conv = l.type == LayerType::kConv2d;
      if (conv || l.type == LayerType::kLinear) {
        t.insert(conv ? "in_channels" : "in_features", l.in);
        t.insert(conv ? "out_channels" : "out_features", l.out);
        t.insert("bias", l.bias);
      }
      if (conv || l.type == LayerType::kMaxPool2d || l.type == LayerType::kAvgPool2d) {
        t.insert("kernel_size", toml::array{l.kernel_h, l.kernel_w});
        if (l.stride > 0) t.insert("stride", l.stride);
        t.insert("padding", l.padding);
      }
      if (l.type == LayerType::kDropout) t.insert("p", l.p);
      list.push_back(std::move(t));
    }
    model.insert("layer", std::move(list));
    if (!job.model.input_shape.empty()) model.insert("input_shape", ints(job.model.input_shape));
  }
  toml::table data{{"source", std::string(ToString(job.data.source))},
                   {"samples", job.data.samples},
                   {"limit", job.data.limit},
                   {"path", path(job.data.path)},
                   {"images", path(job.data.images)},
                   {"labels", path(job.data.labels)},
                   {"shuffle", job.data.shuffle},
                   {"scale", std::string(ToString(job.data.scale))},
                   {"standardize", job.data.standardize},
                   {"test_path", path(job.data.test_path)},
                   {"test_images", path(job.data.test_images)},
                   {"test_labels", path(job.data.test_labels)},
                   {"test_limit", job.data.test_limit}};
  toml::table train{{"epochs", job.train.epochs},
                    {"batch", job.train.batch},
                    {"lr", job.train.lr},
                    {"momentum", job.train.momentum},
                    {"lr_decay", job.train.lr_decay},
                    {"lr_decay_steps", job.train.lr_decay_steps},
                    {"seed", static_cast<int64_t>(job.train.seed)}};
  toml::table partition{{"strategy", std::string(ToString(job.partition.strategy))},
                        {"task_size", job.partition.task_size},
                        {"stages", job.partition.stages}};
  if (!job.partition.tile_bands.empty()) {
    toml::array bands;
    for (const TileBand& b : job.partition.tile_bands) {
      toml::table band{{"edge", b.edge}, {"share", b.share}};
      if (b.budget > 0) band.insert("budget", FormatByteSize(b.budget));
      bands.push_back(std::move(band));
    }
    partition.insert("tile_bands", std::move(bands));
  }
  toml::table runtime{{"handlers", job.runtime.handlers},
                      {"window", job.runtime.window},
                      {"space", job.runtime.space},
                      {"speculate", job.runtime.speculate}};
  if (!job.runtime.handler_memory.empty()) {
    toml::array sizes;
    for (int64_t b : job.runtime.handler_memory) sizes.push_back(FormatByteSize(b));
    runtime.insert("handler_memory", std::move(sizes));
  }
  if (job.runtime.manager_memory > 0)
    runtime.insert("manager_memory", FormatByteSize(job.runtime.manager_memory));
  toml::table root{{"model", std::move(model)},
                   {"data", std::move(data)},
                   {"train", std::move(train)},
                   {"partition", std::move(partition)},
                   {"runtime", std::move(runtime)}};
  if (job.chaos.enabled) {
    root.insert("chaos", toml::table{{"speeds", std::move(speeds)},
                                     {"speed_change_s", job.chaos.speed_change_s},
                                     {"crash_interval_s", job.chaos.crash_interval_s},
                                     {"crash_probability", job.chaos.crash_probability},
                                     {"crash_manager", job.chaos.crash_manager},
                                     {"speed_change_steps", job.chaos.speed_change_steps},
                                     {"crash_interval_steps", job.chaos.crash_interval_steps}});
  }
  std::ostringstream out;
  out << toml::toml_formatter(root);
  return out.str();
}

}  // namespace acan
