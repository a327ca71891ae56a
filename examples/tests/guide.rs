//! `docs/GUIDE.md` shows nothing that does not compile: its complete
//! Rust blocks are doctests of this crate (`src/lib.rs` includes the
//! guide), and every other Rust block is an excerpt of an example,
//! marked `<!-- excerpt: PATH -->` and `rust,ignore`, which must appear
//! verbatim in that file. This test checks the excerpts (a config file's
//! too, in a `toml` block).

use std::path::Path;

/// The repository's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the examples crate is in the repository's root")
}

#[test]
fn every_excerpt_in_the_guide_is_verbatim_in_its_example() {
    let guide = std::fs::read_to_string(root().join("docs/GUIDE.md")).expect("read the guide");
    let lines: Vec<&str> = guide.lines().collect();
    let mut excerpts = 0;
    for (i, line) in lines.iter().enumerate() {
        let Some(path) = line
            .strip_prefix("<!-- excerpt: ")
            .and_then(|l| l.strip_suffix(" -->"))
        else {
            assert!(
                !line.starts_with("```rust,ignore") || lines[i - 1].starts_with("<!-- excerpt: "),
                "GUIDE.md line {}: a rust,ignore block that is no marked excerpt (it would \
                 not be compiled)",
                i + 1
            );
            continue;
        };
        assert!(
            matches!(
                lines.get(i + 1).copied(),
                Some("```rust,ignore" | "```toml")
            ),
            "GUIDE.md line {}: an excerpt marker must be followed by a rust,ignore or toml block",
            i + 1
        );
        let body: Vec<&str> = lines[i + 2..]
            .iter()
            .take_while(|l| **l != "```")
            .copied()
            .collect();
        let block = body.join("\n");
        let source = std::fs::read_to_string(root().join(path))
            .unwrap_or_else(|e| panic!("GUIDE.md line {}: cannot read {path}: {e}", i + 1));
        assert!(
            source.contains(&block),
            "GUIDE.md line {}: the excerpt is no longer in {path} as it is; copy it again:\n{block}",
            i + 1
        );
        excerpts += 1;
    }
    assert!(excerpts >= 5, "the guide quotes the examples");
}
