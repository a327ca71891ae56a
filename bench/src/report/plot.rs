//! The report's plots, drawn with plotters as SVG and PNG from one chart
//! description: lines with a marker per measured point, or grouped bars;
//! linear or logarithmic axes with ticks chosen here (so a log axis reads
//! 1, 10, 100 rather than plotters' linear steps); the legend in a column
//! of its own right of the plot, so it never covers a point.
//!
//! Text needs a TrueType font: plotters' `ab_glyph` renderer draws it from
//! DejaVu Sans as Debian's `fonts-dejavu-core` installs it (part of this
//! project's machines), read once at run time; `WEIR_REPORT_FONT` names
//! another `.ttf`. Nothing is downloaded or linked for fonts.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

/// One axis of a chart.
#[derive(Clone, Debug)]
pub struct Axis {
    /// Its description, with the unit.
    pub label: String,
    /// Logarithmic (values must be > 0).
    pub log: bool,
    /// Ticks at these values with these labels; empty: chosen from the
    /// data.
    pub ticks: Vec<(f64, String)>,
    /// How chosen ticks are labelled.
    pub format: fn(f64) -> String,
}

impl Axis {
    /// A linear axis starting at 0.
    pub fn linear(label: &str, format: fn(f64) -> String) -> Self {
        Axis {
            label: label.to_owned(),
            log: false,
            ticks: Vec::new(),
            format,
        }
    }

    /// A logarithmic axis.
    pub fn log(label: &str, format: fn(f64) -> String) -> Self {
        Axis {
            log: true,
            ..Axis::linear(label, format)
        }
    }

    /// With these ticks instead of chosen ones.
    pub fn with_ticks(mut self, ticks: Vec<(f64, String)>) -> Self {
        self.ticks = ticks;
        self
    }
}

/// A named line of points, or a bar per category.
#[derive(Clone, Debug)]
pub struct Series {
    /// Its legend entry.
    pub name: String,
    /// (x, y) in data units; for bars x is the category's index.
    pub points: Vec<(f64, f64)>,
}

/// How series are drawn.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// Lines through markers.
    Lines,
    /// Grouped bars, one group per category (x = index into this list).
    Bars(Vec<String>),
}

/// A chart to draw.
#[derive(Clone, Debug)]
pub struct Chart {
    /// File stem of `<name>.svg` and `<name>.png`.
    pub name: String,
    /// Title drawn above the plot.
    pub title: String,
    /// The x axis.
    pub x: Axis,
    /// The y axis.
    pub y: Axis,
    /// What is drawn.
    pub series: Vec<Series>,
    /// Lines or bars.
    pub kind: Kind,
}

/// Width and height of every plot, in pixels.
pub const SIZE: (u32, u32) = (1000, 560);
const LEGEND_WIDTH: u32 = 230;
/// Okabe and Ito's palette: told apart with every common colour blindness.
const COLOURS: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
];
const FONT_FAMILY: &str = "sans-serif";

/// Where the plots' font is looked for, in order, after
/// `WEIR_REPORT_FONT`.
const FONT_PATHS: [&str; 4] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// Loads the font the plots' text is drawn with (once per process);
/// returns its path.
pub fn load_font() -> Result<PathBuf, String> {
    static FONT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(p) = std::env::var_os("WEIR_REPORT_FONT") {
            candidates.push(PathBuf::from(p));
        }
        candidates.extend(FONT_PATHS.iter().map(PathBuf::from));
        for path in &candidates {
            let Ok(bytes) = std::fs::read(path) else {
                continue;
            };
            // plotters keeps fonts for the whole process.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, bytes)
                .map_err(|_| format!("{} is not a TrueType font", path.display()))?;
            return Ok(path.clone());
        }
        Err(format!(
            "no font for the plots' text: install Debian's fonts-dejavu-core \
             (apt-get install fonts-dejavu-core) or set WEIR_REPORT_FONT to a .ttf file \
             (looked for {})",
            candidates
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
    .clone()
}

/// An axis as drawn: its range and ticks in plot space (log10 of the
/// value on a log axis).
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Plot-space range.
    pub range: (f64, f64),
    /// Plot-space tick positions and their labels.
    pub ticks: Vec<(f64, String)>,
    log: bool,
}

impl Layout {
    /// The plot-space position of a data value.
    pub fn at(&self, v: f64) -> f64 {
        if self.log {
            v.max(f64::MIN_POSITIVE).log10()
        } else {
            v
        }
    }

    fn label(&self, pos: f64) -> String {
        let span = (self.range.1 - self.range.0).abs().max(1e-12);
        self.ticks
            .iter()
            .find(|(p, _)| (p - pos).abs() < span * 1e-9)
            .map(|(_, l)| l.clone())
            .unwrap_or_default()
    }
}

/// A plot-space axis with exactly the ticks of a [`Layout`] (plotters'
/// own key-point wrapper cannot take a label formatter for `f64`).
struct Ticked {
    range: (f64, f64),
    ticks: Vec<f64>,
}

impl Ticked {
    fn of(l: &Layout) -> Self {
        Ticked {
            range: l.range,
            ticks: l.ticks.iter().map(|t| t.0).collect(),
        }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let (lo, hi) = self.range;
        let share = (value - lo) / (hi - lo).max(f64::MIN_POSITIVE);
        limit.0 + (f64::from(limit.1 - limit.0) * share).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // Bold lines at the ticks, no light ones.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.0..self.range.1
    }
}

/// 1, 2 or 5 times a power of ten, the smallest at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * p)
}

/// Lays out `axis` for data values `values` (bars: start at 0).
pub fn layout(axis: &Axis, values: &[f64]) -> Layout {
    let finite: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && (!axis.log || *v > 0.0))
        .collect();
    let (min, max) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    if !axis.ticks.is_empty() {
        let to = |v: f64| if axis.log { v.log10() } else { v };
        let ticks: Vec<(f64, String)> = axis
            .ticks
            .iter()
            .map(|(v, l)| (to(*v), l.clone()))
            .collect();
        let lo = ticks.iter().map(|t| t.0).fold(f64::INFINITY, f64::min);
        let hi = ticks.iter().map(|t| t.0).fold(f64::NEG_INFINITY, f64::max);
        let pad = ((hi - lo) * 0.06).max(0.1);
        return Layout {
            range: (lo - pad, hi + pad),
            ticks,
            log: axis.log,
        };
    }
    if axis.log {
        let (min, max) = if finite.is_empty() {
            (1.0, 10.0)
        } else {
            (min, max)
        };
        let lo = min.log10().floor();
        let mut hi = max.log10().ceil();
        if hi <= lo {
            hi = lo + 1.0;
        }
        let mut ticks = Vec::new();
        let mut e = lo;
        while e <= hi + 1e-9 {
            let base = 10f64.powf(e);
            ticks.push((e, (axis.format)(base)));
            // Within two decades, 2 and 5 times each power too.
            if hi - lo <= 2.0 && e < hi {
                for m in [2.0, 5.0] {
                    ticks.push(((m * base).log10(), (axis.format)(m * base)));
                }
            }
            e += 1.0;
        }
        let pad = (hi - lo) * 0.03;
        return Layout {
            range: (lo - pad, hi + pad),
            ticks,
            log: true,
        };
    }
    let (min, max) = if finite.is_empty() {
        (0.0, 1.0)
    } else {
        (min.min(0.0), max.max(0.0))
    };
    let max = if max <= min { min + 1.0 } else { max };
    let step = nice_step((max - min) / 5.0);
    let lo = (min / step).floor() * step;
    // Headroom above the largest point.
    let hi = ((max * 1.04) / step).ceil() * step;
    let mut ticks = Vec::new();
    let mut i = 0.0;
    while lo + i * step <= hi + step * 1e-9 {
        let v = lo + i * step;
        ticks.push((v, (axis.format)(v)));
        i += 1.0;
    }
    Layout {
        range: (lo, hi),
        ticks,
        log: false,
    }
}

/// Draws `chart` into `dir` as `<name>.svg` and `<name>.png`; returns the
/// SVG text.
pub fn render(chart: &Chart, dir: &Path) -> Result<String, String> {
    load_font()?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        draw(&root, chart).map_err(|e| format!("plot {}: {e}", chart.name))?;
        root.present()
            .map_err(|e| format!("plot {}: {e}", chart.name))?;
    }
    let svg_path = dir.join(format!("{}.svg", chart.name));
    std::fs::write(&svg_path, &svg)
        .map_err(|e| format!("cannot write {}: {e}", svg_path.display()))?;
    let png_path = dir.join(format!("{}.png", chart.name));
    {
        let root = BitMapBackend::new(&png_path, SIZE).into_drawing_area();
        draw(&root, chart).map_err(|e| format!("plot {}: {e}", chart.name))?;
        root.present()
            .map_err(|e| format!("cannot write {}: {e}", png_path.display()))?;
    }
    Ok(svg)
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let titled = root.titled(&chart.title, (FONT_FAMILY, 24))?;
    let (plot_area, legend_area) = titled.split_horizontally(SIZE.0 - LEGEND_WIDTH);
    let xs: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    let ys: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .collect();
    let x = match &chart.kind {
        Kind::Lines => layout(&chart.x, &xs),
        Kind::Bars(categories) => Layout {
            range: (-0.5, categories.len() as f64 - 0.5),
            ticks: categories
                .iter()
                .enumerate()
                .map(|(i, c)| (i as f64, c.clone()))
                .collect(),
            log: false,
        },
    };
    let y = layout(&chart.y, &ys);
    let mut ctx = ChartBuilder::on(&plot_area)
        .margin_top(10)
        .margin_left(10)
        .margin_right(25)
        .margin_bottom(10)
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d(Ticked::of(&x), Ticked::of(&y))?;
    let x_label = |v: &f64| x.label(*v);
    let y_label = |v: &f64| y.label(*v);
    ctx.configure_mesh()
        .x_desc(chart.x.label.as_str())
        .y_desc(chart.y.label.as_str())
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .label_style((FONT_FAMILY, 16))
        .axis_desc_style((FONT_FAMILY, 18))
        .bold_line_style(RGBColor(225, 225, 225))
        .draw()?;
    let n = chart.series.len().max(1) as f64;
    for (i, s) in chart.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter(|p| p.0.is_finite() && p.1.is_finite() && (!chart.y.log || p.1 > 0.0))
            .map(|&(px, py)| match chart.kind {
                Kind::Lines => (x.at(px), y.at(py)),
                Kind::Bars(_) => (px, py),
            })
            .collect();
        match chart.kind {
            Kind::Lines => {
                ctx.draw_series(LineSeries::new(
                    points.iter().copied(),
                    colour.stroke_width(2),
                ))?;
                ctx.draw_series(points.iter().map(|&p| Circle::new(p, 4, colour.filled())))?;
            }
            Kind::Bars(_) => {
                let width = 0.8 / n;
                ctx.draw_series(points.iter().map(|&(cx, v)| {
                    let left = cx - 0.4 + i as f64 * width;
                    Rectangle::new(
                        [(left, y.range.0.max(0.0)), (left + width, v)],
                        colour.filled(),
                    )
                }))?;
            }
        }
    }
    // The legend, in its own column.
    for (i, s) in chart.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let top = 30 + 28 * i as i32;
        match chart.kind {
            Kind::Lines => {
                legend_area.draw(&PathElement::new(
                    vec![(8, top + 9), (40, top + 9)],
                    colour.stroke_width(2),
                ))?;
                legend_area.draw(&Circle::new((24, top + 9), 4, colour.filled()))?;
            }
            Kind::Bars(_) => {
                legend_area.draw(&Rectangle::new(
                    [(12, top + 2), (36, top + 16)],
                    colour.filled(),
                ))?;
            }
        }
        legend_area.draw(&Text::new(
            s.name.clone(),
            (48, top),
            (FONT_FAMILY, 16).into_font(),
        ))?;
    }
    Ok(())
}

/// `v` with at most three significant digits and k/M/G for thousands,
/// millions, billions: 1000 -> `1k`, 2500000 -> `2.5M`.
pub fn si(v: f64) -> String {
    let (scaled, suffix) = match v.abs() {
        a if a >= 1e9 => (v / 1e9, "G"),
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e3 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    format!("{}{suffix}", plain(scaled))
}

/// `v` with at most three significant digits, no trailing zeros.
pub fn plain(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let digits = (2 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_short() {
        assert_eq!(si(1000.0), "1k");
        assert_eq!(si(2_500_000.0), "2.5M");
        assert_eq!(si(100_000_000.0), "100M");
        assert_eq!(si(12.0), "12");
        assert_eq!(plain(0.25), "0.25");
        assert_eq!(plain(123.456), "123");
        assert_eq!(plain(1.5), "1.5");
        assert_eq!(plain(0.0), "0");
    }

    #[test]
    fn log_axes_tick_at_powers_of_ten() {
        let l = layout(&Axis::log("keys", si), &[1e3, 1e5, 1e8]);
        let labels: Vec<&str> = l.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["1k", "10k", "100k", "1M", "10M", "100M"]);
        assert!(l.range.0 < 3.0 && l.range.1 > 8.0);
        // Within two decades, 2 and 5 times each power as well.
        let l = layout(&Axis::log("us", plain), &[3.0, 40.0]);
        let labels: Vec<&str> = l.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["1", "2", "5", "10", "20", "50", "100"]);
    }

    #[test]
    fn linear_axes_start_at_zero_with_round_steps() {
        let l = layout(&Axis::linear("M records/s", plain), &[37.0, 81.0]);
        let labels: Vec<&str> = l.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["0", "20", "40", "60", "80", "100"]);
        assert_eq!(l.range, (0.0, 100.0));
    }

    #[test]
    fn given_ticks_are_kept_and_labelled() {
        let axis = Axis::log("timeout", plain).with_ticks(vec![
            (0.1, "0".into()),
            (1.0, "1".into()),
            (100.0, "100".into()),
        ]);
        let l = layout(&axis, &[0.1, 100.0]);
        assert_eq!(l.label(-1.0), "0");
        assert_eq!(l.label(2.0), "100");
        assert_eq!(l.label(0.5), "");
        assert!(l.range.0 < -1.0 && l.range.1 > 2.0);
        assert!((l.at(10.0) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn charts_render_as_svg_and_png() {
        let dir = std::env::temp_dir().join(format!("weir-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let chart = Chart {
            name: "test-chart".into(),
            title: "A test chart".into(),
            x: Axis::log("keys", si),
            y: Axis::linear("M records/s", plain),
            series: vec![Series {
                name: "W1".into(),
                points: vec![(1e3, 50.0), (1e6, 20.0)],
            }],
            kind: Kind::Lines,
        };
        let svg = render(&chart, &dir).unwrap();
        assert!(
            svg.contains("<svg") && svg.contains("A test chart") && svg.contains("M records/s")
        );
        let png = std::fs::read(dir.join("test-chart.png")).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
