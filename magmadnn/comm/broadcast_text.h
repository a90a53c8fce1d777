/// @file broadcast_text.h
/// broadcast_text: rank `root`'s string on every rank of a communicator
/// (its length, then its bytes packed into 64-bit words, since
/// communicators carry numbers, not bytes).
///
/// Requires: every rank calls it at the same point with the same root (a
/// collective). Guarantees: on return every rank's `text` equals root's,
/// byte for byte (NULs included); with one rank it returns at once.
#pragma once

#include <string>

#include "magmadnn/comm/communicator.h"

namespace magmadnn::distributed {

void broadcast_text(Communicator& comm, std::string& text, int root);

}  // namespace magmadnn::distributed
