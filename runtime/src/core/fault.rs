//! [`Fault`]: whose fault a failure is. Every layer's error enum says it
//! (`fault()`), together with whether a retry can help (`retryable()`), so
//! that a caller can tell a mistake to fix from a failure to retry.

/// Whose fault a failure is, and so who can act on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    /// The user's: the job, its options or its inputs do not fit what is
    /// asked of them (a checkpoint of another job, per-subtask state asked
    /// to rescale, a sink called out of order). Doing the same again fails
    /// the same way; the user must change something.
    User,
    /// The outside world's: the file system failed, or holds bytes that are
    /// not what weir wrote (an I/O error, a truncated or corrupt file, a
    /// file removed behind weir's back). A retry helps when the cause was
    /// transient.
    Outside,
    /// Ours: weir broke one of its own invariants; a bug to report.
    Ours,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::User => "the user's",
            Self::Outside => "the outside world's",
            Self::Ours => "weir's",
        })
    }
}
