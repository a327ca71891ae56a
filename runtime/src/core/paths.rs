//! Where a path lies in the file system, links and `..` resolved: whether
//! a directory weir writes into lies in another it must keep apart (a
//! savepoint's target inside a job's output).

use std::path::{Component, Path, PathBuf};

/// `path` resolved as the file system resolves it once its missing
/// directories are created (as `create_dir_all` does): canonical if it
/// exists; else, component by component, every part that exists
/// canonical (links followed) and `.` and `..` of the rest applied as
/// written. A path through a directory that does not exist yet
/// (`missing/../out`) or through a link (`link-to-out/new`) is then where
/// it would land, not the text it was given.
pub fn resolved(path: &Path) -> PathBuf {
    if let Ok(canonical) = path.canonicalize() {
        return canonical;
    }
    let Ok(absolute) = std::path::absolute(path) else {
        return path.to_path_buf();
    };
    let mut out = PathBuf::new();
    for part in absolute.components() {
        match part {
            Component::Prefix(_) | Component::RootDir => out.push(part),
            Component::CurDir => {}
            // `out` is canonical or a directory yet to be made: either
            // way its parent is the one `..` leads to.
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                if let Ok(canonical) = out.canonicalize() {
                    out = canonical;
                }
            }
        }
    }
    out
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
        // A directory not created yet under a link to `out` lies in it.
        let link = root.join("link");
        std::os::unix::fs::symlink(&out, &link).unwrap();
        assert_eq!(within(&link.join("not-yet"), &out), Some(false));
        assert_eq!(within(&link, &out), Some(true));
        // Missing directories' `..` as creating them resolves it.
        assert_eq!(within(&out.join("no/../sub"), &out), Some(false));
        assert_eq!(within(&out.join("no/../../out"), &out), Some(true));
        assert_eq!(within(&out.join("no/../../elsewhere"), &out), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_path_through_a_missing_directory_or_a_link_is_where_it_lands() {
        let root = std::env::temp_dir().join(format!("weir-paths-via-{}", std::process::id()));
        let out = root.join("out");
        std::fs::create_dir_all(&out).unwrap();
        // `missing` does not exist: create_dir_all would make it and
        // step back out of it, into `out`.
        let via_missing = root.join("missing/../out/savepoints");
        assert_eq!(within(&via_missing, &out), Some(false));
        assert_eq!(resolved(&via_missing), resolved(&out).join("savepoints"));
        assert_eq!(within(&root.join("missing/./../out"), &out), Some(true));
        assert_eq!(within(&root.join("missing/../elsewhere/x"), &out), None);
        #[cfg(unix)]
        {
            let link = root.join("link");
            std::os::unix::fs::symlink(&out, &link).unwrap();
            assert_eq!(within(&link.join("new/savepoints"), &out), Some(false));
            assert_eq!(within(&link.join("new/../../out/x"), &out), Some(false));
            assert_eq!(within(&link.join("new/../../elsewhere"), &out), None);
        }
        std::fs::remove_dir_all(&root).unwrap();
    }
}
