#include "magmadnn/optimizer/factory.h"

#include <sstream>

#include "magmadnn/core/errors.h"
#include "magmadnn/optimizer/adaptive.h"
#include "magmadnn/optimizer/gradient_descent.h"
#include "magmadnn/optimizer/lamb.h"
#include "magmadnn/optimizer/lars.h"

namespace magmadnn::optimizer {

const std::vector<std::string>& kind_names() {
  // In enum order.
  static const std::vector<std::string> names = {"sgd", "adam", "adagrad", "rmsprop", "adamw", "lars", "lamb"};
  return names;
}

const std::string& name_of(optimizer_t kind) {
  const auto& names = kind_names();
  const auto i = static_cast<std::size_t>(kind);
  MAGMADNN_CHECK(i < names.size(), ValueError, "unknown optimizer_t value " << static_cast<int>(kind));
  return names[i];
}

optimizer_t kind_from_name(std::string_view name) {
  const auto& names = kind_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<optimizer_t>(i);
  }
  std::ostringstream known;
  for (std::size_t i = 0; i < names.size(); ++i) known << (i ? ", " : "") << names[i];
  MAGMADNN_THROW(ValueError, "unknown optimizer \"" << name << "\" (known: " << known.str() << ")");
}

template <typename T>
std::shared_ptr<Optimizer<T>> make(const OptimizerSettings& s) {
  std::shared_ptr<Optimizer<T>> opt;
  switch (s.kind) {
    case SGD: opt = std::make_shared<GradientDescent<T>>(s.learning_rate, s.momentum, s.nesterov); break;
    case ADAM: opt = std::make_shared<Adam<T>>(s.learning_rate, s.beta1, s.beta2, s.epsilon); break;
    case ADAGRAD: opt = std::make_shared<AdaGrad<T>>(s.learning_rate, s.epsilon); break;
    case RMSPROP: opt = std::make_shared<RMSProp<T>>(s.learning_rate, s.rho, s.epsilon); break;
    case ADAMW:
      return std::make_shared<AdamW<T>>(s.learning_rate, s.weight_decay, s.beta1, s.beta2, s.epsilon);
    case LARS:
      return std::make_shared<Lars<T>>(
          s.learning_rate, LarsOptions{s.momentum, s.weight_decay, s.trust_coefficient, s.exclude_vectors});
    case LAMB:
      return std::make_shared<Lamb<T>>(
          s.learning_rate, LambOptions{s.beta1, s.beta2, s.epsilon, s.weight_decay, s.exclude_vectors});
    default: name_of(s.kind);  // throws the ValueError
  }
  if (s.weight_decay > 0.0) opt->set_weight_decay(s.weight_decay);
  return opt;
}

template std::shared_ptr<Optimizer<float>> make<float>(const OptimizerSettings&);
template std::shared_ptr<Optimizer<double>> make<double>(const OptimizerSettings&);

}  // namespace magmadnn::optimizer
