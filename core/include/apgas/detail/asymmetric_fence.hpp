// The deque's store-load fence split between its two sides, so that the frequent side pays
// nothing. A worker pops its own deque once per task; a thief steals rarely. Linux's
// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) makes every running thread of the process pass
// a full memory barrier before it returns (an interrupt on each CPU that runs one; a thread
// that is not running passes one when it is switched back in). So a thief that calls it between
// its two reads (m_top, then m_bottom) orders the owner's store of m_bottom before the owner's
// read of m_top as the owner's own fence would: either the owner's store came before the
// barrier it was made to pass, and the thief's later read of m_bottom sees it; or the store
// came after, and so did the owner's read of m_top, which then sees at least the value the
// thief read before the barrier. The owner keeps only a compiler barrier. This is the "friendly
// barrier" of the seed papers (the victim pays nothing until a thief arrives), with the kernel
// doing the interrupting.
//
// Where the kernel lacks the command (before Linux 4.14), or with
// --asymmetric-fence no, both sides keep their seq_cst fences. The only membarrier calls.
#pragma once

namespace apgas::detail {

/// @brief True while owners pop with a compiler barrier only and thieves call heavy_fence()
/// (see above). Written by the scheduler before its workers start and after they stopped (one
/// scheduler at a time), read by every pop and steal: no atomic needed.
inline bool g_asymmetric_fence = false;

/// @brief Registers the process for membarrier's private expedited command (once is enough,
/// more is harmless). @return true if heavy_fence() can be used.
bool register_asymmetric_fence() noexcept;

/// @brief The thief's side: a full memory barrier on every running thread of the process.
/// pre: register_asymmetric_fence() returned true.
void heavy_fence() noexcept;

} // namespace apgas::detail
