/// @file The floor of a spawn, for bench_apps: what a coroutine per call with pooled frames and
/// an owner-side deque costs at the least (one thread: no fence, no count, no finish, no
/// stealing). fib(n) with one spawn per call, as apgas_apps::fib without a cutoff. Its time per
/// task is what apgas' one-worker time per task is compared with.
#pragma once

namespace apgas_bench::floor_peer {

/// @brief fib(n): each call spawns fib(n-1) (its continuation pushed, then popped at the
/// child's end) and calls fib(n-2).
long fib(int n);

} // namespace apgas_bench::floor_peer
