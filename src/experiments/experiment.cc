#include "experiments/experiment.h"

#include "experiments/support.h"

namespace acan::experiments {

const std::vector<Experiment>& Experiments() {
  static const std::vector<Experiment> kAll = {
      {"feasibility", &Feasibility},
      {"adaptivity", &Adaptivity},
      {"robustness", &Robustness},
  };
  return kAll;
}

const Experiment* FindExperiment(std::string_view name) {
  for (const Experiment& e : Experiments()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

}  // namespace acan::experiments
