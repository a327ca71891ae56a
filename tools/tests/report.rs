//! `weir bench report`: a whole report at the hidden `--tiny` size (every
//! workload, a few seconds each) makes report.md, report.html, runs.json
//! and every plot as SVG and PNG, with every run verified; and its usage
//! errors.

use std::fs;
use std::path::Path;
use std::process::Command;

const WEIR: &str = env!("CARGO_BIN_EXE_weir");

/// The plots and the title each must carry.
const PLOTS: [(&str, &str); 8] = [
    ("w1-workers", "W1 throughput against workers"),
    ("w1-keys", "W1 throughput against keys"),
    ("w1-buffer-timeout", "W1 throughput against buffer timeout"),
    ("w3-latency-200k", "W3 latency at 200k records/s"),
    ("w3-latency-1m", "W3 latency at 1M records/s"),
    ("w4-checkpoint-duration", "W4 checkpoint duration over time"),
    ("w4-in-flight", "W4 bytes in flight"),
    ("w5-restore", "W5 restore time against state size"),
];

const SECTIONS: [&str; 9] = [
    "## W1 keyed count: throughput against workers",
    "## W1 keyed count: throughput against keys",
    "## Throughput against buffer timeout",
    "## W3 latency against buffer timeout",
    "## W1 with aligned checkpoints",
    "## W2 event-time tumbling window",
    "## W4 checkpoints under backpressure",
    "## W5 recovery",
    "## Nexmark",
];

/// The text of every `<text>` element of an SVG, which must parse as XML.
fn svg_texts(path: &Path) -> Vec<String> {
    let text = fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text)
        .unwrap_or_else(|e| panic!("{} is not XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(|t| t.trim().to_owned()))
        .collect()
}

/// Width and height of a PNG, from its IHDR chunk.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |b: &[u8]| u32::from_be_bytes(b.try_into().unwrap());
    (be(&bytes[16..20]), be(&bytes[20..24]))
}

#[test]
fn a_tiny_report_runs_verifies_and_plots_every_workload() {
    let base = fs::canonicalize(std::env::temp_dir()).unwrap();
    let out = base.join(format!("weir-report-{}", std::process::id()));
    let _ = fs::remove_dir_all(&out);
    let run = Command::new(WEIR)
        .args(["bench", "report", "--tiny", "--out"])
        .arg(&out)
        .output()
        .expect("run weir");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "weir bench report --tiny failed ({}):\n{stdout}\n{stderr}",
        run.status
    );
    assert!(stdout.contains("all verified"), "{stdout}");

    let md = fs::read_to_string(out.join("report.md")).unwrap();
    for section in SECTIONS {
        assert!(md.contains(section), "report.md lacks {section:?}");
    }
    for item in [
        "| CPU |",
        "| cores |",
        "| kernel |",
        "| date |",
        "| commit |",
    ] {
        assert!(md.contains(item), "report.md's header lacks {item:?}");
    }
    assert!(
        md.contains("disk (W5's measurement in this run") && md.contains("GB/s (O_DIRECT + fsync)"),
        "the header gives the disk rates W5 measured"
    );
    assert!(!md.contains("FAILED"), "{md}");
    // Every run verified, and every run's row gives its command.
    let runs: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("runs.json")).unwrap()).unwrap();
    let runs = runs.as_array().unwrap();
    assert!(runs.len() >= 25, "{} runs", runs.len());
    for r in runs {
        assert_eq!(r["passed"], true, "{r}");
        let command = r["command"].as_str().unwrap();
        assert!(
            md.contains(&format!("`{command}`")),
            "no row of report.md gives {command}"
        );
    }
    // The W3 sweep checkpointed: each of its runs completed checkpoints,
    // but the control run beside it, which has none.
    let (w3, control): (Vec<_>, Vec<_>) = runs
        .iter()
        .filter(|r| r["report"]["workload"] == "w3")
        .partition(|r| r["report"].get("checkpoints").is_some());
    assert_eq!(w3.len(), 10, "four fixed timeouts and auto at two rates");
    assert_eq!(control.len(), 1, "one run without checkpoints");
    assert!(
        md.contains("0 ms, no checkpoints (control)"),
        "the latency table shows the control run"
    );
    for r in w3 {
        assert!(r["command"]
            .as_str()
            .unwrap()
            .contains("--set execution.checkpointing.interval="));
        assert!(r["report"]["checkpoints"]["completed"].as_u64().unwrap() >= 1);
    }

    let html = fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    for (name, title) in PLOTS {
        let svg = out.join(format!("{name}.svg"));
        let texts = svg_texts(&svg);
        assert!(
            texts.iter().any(|t| t.starts_with(title)),
            "{name}.svg has no title {title:?}: {texts:?}"
        );
        let png = fs::read(out.join(format!("{name}.png"))).unwrap();
        assert_eq!(png_size(&png), (1000, 560), "{name}.png");
        // Axes, text and lines, compressed: far more than a blank image.
        assert!(
            png.len() > 10_000 && png.len() < 1 << 20,
            "{name}.png is {} bytes",
            png.len()
        );
        assert!(
            md.contains(&format!("({name}.png)")),
            "report.md shows {name}"
        );
        assert!(html.contains(title), "report.html inlines {name}");
    }
    // The checkpoint and W5 directories are gone; the logs stay.
    assert!(!out.join("work").exists());
    assert!(out.join("logs").is_dir());
    fs::remove_dir_all(&out).unwrap();
}

#[test]
fn report_options_are_for_report_only() {
    let run = |args: &[&str]| {
        let o = Command::new(WEIR).args(args).output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["bench", "w1", "--quick"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--quick and --out are for report only"),
        "{err}"
    );
    let (code, err) = run(&["bench", "report", "--n", "10"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("report takes only --quick and --out"), "{err}");
}
