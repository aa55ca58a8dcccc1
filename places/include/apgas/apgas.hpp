/// @file The umbrella header of apgas: tasks, async/finish, places, serialization, runtime,
/// message counts.
#pragma once

#include "apgas/core.hpp"
#include "apgas/global_ref.hpp"
#include "apgas/message_counts.hpp"
#include "apgas/place.hpp"
#include "apgas/runtime.hpp"
#include "apgas/serialization.hpp"
