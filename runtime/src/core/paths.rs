//! Where a path lies in the file system, links and `..` resolved: whether
//! a directory weir writes into lies in another it must keep apart (a
//! savepoint's target inside a job's output).

use std::path::{Path, PathBuf};

/// `path` resolved: canonical if it exists, else made absolute as written.
pub fn resolved(path: &Path) -> PathBuf {
    path.canonicalize()
        .unwrap_or_else(|_| std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()))
}

/// Whether `path` is `dir` (`Some(true)`) or lies inside it (`Some(false)`),
/// both resolved; `None` if it lies elsewhere.
pub fn within(path: &Path, dir: &Path) -> Option<bool> {
    let (path, dir) = (resolved(path), resolved(dir));
    path.starts_with(&dir).then_some(path == dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_the_directory_inside_it_or_elsewhere() {
        let root = std::env::temp_dir().join(format!("weir-paths-{}", std::process::id()));
        let out = root.join("out");
        std::fs::create_dir_all(out.join("sub")).unwrap();
        assert_eq!(within(&out, &out), Some(true));
        assert_eq!(within(&out.join("sub/../"), &out), Some(true));
        assert_eq!(within(&out.join("sub"), &out), Some(false));
        assert_eq!(within(&out.join("not-yet/savepoints"), &out), Some(false));
        assert_eq!(within(&root.join("outside"), &out), None);
        assert_eq!(
            within(&root.join("out-2"), &out),
            None,
            "a prefix of the name is not inside"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
