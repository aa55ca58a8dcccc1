// What a forgotten co_await gets: a compile error. `apgas::async(t);` without co_await starts
// nothing (the awaitable is built and thrown away): the first mistake everybody makes with
// coroutines, and a silent one. Every function that returns an apgas awaitable is marked
// APGAS_AWAIT_IT, and a discarded result of one is an error in every file that includes apgas
// (GCC and Clang report [[nodiscard]] under -Wunused-result). A program that must discard one
// (or keep the warnings as they were) defines APGAS_ALLOW_DISCARDED_RESULTS before including
// apgas; a cast to void discards one result on purpose.
#pragma once

/// @brief Marks a function whose result must be co_awaited.
#define APGAS_AWAIT_IT                                                                             \
  [[nodiscard("apgas: co_await it: an async, finish, at, atomic, when or advance that is not "     \
              "awaited does nothing (inside an atomic block, write (void)apgas::atomic(...): "     \
              "it runs as part of the block)")]]

#if !defined(APGAS_ALLOW_DISCARDED_RESULTS) && (defined(__GNUC__) || defined(__clang__))
#pragma GCC diagnostic error "-Wunused-result"
#endif
