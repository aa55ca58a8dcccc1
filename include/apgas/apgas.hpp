/// @file The umbrella header of apgas: tasks, async/finish, places, exceptions across places,
/// serialization, runtime, message counts, collectives, aggregators, clocks, atomic and when.
///
/// It lives above the layers it gathers (core, places, clocks), with the apgas::apgas target
/// that links them all: no layer includes a layer above it.
#pragma once

#include "apgas/aggregator.hpp"
#include "apgas/atomic.hpp"
#include "apgas/checkpoint.hpp"
#include "apgas/clock.hpp"
#include "apgas/collectives.hpp"
#include "apgas/core.hpp"
#include "apgas/dist_array.hpp"
#include "apgas/distribution.hpp"
#include "apgas/future.hpp"
#include "apgas/global_ptr.hpp"
#include "apgas/global_ref.hpp"
#include "apgas/message_counts.hpp"
#include "apgas/place.hpp"
#include "apgas/remote_exceptions.hpp"
#include "apgas/runtime.hpp"
#include "apgas/serialization.hpp"
#include "apgas/team.hpp"
