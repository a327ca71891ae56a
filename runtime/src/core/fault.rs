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

/// Whether an I/O error may pass if the same operation is tried again: a
/// full disk may be cleaned up, an I/O error or an interrupted network
/// file system may recover. Not when the path cannot be what it is asked
/// to be, or weir may not change it, which the user must fix: permission
/// denied, a read-only file system, a directory that is a regular file (or
/// the reverse), a file that exists where weir creates one, a name the
/// file system refuses, a file larger than the process or the file system
/// allows (a replay writes the same bytes again).
pub fn io_retryable(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    !matches!(
        e.kind(),
        ErrorKind::PermissionDenied
            | ErrorKind::ReadOnlyFilesystem
            | ErrorKind::NotADirectory
            | ErrorKind::IsADirectory
            | ErrorKind::AlreadyExists
            | ErrorKind::InvalidFilename
            | ErrorKind::FileTooLarge
            | ErrorKind::InvalidInput
            | ErrorKind::Unsupported
    )
}

#[cfg(test)]
mod tests {
    use std::io::{Error, ErrorKind};

    use super::io_retryable;

    #[test]
    fn io_errors_that_stay_are_not_retryable() {
        for kind in [
            ErrorKind::PermissionDenied,
            ErrorKind::ReadOnlyFilesystem,
            ErrorKind::NotADirectory,
            ErrorKind::IsADirectory,
            ErrorKind::AlreadyExists,
        ] {
            assert!(!io_retryable(&Error::from(kind)), "{kind:?}");
        }
        // What `create_dir_all` says of a regular file in the way.
        assert!(!io_retryable(&Error::from_raw_os_error(libc::EEXIST)));
        assert!(!io_retryable(&Error::from_raw_os_error(libc::EACCES)));
        assert!(!io_retryable(&Error::from_raw_os_error(libc::ENOTDIR)));
        assert!(!io_retryable(&Error::from_raw_os_error(libc::EFBIG)));
    }

    #[test]
    fn io_errors_that_may_pass_are_retryable() {
        for errno in [libc::ENOSPC, libc::EIO, libc::ENOENT, libc::EDQUOT] {
            assert!(
                io_retryable(&Error::from_raw_os_error(errno)),
                "{}",
                Error::from_raw_os_error(errno)
            );
        }
        assert!(io_retryable(&Error::from(ErrorKind::StorageFull)));
        assert!(io_retryable(&Error::other("transient")));
    }
}
