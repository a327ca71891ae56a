//! Where a path lies in the file system, links and `..` resolved: whether
//! a directory weir writes into lies in another it must keep apart (a
//! savepoint's target inside a job's output).

use std::path::{Component, Path, PathBuf};

/// `path` resolved: canonical if it exists, else its deepest existing
/// ancestor canonical and the rest with its `.` and `..` taken lexically,
/// as creating the missing directories would make them (a directory not
/// created yet under a symbolic link lies where the link points).
pub fn resolved(path: &Path) -> PathBuf {
    if let Ok(canonical) = path.canonicalize() {
        return canonical;
    }
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    for ancestor in absolute.ancestors().skip(1) {
        let (Ok(mut at), Ok(rest)) = (ancestor.canonicalize(), absolute.strip_prefix(ancestor))
        else {
            continue;
        };
        for c in rest.components() {
            match c {
                Component::ParentDir => {
                    at.pop();
                }
                Component::Normal(name) => at.push(name),
                Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            }
        }
        return at;
    }
    absolute
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
}
