/// @file Checkpoint and restart (fail-stop): a job writes checkpoints while it runs, and a new
/// job, on any number of places, resumes from the newest complete one.
///
///     launch/apgasrun -n 64 ./uts ... --checkpoint /shared/ck --checkpoint-every 300
///     # the job dies (a node fails, the time limit arrives); later, on other nodes:
///     launch/apgasrun -n 32 ./uts ... --resume /shared/ck
///
/// Every apgas::glb run is checkpointed with nothing in the program beyond its bag, which is
/// serializable already. See docs/guide/checkpoint.md for what is saved, and when a checkpoint
/// is refused.
#pragma once

#include "apgas/exceptions.hpp"

namespace apgas {

/// @brief A checkpoint that cannot be resumed from: missing, incomplete, truncated,
/// corrupted, or written by another program or with other parameters. what() is one line
/// that names the checkpoint and says what is wrong. A usage error: the apps exit with code 2.
class checkpoint_error : public usage_error {
public:
  using usage_error::usage_error;
};

} // namespace apgas
