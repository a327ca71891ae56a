//! A report as a list of blocks (headings, paragraphs, tables, figures,
//! failures) and its two renderings: Markdown (`report.md`, with the PNG
//! plots beside it) and a self-contained HTML page (`report.html`, with
//! the SVG plots inline).

use std::fmt::Write as _;

/// A table: a header row and rows of cells.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// Column titles.
    pub header: Vec<String>,
    /// The rows, each as many cells as the header.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles and no rows.
    pub fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.header.len(), "{cells:?}");
        self.rows.push(cells);
    }
}

/// One block of a report.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// A heading of level 1 (the title) to 3.
    Heading(u8, String),
    /// A paragraph of plain text; `code spans` in backticks are kept.
    Para(String),
    /// A table.
    Table(Table),
    /// A plot: files `<name>.svg` and `<name>.png`, and its caption.
    Figure {
        /// File stem.
        name: String,
        /// What it shows.
        caption: String,
        /// The SVG text, inlined into the HTML.
        svg: String,
    },
    /// A failed run, shown loudly: what failed, why, and its stderr tail.
    Failure {
        /// The command.
        command: String,
        /// Why it does not count.
        why: String,
        /// The last lines of its stderr.
        stderr_tail: String,
    },
    /// Preformatted text.
    Code(String),
}

/// Escapes a Markdown table cell (`|` and line breaks would end it).
fn md_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Renders `blocks` as Markdown.
pub fn markdown(blocks: &[Block]) -> String {
    let mut s = String::new();
    for b in blocks {
        match b {
            Block::Heading(level, text) => {
                let _ = writeln!(s, "{} {text}\n", "#".repeat(usize::from(*level)));
            }
            Block::Para(text) => {
                let _ = writeln!(s, "{text}\n");
            }
            Block::Table(t) => {
                let _ = writeln!(
                    s,
                    "| {} |",
                    t.header
                        .iter()
                        .map(|h| md_cell(h))
                        .collect::<Vec<_>>()
                        .join(" | ")
                );
                let _ = writeln!(s, "|{}", "---|".repeat(t.header.len()));
                for r in &t.rows {
                    let _ = writeln!(
                        s,
                        "| {} |",
                        r.iter().map(|c| md_cell(c)).collect::<Vec<_>>().join(" | ")
                    );
                }
                s.push('\n');
            }
            Block::Figure { name, caption, .. } => {
                let _ = writeln!(
                    s,
                    "![{caption}]({name}.png)\n\n*{caption}* ([SVG]({name}.svg))\n"
                );
            }
            Block::Failure {
                command,
                why,
                stderr_tail,
            } => {
                let _ = writeln!(
                    s,
                    "**FAILED: `{command}`: {why}.**\n\n```\n{stderr_tail}\n```\n"
                );
            }
            Block::Code(text) => {
                let _ = writeln!(s, "```\n{text}\n```\n");
            }
        }
    }
    s
}

/// Escapes text for HTML.
pub fn html_escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            c => s.push(c),
        }
    }
    s
}

/// Escaped text with Markdown's `code spans` and `**bold**` as HTML.
fn html_inline(text: &str) -> String {
    let mut s = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(s, "<code>{}</code>", html_escape(part));
        } else {
            for (j, p) in part.split("**").enumerate() {
                if j % 2 == 1 {
                    let _ = write!(s, "<strong>{}</strong>", html_escape(p));
                } else {
                    s.push_str(&html_escape(p));
                }
            }
        }
    }
    s
}

const STYLE: &str =
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:1em 0;font-size:0.9em}\
th,td{border:1px solid #bbb;padding:0.25em 0.5em;text-align:left;vertical-align:top}\
th{background:#eee}code{font-size:0.95em}\
.failure{border:3px solid #c00;background:#fee;padding:0.5em 1em;margin:1em 0}\
figure{margin:1.5em 0}figure svg{max-width:100%;height:auto}\
pre{background:#f4f4f4;padding:0.5em;overflow-x:auto}";

/// Renders `blocks` as one HTML page with the plots inline.
pub fn html(title: &str, blocks: &[Block]) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n",
        html_escape(title)
    );
    for b in blocks {
        match b {
            Block::Heading(level, text) => {
                let _ = writeln!(s, "<h{level}>{}</h{level}>", html_inline(text));
            }
            Block::Para(text) => {
                let _ = writeln!(s, "<p>{}</p>", html_inline(text));
            }
            Block::Table(t) => {
                s.push_str("<table><thead><tr>");
                for h in &t.header {
                    let _ = write!(s, "<th>{}</th>", html_inline(h));
                }
                s.push_str("</tr></thead><tbody>\n");
                for r in &t.rows {
                    s.push_str("<tr>");
                    for c in r {
                        let _ = write!(s, "<td>{}</td>", html_inline(c));
                    }
                    s.push_str("</tr>\n");
                }
                s.push_str("</tbody></table>\n");
            }
            Block::Figure { name, caption, svg } => {
                let body = svg
                    .trim_start()
                    .strip_prefix("<?xml")
                    .and_then(|r| r.split_once("?>"))
                    .map_or(svg.as_str(), |(_, rest)| rest);
                let _ = writeln!(
                    s,
                    "<figure>{body}<figcaption>{} (<a href=\"{name}.svg\">SVG</a>, \
                     <a href=\"{name}.png\">PNG</a>)</figcaption></figure>",
                    html_inline(caption)
                );
            }
            Block::Failure {
                command,
                why,
                stderr_tail,
            } => {
                let _ = writeln!(
                    s,
                    "<div class=\"failure\"><strong>FAILED: <code>{}</code>: {}.</strong>\
                     <pre>{}</pre></div>",
                    html_escape(command),
                    html_escape(why),
                    html_escape(stderr_tail)
                );
            }
            Block::Code(text) => {
                let _ = writeln!(s, "<pre>{}</pre>", html_escape(text));
            }
        }
    }
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Block> {
        let mut t = Table::new(&["keys", "command"]);
        t.row(vec!["1000".into(), "`weir bench w1 --k 1000`".into()]);
        t.row(vec!["a|b".into(), "x".into()]);
        vec![
            Block::Heading(2, "W1 <keys>".into()),
            Block::Para("Runs of `weir bench w1`, **all verified**.".into()),
            Block::Table(t),
            Block::Figure {
                name: "w1-keys".into(),
                caption: "Throughput vs keys".into(),
                svg: "<?xml version=\"1.0\"?><svg><text>x</text></svg>".into(),
            },
            Block::Failure {
                command: "weir bench w2".into(),
                why: "it exited with exit status: 1".into(),
                stderr_tail: "error: <boom>".into(),
            },
        ]
    }

    #[test]
    fn markdown_tables_have_a_separator_row_and_escaped_cells() {
        let md = markdown(&sample());
        assert!(md.contains("## W1 <keys>\n"));
        assert!(md.contains(
            "| keys | command |\n|---|---|\n| 1000 | `weir bench w1 --k 1000` |\n| a\\|b | x |\n"
        ));
        assert!(md.contains("![Throughput vs keys](w1-keys.png)"));
        assert!(md.contains("([SVG](w1-keys.svg))"));
        assert!(md.contains("**FAILED: `weir bench w2`: it exited with exit status: 1.**"));
        assert!(md.contains("```\nerror: <boom>\n```"));
    }

    #[test]
    fn html_escapes_text_and_inlines_the_svg() {
        let page = html("weir <report>", &sample());
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.contains("<title>weir &lt;report&gt;</title>"));
        assert!(page.contains("<h2>W1 &lt;keys&gt;</h2>"));
        assert!(page
            .contains("<p>Runs of <code>weir bench w1</code>, <strong>all verified</strong>.</p>"));
        assert!(page.contains("<td><code>weir bench w1 --k 1000</code></td>"));
        // The XML declaration goes: an SVG inside HTML has none.
        assert!(page.contains("<figure><svg><text>x</text></svg><figcaption>"));
        assert!(!page.contains("<?xml"));
        assert!(page.contains("class=\"failure\""));
        assert!(page.contains("<pre>error: &lt;boom&gt;</pre>"));
        assert!(page.trim_end().ends_with("</html>"));
    }
}
