/// @file Everything of one place (core): tasks, async, finish, the one-place runtime.
/// Programs include <apgas/apgas.hpp>, which adds places.
#pragma once

#include "apgas/exceptions.hpp"
#include "apgas/finish.hpp"
#include "apgas/local_runtime.hpp"
#include "apgas/on_demand.hpp"
#include "apgas/options.hpp"
#include "apgas/task.hpp"
