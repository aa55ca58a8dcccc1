/// @file The umbrella header of apgas.
#pragma once

#include "apgas/exceptions.hpp"
#include "apgas/finish.hpp"
#include "apgas/options.hpp"
#include "apgas/runtime.hpp"
#include "apgas/task.hpp"
