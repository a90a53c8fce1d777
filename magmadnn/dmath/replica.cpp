#include "magmadnn/dmath/replica.h"

#include <algorithm>

#include "magmadnn/dmath/gathered.h"

namespace magmadnn::distributed::dmath {

template <typename T>
void Replica<T>::start() {
  const std::uint64_t stamp = source_->stamp();
  if (pending_ ? pending_stamp_ == stamp : (have_ && copied_stamp_ == stamp)) return;
  wait();  // one copy in flight at a time: an older one finishes first
  const Layout& l = source_->layout();
  Communicator& comm = source_->comm();
  whole_.resize(static_cast<std::size_t>(l.size()));
  ++stats_.copies;
  if ((l.is_replicated() && l.group().empty()) || comm.size() == 1) {
    // Every rank (or the only one) holds it all: nothing to send.
    if (l.holds(comm.rank())) std::copy_n(source_->local_data(), l.size(), whole_.begin());
    copied_stamp_ = stamp;
    have_ = true;
    return;
  }
  const std::int64_t slot = l.max_local_size();
  detail::pad_local(source_->local_data(), source_->local_rows() * source_->local_cols(), slot, send_);
  recv_.resize(static_cast<std::size_t>(slot) * static_cast<std::size_t>(comm.size()));
  request_ = comm.iallgather(host_buffer(static_cast<const T*>(send_.data()), send_.size()),
                             host_buffer(recv_.data(), recv_.size()));
  pending_ = true;
  pending_stamp_ = stamp;
}

template <typename T>
void Replica<T>::wait() {
  if (!pending_) return;
  request_->wait();
  request_.reset();
  pending_ = false;
  const Layout& l = source_->layout();
  detail::unpack_gathered(l, source_->comm().size(), recv_.data(), l.max_local_size(), whole_.data());
  copied_stamp_ = pending_stamp_;
  have_ = true;
}

template <typename T>
const std::vector<T>& Replica<T>::get() {
  wait();
  if (have_ && copied_stamp_ == source_->stamp()) {
    ++stats_.reuses;
    return whole_;
  }
  start();
  wait();
  return whole_;
}

template class Replica<float>;
template class Replica<double>;

}  // namespace magmadnn::distributed::dmath
