// A protocol module: one protocol of the places layer (active messages, the distributed finish,
// the run's end; clocks and load balancing from their own folders), with its own message kinds
// and state. The message dispatcher owns the modules of its place and routes each message to the
// handler its kind names (see message_dispatcher.hpp).
//
// Modules of this folder are created by the runtime. A module of another folder registers a
// factory from a static initialiser (APGAS_REGISTER_PROTOCOL_MODULE): every runtime creates the
// registered modules at start-up, in the order of their names, before the places synchronise.
// So every place registers the same kinds in the same order (one binary runs everywhere) and a
// kind names the same handler at every place, as Converse's CmiRegisterHandler does.
#pragma once

namespace apgas::detail {

class message_dispatcher;

/// @brief Base of the protocol modules a dispatcher owns (it destroys them, in the reverse order
/// of their creation, before its transport).
class protocol_module {
public:
  virtual ~protocol_module() = default;

protected:
  protocol_module() = default;
  protocol_module(const protocol_module&) = delete;
  protocol_module& operator=(const protocol_module&) = delete;
};

/// @brief Creates a module (or several) for `dispatcher`, with message_dispatcher::add_module.
using protocol_module_factory = void (*)(message_dispatcher& dispatcher);

/// @brief Registers a module factory that every runtime of this process calls at start-up
/// (in the order of the names, which must be unique). Call it from a static initialiser,
/// before main. @return true (for the initialiser's variable).
bool register_protocol_module(const char* name, protocol_module_factory make);

} // namespace apgas::detail

/// @brief Registers `factory` (a protocol_module_factory) under `name` from a static
/// initialiser. Put it in the source file that defines the module's public entry points, so
/// that a program that uses the module links the registration too.
#define APGAS_REGISTER_PROTOCOL_MODULE(name, factory)                                              \
  [[maybe_unused]] static const bool apgas_protocol_module_registered_##name =                     \
      ::apgas::detail::register_protocol_module(#name, factory)
