// NeuralNetwork / Model (C++ model::NeuralNetwork<float>, model::Model<float>)
// and their Params: fit on NumPy arrays or Tensors without copying the data
// set, Python callbacks, predict returning NumPy, save / load of the
// command line's checkpoint format. Long calls release the GIL; callbacks
// take it back; Ctrl-C stops fit between batches with KeyboardInterrupt.
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <sstream>
#include <limits>

#include "common.h"
#include "magmadnn/model/callbacks.h"
#include "magmadnn/model/model_class.h"
#include "magmadnn/model/neural_network.h"

namespace magmadnn::python {
namespace {

using Net = model::NeuralNetwork<float>;
using LayerPtr = std::shared_ptr<layer::Layer<float>>;

optimizer::loss_t loss_from_name(const std::string& name) {
  if (name == "cross_entropy") return optimizer::CROSS_ENTROPY;
  if (name == "mse") return optimizer::MSE;
  MAGMADNN_THROW(ValueError, "loss: unknown loss '" << name << "' (cross_entropy, mse)");
}
const char* loss_name(optimizer::loss_t l) { return l == optimizer::MSE ? "mse" : "cross_entropy"; }

nb::dict record_dict(const model::EpochRecord& r) {
  nb::dict d;
  d["epoch"] = r.epoch;
  d["loss"] = r.train_loss;
  d["accuracy"] = r.train_accuracy;
  d["val_loss"] = r.val_loss;
  d["val_accuracy"] = r.val_accuracy;
  d["seconds"] = r.seconds;
  d["samples_per_second"] = r.samples_per_second;
  d["learning_rate"] = r.learning_rate;
  return d;
}

nb::list history_list(const model::History& h) {
  nb::list l;
  for (const auto& r : h) l.append(record_dict(r));
  return l;
}

// A Python callback: an object with any of on_train_begin(info),
// on_epoch_begin(epoch), on_batch_end(logs), on_epoch_end(record),
// on_train_end(history), or a callable called with each epoch's record. A
// hook that returns True stops training (after that batch or epoch); one
// that raises stops fit with that exception. Runs with the GIL held.
class PyCallback : public model::Callback<float> {
 public:
  explicit PyCallback(nb::object obj) : obj_(std::move(obj)) {}
  ~PyCallback() override {
    nb::gil_scoped_acquire gil;  // obj_ is released with the GIL held
    obj_.reset();
  }

  void on_train_begin(Net& m, const model::TrainInfo& i) override {
    call(m, "on_train_begin", [&] {
      nb::dict d;
      d["first_epoch"] = i.first_epoch;
      d["last_epoch"] = i.last_epoch;
      d["samples"] = i.samples;
      d["batches_per_epoch"] = i.batches_per_epoch;
      d["batch_size"] = i.batch_size;
      d["has_validation"] = i.has_validation;
      return nb::object(d);
    });
  }
  void on_epoch_begin(Net& m, unsigned int e) override {
    call(m, "on_epoch_begin", [&] { return nb::object(nb::int_(e)); });
  }
  void on_batch_end(Net& m, const model::BatchLogs& l) override {
    call(m, "on_batch_end", [&] {
      nb::dict d;
      d["epoch"] = l.epoch;
      d["batch"] = l.batch;
      d["batches"] = l.batches;
      d["size"] = l.size;
      d["loss"] = l.loss;
      d["epoch_loss"] = l.epoch_loss;
      d["epoch_accuracy"] = l.epoch_accuracy;
      d["samples_done"] = l.samples_done;
      d["seconds"] = l.seconds;
      return nb::object(d);
    });
  }
  void on_epoch_end(Net& m, const model::EpochRecord& r) override {
    call(m, "on_epoch_end", [&] { return nb::object(record_dict(r)); });
  }
  void on_train_end(Net& m, const model::History& h) override {
    call(m, "on_train_end", [&] { return nb::object(history_list(h)); });
  }

 private:
  template <typename MakeArg>
  void call(Net& m, const char* hook, MakeArg make_arg) {
    nb::gil_scoped_acquire gil;
    nb::object fn;
    if (nb::hasattr(obj_, hook)) {
      fn = obj_.attr(hook);
    } else if (std::string(hook) == "on_epoch_end" && PyCallable_Check(obj_.ptr())) {
      fn = obj_;
    } else {
      return;
    }
    nb::object result = fn(make_arg());
    if (result.is(nb::handle(Py_True))) m.stop_training();
  }
  nb::object obj_;
};

// x against the network's input pattern (-1: any size), naming the argument.
void check_input(const Net& net, const Tensor<float>& x, const char* xn) {
  const std::vector<std::int64_t> pattern = net.input()->pattern();
  bool fits = static_cast<std::size_t>(x.ndim()) == pattern.size();
  for (std::size_t i = 0; fits && i < pattern.size(); ++i) fits = pattern[i] < 0 || pattern[i] == x.shape()[i];
  if (!fits) {
    std::ostringstream p;
    for (std::size_t i = 0; i < pattern.size(); ++i) p << (i ? ", " : "(") << pattern[i];
    MAGMADNN_THROW(ShapeError, xn << ": shape " << x.shape() << " does not fit the network's input " << p.str()
                                  << ") (-1: any size)");
  }
}

// x and y as the model reads them: float32, samples on axis 0, y one row
// per sample of x. Arrays are shared, not copied (a non-contiguous one is
// copied once, with a warning).
void data_args(nb::handle x, nb::handle y, const char* xn, const char* yn, Tensor<float>& tx, Tensor<float>& ty) {
  tx = tensor_arg<float>(x, xn, true, true);
  ty = tensor_arg<float>(y, yn, true, true);
  MAGMADNN_CHECK(tx.ndim() >= 1 && ty.ndim() >= 1, ValueError, xn << ", " << yn << ": need at least one axis");
  MAGMADNN_CHECK(ty.shape()[0] == tx.shape()[0], ValueError,
                 yn << ": " << ty.shape()[0] << " rows for the " << tx.shape()[0] << " samples of " << xn
                    << " (shapes " << ty.shape() << " and " << tx.shape() << ")");
}

nb::list fit(nb::handle self, nb::handle x, nb::handle y, nb::handle epochs, nb::handle batch_size,
             nb::handle validation_data, nb::handle callbacks, bool verbose, const std::string& checkpoint_path,
             unsigned int checkpoint_every_epochs, std::int64_t checkpoint_every_batches, bool resume) {
  Net& net = nb::cast<Net&>(self);
  Tensor<float> tx, ty, vx, vy;
  data_args(x, y, "x", "y", tx, ty);
  check_input(net, tx, "x");
  model::FitOptions<float> o;
  if (!validation_data.is_none()) {
    MAGMADNN_CHECK(PySequence_Check(validation_data.ptr()) && nb::len(validation_data) == 2, ValueError,
                   "validation_data: expected a pair (x_val, y_val)");
    data_args(validation_data[0], validation_data[1], "validation_data[0]", "validation_data[1]", vx, vy);
    check_input(net, vx, "validation_data[0]");
    o.validation_x = &vx;
    o.validation_y = &vy;
  }
  if (!epochs.is_none()) {
    const auto e = nb::cast<std::int64_t>(epochs);
    MAGMADNN_CHECK(e >= 1 && e <= std::numeric_limits<int>::max(), ValueError, "epochs: must be >= 1, got " << e);
    o.epochs = static_cast<unsigned int>(e);
  }
  if (!batch_size.is_none()) {
    const auto b = nb::cast<std::int64_t>(batch_size);
    MAGMADNN_CHECK(b >= 1 && b <= std::numeric_limits<int>::max(), ValueError, "batch_size: must be >= 1, got " << b);
    net.params().batch_size = static_cast<unsigned int>(b);
  }
  o.callbacks = callbacks_arg(callbacks);
  o.callbacks.push_back(signal_check());
  o.verbose = verbose;
  o.checkpoint_path = checkpoint_path;
  o.checkpoint_every_epochs = checkpoint_every_epochs;
  o.checkpoint_every_batches = checkpoint_every_batches;
  o.resume = resume;
  model::History h;
  {
    nb::gil_scoped_release release;
    h = net.fit(tx, ty, o);
  }
  return history_list(h);
}

// A fresh result tensor handed to NumPy without a copy.
nb::object to_numpy(Tensor<float>&& t) {
  if (t.on_device()) t = t.to(HOST);
  nb::object owner = nb::cast(PyTensor{std::move(t)});
  return numpy_view(nb::cast<PyTensor&>(owner), owner);
}

model::nn_params_t make_params(unsigned batch_size, unsigned n_epochs, double learning_rate, const std::string& loss,
                               const std::string& optimizer, double momentum, double weight_decay, bool shuffle) {
  model::nn_params_t p(batch_size, n_epochs, learning_rate);
  p.loss = loss_from_name(loss);
  p.optimizer = optimizer::kind_from_name(optimizer);
  p.momentum = momentum;
  p.weight_decay = weight_decay;
  p.shuffle = shuffle;
  return p;
}

}  // namespace

// Lets Ctrl-C (SIGINT) stop fit between batches: Python's handler only sets
// a flag while fit holds no GIL; this checks it after every batch.
class SignalCheck : public model::Callback<float> {
 public:
  void on_batch_end(Net&, const model::BatchLogs&) override {
    nb::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw nb::python_error();
  }
};

std::vector<std::shared_ptr<model::Callback<float>>> callbacks_arg(nb::handle callbacks) {
  std::vector<std::shared_ptr<model::Callback<float>>> out;
  if (callbacks.is_none()) return out;
  MAGMADNN_CHECK(PySequence_Check(callbacks.ptr()) && !nb::isinstance<nb::str>(callbacks), ValueError,
                 "callbacks: expected a list, got " << nb::str(nb::handle(Py_TYPE(callbacks.ptr()))).c_str());
  std::size_t i = 0;
  for (nb::handle cb : callbacks) {
    if (nb::isinstance<model::Callback<float>>(cb)) {
      out.push_back(nb::cast<std::shared_ptr<model::Callback<float>>>(cb));
    } else {
      bool has_hook = PyCallable_Check(cb.ptr()) != 0;
      for (const char* h : {"on_train_begin", "on_epoch_begin", "on_batch_end", "on_epoch_end", "on_train_end"})
        has_hook = has_hook || nb::hasattr(cb, h);
      MAGMADNN_CHECK(has_hook, ValueError,
                     "callbacks[" << i << "]: expected a callable or an object with on_batch_end, on_epoch_end, ... "
                                         "methods, got "
                                  << nb::str(nb::handle(Py_TYPE(cb.ptr()))).c_str());
      out.push_back(std::make_shared<PyCallback>(nb::borrow(cb)));
    }
    ++i;
  }
  return out;
}

std::shared_ptr<model::Callback<float>> signal_check() { return std::make_shared<SignalCheck>(); }

// Params and the C++ callbacks.
static void bind_params(nb::module_& m) {
  nb::class_<model::nn_params_t>(m, "Params", "The paper's Param struct (C++ model::nn_params_t).")
      .def(nb::new_(&make_params), nb::arg("batch_size") = 32, nb::arg("n_epochs") = 1, nb::arg("learning_rate") = 0.05,
           nb::arg("loss") = "cross_entropy", nb::arg("optimizer") = "sgd", nb::arg("momentum") = 0.0,
           nb::arg("weight_decay") = 0.0, nb::arg("shuffle") = true,
           "batch_size and n_epochs >= 1, learning_rate finite and >= 0 (magmadnn.ValueError naming the field\n"
           "otherwise); loss: cross_entropy or mse; optimizer: sgd, adam, adagrad, rmsprop, adamw, lars, lamb.")
      .def_rw("batch_size", &model::nn_params_t::batch_size)
      .def_rw("n_epochs", &model::nn_params_t::n_epochs)
      .def_rw("learning_rate", &model::nn_params_t::learning_rate)
      .def_rw("momentum", &model::nn_params_t::momentum)
      .def_rw("weight_decay", &model::nn_params_t::weight_decay)
      .def_rw("beta1", &model::nn_params_t::beta1)
      .def_rw("beta2", &model::nn_params_t::beta2)
      .def_rw("epsilon", &model::nn_params_t::epsilon)
      .def_rw("nesterov", &model::nn_params_t::nesterov)
      .def_rw("shuffle", &model::nn_params_t::shuffle)
      .def_prop_rw("loss", [](const model::nn_params_t& p) { return std::string(loss_name(p.loss)); },
                   [](model::nn_params_t& p, const std::string& n) { p.loss = loss_from_name(n); })
      .def_prop_rw("optimizer", [](const model::nn_params_t& p) { return optimizer::name_of(p.optimizer); },
                   [](model::nn_params_t& p, const std::string& n) { p.optimizer = optimizer::kind_from_name(n); });

  nb::class_<model::Callback<float>>(m, "NativeCallback", "A callback implemented in C++.");
  nb::class_<model::EarlyStopping<float>, model::Callback<float>>(m, "EarlyStopping",
      "Stops fit once `monitor` (val_loss, loss, val_accuracy, accuracy) has gone `patience` epochs without\n"
      "improving by more than min_delta (C++ model::EarlyStopping).")
      .def(nb::init<std::string, unsigned int, double, bool>(), nb::arg("monitor") = "val_loss",
           nb::arg("patience") = 0, nb::arg("min_delta") = 0.0, nb::arg("restore_best_weights") = false)
      .def_prop_ro("stopped_epoch", &model::EarlyStopping<float>::stopped_epoch)
      .def_prop_ro("best_epoch", &model::EarlyStopping<float>::best_epoch);
}

void bind_model(nb::module_& m) {
  bind_params(m);
  nb::class_<Net>(m, "NeuralNetwork",
      "A chain of layers with a loss and an optimizer (C++ model::NeuralNetwork<float>), trained by fit()\n"
      "and used by evaluate() / predict(). The data: x with the samples on axis 0, y one row per sample\n"
      "(one-hot rows for classification; magmadnn.one_hot makes them), float32.")
      .def("__init__", [](Net* self, std::vector<LayerPtr> layers, const std::string& loss, const std::string& opt,
                          nb::handle params) {
        model::nn_params_t p = params.is_none() ? model::nn_params_t{} : nb::cast<model::nn_params_t>(params);
        new (self) Net(std::move(layers), loss_from_name(loss), optimizer::kind_from_name(opt), p);
      }, nb::arg("layers"), nb::arg("loss") = "cross_entropy", nb::arg("optimizer") = "sgd",
      nb::arg("params").none() = nb::none(),
      "NeuralNetwork(layers, loss, optimizer, params): the layers form a chain from an input layer to the\n"
      "prediction; loss cross_entropy or mse; optimizer by name; params a magmadnn.Params.")
      .def("fit", &fit, nb::arg("x"), nb::arg("y"), nb::arg("epochs").none() = nb::none(), nb::arg("batch_size").none() = nb::none(),
           nb::arg("validation_data").none() = nb::none(), nb::arg("callbacks").none() = nb::none(), nb::arg("verbose") = false,
           nb::arg("checkpoint_path") = "", nb::arg("checkpoint_every_epochs") = 0,
           nb::arg("checkpoint_every_batches") = 0, nb::arg("resume") = false,
           "Trains on (x, y) and returns the history (one dict per epoch: loss, accuracy, val_loss, ...).\n"
           "x and y are NumPy arrays (also read-only ones, or anything with __dlpack__ / the buffer protocol)\n"
           "or Tensors, float32, used in place: the data set is not copied (a non-contiguous array is copied once, with a\n"
           "RuntimeWarning). y must have one row per sample of x. epochs: default params.n_epochs.\n"
           "callbacks: objects with on_train_begin / on_epoch_begin / on_batch_end / on_epoch_end /\n"
           "on_train_end methods (a method returning True stops training; one that raises stops fit with\n"
           "that exception), callables (called with each epoch's record), or magmadnn.EarlyStopping.\n"
           "Checkpoints (docs/checkpoint_format.md) are written atomically to checkpoint_path every\n"
           "checkpoint_every_epochs epochs / checkpoint_every_batches steps; resume continues from it.\n"
           "The GIL is released while training; Ctrl-C stops between batches with KeyboardInterrupt.")
      .def("evaluate", [](Net& net, nb::handle x, nb::handle y) {
        Tensor<float> tx, ty;
        data_args(x, y, "x", "y", tx, ty);
        check_input(net, tx, "x");
        model::Evaluation e;
        {
          nb::gil_scoped_release release;
          e = net.evaluate(tx, ty);
        }
        nb::dict d;
        d["loss"] = e.loss;
        d["accuracy"] = e.accuracy;
        d["samples"] = e.samples;
        return d;
      }, nb::arg("x"), nb::arg("y"), "Loss and accuracy over (x, y) in eval mode: {'loss', 'accuracy', 'samples'}.")
      .def("predict", [](Net& net, nb::handle x) {
        Tensor<float> tx = tensor_arg<float>(x, "x", true, true);
        check_input(net, tx, "x");
        Tensor<float> out;
        {
          nb::gil_scoped_release release;
          out = net.predict(tx);
        }
        return to_numpy(std::move(out));
      }, nb::arg("x"), "The predictions {N, ...} for x {N, ...} as a NumPy array (softmax probabilities when the\n"
                       "network ends in a softmax).")
      .def("save", [](Net& net, const std::string& path) {
        nb::gil_scoped_release release;
        net.save(path);
      }, nb::arg("path"), "Writes the full training state atomically, in the command line's checkpoint format.")
      .def("load", [](Net& net, const std::string& path) {
        nb::gil_scoped_release release;
        net.load(path);
      }, nb::arg("path"), "Restores what save() (or `magmadnn train`) wrote; validates the whole file first\n"
                          "(magmadnn.IOError for a bad file, ShapeError naming a tensor of another shape).")
      .def("stop_training", &Net::stop_training, "Asks a running fit to stop after the current batch.")
      .def("summary", &Net::summary, "A table: layer, output shape, parameter count; then totals.")
      .def_prop_ro("num_params", &Net::num_params)
      .def_prop_ro("history", [](const Net& n) { return history_list(n.history()); })
      .def_prop_ro("params", [](Net& n) { return n.params(); }, "A copy of the network's Params.")
      .def_prop_ro("parameters", [](const Net& n) {
        nb::list l;
        for (const auto& v : n.parameters()) {
          const Tensor<float>& t = v->value();
          l.append(PyTensor{t.view(t.shape())});
        }
        return l;
      }, "The trainable tensors, sharing the network's memory.");

  nb::class_<model::Model<float>, Net>(m, "Model",
      "The paper's form: Model(params, layers), with the loss and optimizer taken from params.")
      .def(nb::init<model::nn_params_t, std::vector<LayerPtr>>(), nb::arg("params"), nb::arg("layers"));
}

}  // namespace magmadnn::python
