/// @file init.h
/// Process-wide set-up and tear-down, as in MagmaDNN v1 programs.
///
/// Neither call is required by the library itself (backends start on first
/// use), but v1 programs call both: magmadnn_init() probes the devices so the
/// first timed step does not pay for it, and magmadnn_finalize() waits for
/// queued GPU work and returns cached pool memory to the system. Objects that
/// still hold memory after finalize stay valid and free it normally.
#pragma once

namespace magmadnn {

void magmadnn_init();
void magmadnn_finalize();

}  // namespace magmadnn
